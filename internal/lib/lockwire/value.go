package lockwire

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ValuePrefix returns how the value of token's lease begins: what scripts
// compare against.
//
// A lockctl lock key holds one JSON object whose first member is the token,
// so that scripts compare tokens with a prefix match and never decode JSON:
//
//	{"token":"<32 hex>","fence":7,"owner":"ci@build-3:4242","note":"deploy #81","ci":"https://...","acquired_ms":1767225600000}
//
// note and ci (the CI job's URL) are present only when set; a semaphore
// holder's value (see the package doc) also carries "limit", and a shared
// holder's "mode":"shared". ttl_ms is the TTL the lease was taken with
// (a renewal with ttl 0 extends by it), and holds, present only above 1,
// the hold count of a re-entered lease. renewed_ms is the server's time of
// the last renewal (the acquisition's at first); renew_every_ms, present
// for a holder that renews in the background (lockctl run's watchdog), is
// its renewal period, and pid_start, right after the owner, the start
// time of the owner's process (/proc/PID/stat starttime, clock ticks after
// boot), so that a PID reused by another process is told apart.
//
// Go writes the members after the fence (Members); the acquire scripts
// write the rest (value.lua's newValue: fence, acquired_ms and renewed_ms
// come from the counter and the server's TIME inside the script), and
// every renewal moves renewed_ms (value.lua's withRenewed); listing locks
// needs no second key.
func ValuePrefix(token string) string { return `{"token":"` + token + `"` }

// Owns reports whether the stored value belongs to token: a lockctl
// value with that token, or a foreign plain string lock whose whole value is
// the token (SET key <uuid> NX PX by another client).
func Owns(value, token string) bool {
	return value == token || strings.HasPrefix(value, ValuePrefix(token))
}

// ModeShared marks a shared holder's stored value ("mode":"shared").
const ModeShared = "shared"

// Formats of a stored lock: who wrote it, and so how it reads.
const (
	FormatLockctl  = "lockctl"  // lockctl's JSON value
	FormatString   = "string"   // another client's plain string lock (SET key <token> NX PX)
	FormatRedisson = "redisson" // a Redisson hash lock
)

// Value is a stored lock value as ParseValue reads it.
type Value struct {
	Format     string // FormatLockctl or FormatString
	Token      string // lockctl's token, or the whole value of a foreign lock
	Owner      string // user@host:pid, or the whole value of a foreign lock
	Note, CI   string
	Fence      int64 // 0 when unknown
	Limit      int64 // a semaphore holder's bound
	Holds      int64 // the hold count, at least 1
	LeaseTTL   time.Duration
	AcquiredAt time.Time // zero when unknown
	Shared     bool      // a holder in shared mode
	// RenewedAt is the server's time of the last renewal (the
	// acquisition's until the first); zero when the value records none (a
	// foreign lock).
	RenewedAt time.Time
	// RenewEvery is the holder's renewal period; 0 when it records none
	// (a lease renewed by hand, lockctl lock and renew).
	RenewEvery time.Duration
	// PIDStart is the start time of the owner's process (/proc/PID/stat
	// starttime); 0 when not recorded.
	PIDStart int64
}

type storedValue struct {
	Token      string `json:"token"`
	Fence      int64  `json:"fence"`
	Owner      string `json:"owner"`
	Note       string `json:"note,omitempty"`
	CI         string `json:"ci,omitempty"`
	Limit      int64  `json:"limit,omitempty"`
	AcquiredMS int64  `json:"acquired_ms"`
	Holders    int64  `json:"holders,omitempty"`
	TTLMS      int64  `json:"ttl_ms,omitempty"`
	Holds      int64  `json:"holds,omitempty"`
	Mode       string `json:"mode,omitempty"`
	RenewedMS  int64  `json:"renewed_ms,omitempty"`
	EveryMS    int64  `json:"renew_every_ms,omitempty"`
	PIDStart   int64  `json:"pid_start,omitempty"`
}

// ParseValue decodes the string stored at a lock key (or a semaphore
// slot). A value lockctl did not write is a foreign lock: its whole value is
// both token and owner.
//
// Whose value it is follows the scripts' rule, not JSON's: a value that
// starts {"token":"<token>" is lockctl's and <token> is what renew, release
// and force-release compare, verbatim (JSON escapes and a second "token"
// member do not change it). The other members are read as far as the value
// is JSON.
func ParseValue(value string) Value {
	var v storedValue
	if token, ok := scriptToken(value); ok {
		if !v.parseFlat(value) {
			v = storedValue{}
			_ = json.Unmarshal([]byte(value), &v)
		}
		out := Value{Format: FormatLockctl, Token: token, Fence: v.Fence, Owner: v.Owner, Note: v.Note, CI: v.CI, Limit: v.Limit,
			LeaseTTL: time.Duration(v.TTLMS) * time.Millisecond, Shared: v.Mode == ModeShared, Holds: max(v.Holds, 1)}
		if v.AcquiredMS > 0 {
			out.AcquiredAt = time.UnixMilli(v.AcquiredMS).UTC()
		}
		if v.RenewedMS > 0 {
			out.RenewedAt = time.UnixMilli(v.RenewedMS).UTC()
		}
		if v.EveryMS > 0 {
			out.RenewEvery = time.Duration(v.EveryMS) * time.Millisecond
		}
		out.PIDStart = max(v.PIDStart, 0)
		return out
	}
	return Value{Format: FormatString, Token: value, Owner: value, Holds: 1}
}

// parseFlat decodes the values lockctl writes itself, one flat object of
// known members whose strings have no escapes, without encoding/json's
// reflection (inspect parses one per lock). It reports false, perhaps
// having set some fields, for anything else, which json.Unmarshal then
// decodes: every value it accepts decodes to what json.Unmarshal gives
// (FuzzParseFlatAgreesWithJSON).
func (v *storedValue) parseFlat(s string) bool {
	if len(s) < 2 || s[0] != '{' || s[len(s)-1] != '}' {
		return false
	}
	s = s[1 : len(s)-1]
	for first := true; ; first = false {
		if s == "" {
			return !first
		}
		if !first {
			if s[0] != ',' {
				return false
			}
			s = s[1:]
		}
		name, rest, ok := flatString(s)
		if !ok || rest == "" || rest[0] != ':' {
			return false
		}
		rest = rest[1:]
		var str *string
		var num *int64
		switch name {
		case "token":
			str = &v.Token
		case "owner":
			str = &v.Owner
		case "note":
			str = &v.Note
		case "ci":
			str = &v.CI
		case "mode":
			str = &v.Mode
		case "fence":
			num = &v.Fence
		case "limit":
			num = &v.Limit
		case "acquired_ms":
			num = &v.AcquiredMS
		case "holders":
			num = &v.Holders
		case "ttl_ms":
			num = &v.TTLMS
		case "holds":
			num = &v.Holds
		case "renewed_ms":
			num = &v.RenewedMS
		case "renew_every_ms":
			num = &v.EveryMS
		case "pid_start":
			num = &v.PIDStart
		default:
			return false
		}
		if str != nil {
			if *str, s, ok = flatString(rest); !ok {
				return false
			}
			continue
		}
		i := 0
		if i < len(rest) && rest[i] == '-' {
			i++
		}
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		// JSON forbids leading zeros; ParseInt would accept them.
		digits := strings.TrimPrefix(rest[:i], "-")
		if digits == "" || (len(digits) > 1 && digits[0] == '0') {
			return false
		}
		n, err := strconv.ParseInt(rest[:i], 10, 64)
		if err != nil {
			return false
		}
		*num, s = n, rest[i:]
	}
}

// flatString reads a JSON string at the start of s that needs no decoding:
// printable, valid UTF-8, no escapes.
func flatString(s string) (str, rest string, ok bool) {
	if s == "" || s[0] != '"' {
		return "", "", false
	}
	end := strings.IndexByte(s[1:], '"')
	if end < 0 {
		return "", "", false
	}
	str = s[1 : 1+end]
	for i := 0; i < len(str); i++ {
		if c := str[i]; c < 0x20 || c == '\\' {
			return "", "", false
		}
	}
	if !utf8.ValidString(str) {
		return "", "", false
	}
	return str, s[2+end:], true
}

// scriptToken is the token the scripts see in value: the text between
// {"token":" and the next '"'.
func scriptToken(value string) (string, bool) {
	rest, ok := strings.CutPrefix(value, `{"token":"`)
	i := strings.IndexByte(rest, '"')
	if !ok || i <= 0 {
		return "", false
	}
	return rest[:i], true
}

// Redisson is one hold of a Redisson lock as its hash tells it.
type Redisson struct {
	Field   string // the holding field: what a force-release names
	Owner   string // the thread "<uuid>:<threadId>" (comma-separated when several)
	Mode    string // RedissonRead or RedissonWrite for a read-write lock; "" otherwise
	Count   int64  // its hold count
	Holders int64  // a read-write lock's number of holds; 0 otherwise
}

// ParseRedisson decodes a Redisson-style hash lock (RLock, and RFairLock,
// whose hash is the same): one field per holder ("<uuid>:<threadId>") whose
// value is its hold count. It returns the first field in order, with Owner
// every field. ok is false when the hash does not look like one; a
// read-write lock's hash, with its "mode" field, is ParseRedissonRW's.
func ParseRedisson(fields map[string]string) (r Redisson, ok bool) {
	if len(fields) == 0 {
		return Redisson{}, false
	}
	names := make([]string, 0, len(fields))
	for f, v := range fields {
		if _, ok := holdCount(v); !ok || !redissonThread(f) {
			return Redisson{}, false
		}
		names = append(names, f)
	}
	sort.Strings(names)
	r = Redisson{Owner: strings.Join(names, ","), Field: names[0]}
	r.Count, _ = holdCount(fields[names[0]])
	return r, true
}

// Modes of a Redisson read-write lock (RReadWriteLock), as its hash's "mode"
// field and Holder.RWMode name them.
const (
	RedissonRead  = "read"
	RedissonWrite = "write"
)

// redissonWriteSuffix ends the field of a write hold: Redisson's write lock
// names its thread "<uuid>:<threadId>:write", its read lock "<uuid>:<threadId>".
const redissonWriteSuffix = ":" + RedissonWrite

// ParseRedissonRW decodes a Redisson read-write lock (RReadWriteLock): a
// hash whose "mode" field is "read" or "write" and whose other fields are
// its holds, "<uuid>:<threadId>" for a read hold and
// "<uuid>:<threadId>:write" for a write hold, each valued with its hold
// count. (Each read hold also has a key of its own,
// "{name}:<uuid>:<threadId>:rwlock_timeout:<n>", that keeps the hash alive
// while it lasts: see IsRedissonAux.) It returns one Redisson per hold in
// field order: Mode "read" or "write", Field the field (what a
// force-release would name), Owner the thread "<uuid>:<threadId>", Count
// its hold count and Holders how many holds there are. ok is false when the
// hash is not one.
func ParseRedissonRW(fields map[string]string) (rs []Redisson, ok bool) {
	if m := fields["mode"]; (m != RedissonRead && m != RedissonWrite) || len(fields) < 2 {
		return nil, false
	}
	names := make([]string, 0, len(fields)-1)
	for f, v := range fields {
		if f == "mode" {
			continue
		}
		if _, ok := holdCount(v); !ok || !redissonThread(strings.TrimSuffix(f, redissonWriteSuffix)) {
			return nil, false
		}
		names = append(names, f)
	}
	sort.Strings(names)
	rs = make([]Redisson, len(names))
	for i, f := range names {
		r := Redisson{Field: f, Owner: f, Mode: RedissonRead, Holders: int64(len(names))}
		if t, ok := strings.CutSuffix(f, redissonWriteSuffix); ok {
			r.Owner, r.Mode = t, RedissonWrite
		}
		r.Count, _ = holdCount(fields[f])
		rs[i] = r
	}
	return rs, true
}

// ParseRedissonAny decodes a Redisson lock of either shape (ParseRedisson,
// ParseRedissonRW) into the one hold a refusal names: for a read-write
// lock, its first hold, with Owner every holding thread (comma-separated)
// and Mode the lock's mode.
func ParseRedissonAny(fields map[string]string) (Redisson, bool) {
	if r, ok := ParseRedisson(fields); ok {
		return r, true
	}
	rs, ok := ParseRedissonRW(fields)
	if !ok {
		return Redisson{}, false
	}
	r := rs[0]
	r.Mode = fields["mode"]
	owners := make([]string, len(rs))
	for i, x := range rs {
		owners[i] = x.Owner
	}
	r.Owner = strings.Join(owners, ",")
	return r, true
}

// redissonThread reports whether f names a Redisson thread, "<id>:<threadId>".
func redissonThread(f string) bool {
	i := strings.LastIndexByte(f, ':')
	if i <= 0 || i == len(f)-1 {
		return false
	}
	_, err := strconv.ParseInt(f[i+1:], 10, 64)
	return err == nil
}

// holdCount reads a Redisson hold count: a positive integer.
func holdCount(v string) (int64, bool) {
	n, err := strconv.ParseInt(v, 10, 64)
	return n, err == nil && n >= 1
}

// IsRedissonAux reports whether key is one of the keys Redisson keeps beside
// a lock, which are not locks of their own and expire (or not) as Redisson
// decides: a read hold's "…:<uuid>:<threadId>:rwlock_timeout:<n>" (a string
// "1" with the hold's lease), and a fair lock's queue
// "redisson_lock_queue:{name}" and timeouts "redisson_lock_timeout:{name}",
// which never expire.
func IsRedissonAux(key string) bool {
	if strings.HasPrefix(key, "redisson_lock_queue:") || strings.HasPrefix(key, "redisson_lock_timeout:") {
		return true
	}
	i := strings.LastIndex(key, ":rwlock_timeout:")
	if i < 0 {
		return false
	}
	if _, err := strconv.ParseUint(key[i+len(":rwlock_timeout:"):], 10, 63); err != nil {
		return false
	}
	return redissonThread(key[:i])
}

// EncodeJSONString returns s as a JSON string literal, for the members of
// the stored value that Go writes (owner, note, ci).
func EncodeJSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// SetFence rewrites the fence member of a lockctl value, as value.lua's
// withFence does on the server (Redlock's fence write-back).
func SetFence(v string, f int64) string {
	const m = `"fence":`
	i := strings.Index(v, m)
	if i < 0 {
		return v
	}
	j := i + len(m)
	k := j
	for k < len(v) && v[k] >= '0' && v[k] <= '9' {
		k++
	}
	return v[:j] + strconv.FormatInt(f, 10) + v[k:]
}

// Holding is how a holder keeps its lease, recorded with it for those
// looking at the lock (inspect): its renewal period (0: renewed by hand,
// no period) and the start time of the owner's process (0: unknown).
type Holding struct {
	RenewEvery time.Duration
	PIDStart   int64
}

// Members is the stored value's members after the fence, which Go writes
// and every acquire script splices in (value.lua's newValue), built in one
// allocation: it is on every acquire. ownerJSON is the owner already
// encoded (EncodeJSONString); note and ci are left out when empty, limit
// when 0, and h's members when 0.
func Members(ownerJSON, note, ci string, limit int64, shared bool, ttl time.Duration, h Holding) string {
	var b strings.Builder
	b.Grow(len(ownerJSON) + len(note) + len(ci) + 96)
	b.WriteString(`,"owner":`)
	b.WriteString(ownerJSON)
	var n [20]byte
	if h.PIDStart > 0 {
		// Right after the owner, whose process it names: value.lua's
		// ownerSpan keeps the two together.
		b.WriteString(`,"pid_start":`)
		b.Write(strconv.AppendInt(n[:0], h.PIDStart, 10))
	}
	if note != "" {
		b.WriteString(`,"note":`)
		b.WriteString(EncodeJSONString(note))
	}
	if ci != "" {
		b.WriteString(`,"ci":`)
		b.WriteString(EncodeJSONString(ci))
	}
	if limit > 0 {
		b.WriteString(`,"limit":`)
		b.Write(strconv.AppendInt(n[:0], limit, 10))
	}
	if shared {
		b.WriteString(`,"mode":"` + ModeShared + `"`)
	}
	// The lease's own TTL, for renewals that do not name one (a renewal
	// with ttl 0) and for re-entry.
	b.WriteString(`,"ttl_ms":`)
	b.Write(strconv.AppendInt(n[:0], ttl.Milliseconds(), 10))
	if ms := h.RenewEvery.Milliseconds(); ms > 0 {
		b.WriteString(`,"renew_every_ms":`)
		b.Write(strconv.AppendInt(n[:0], ms, 10))
	}
	return b.String()
}

// ParseValueStrict is ParseValue for a value that must be lockctl's JSON:
// it fails where encoding/json does (a value re-entry just rewrote).
func ParseValueStrict(value string) (Value, error) {
	var v storedValue
	if err := json.Unmarshal([]byte(value), &v); err != nil {
		return Value{}, err
	}
	return ParseValue(value), nil
}
