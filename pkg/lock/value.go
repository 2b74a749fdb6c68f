package lock

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// A lockctl lock key holds one JSON object whose first member is the token,
// so that scripts compare tokens with a prefix match and never decode JSON:
//
//	{"token":"<32 hex>","fence":7,"owner":"ci@build-3:4242","note":"deploy #81","ci":"https://...","acquired_ms":1767225600000}
//
// note and ci (the CI job's URL) are present only when set; a semaphore
// holder's value (see Semaphores in doc.go) also carries "limit", and a
// shared holder's (see shared.go) "mode":"shared". ttl_ms is
// the TTL the lease was taken with (Renew with ttl 0 extends by it), and
// holds, present only above 1, the hold count of a re-entered lease (see
// reenter.go).
//
// The acquire script writes it (fence and acquired_ms come from INCR and the
// server's TIME inside the script); listing locks needs no second key.
// valuePrefix(token) is what scripts compare against.
func valuePrefix(token string) string { return `{"token":"` + token + `"` }

// ownsValue reports whether the stored value belongs to token: a lockctl
// value with that token, or a foreign plain string lock whose whole value is
// the token (SET key <uuid> NX PX by another client).
func ownsValue(value, token string) bool {
	return value == token || strings.HasPrefix(value, valuePrefix(token))
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
}

// ParseValue decodes the string stored at a lock key. A value lockctl did not
// write is a foreign lock: its whole value is both token and owner. ttl is the
// key's remaining time (-1 for none).
//
// Whose value it is follows the scripts' rule, not JSON's: a value that
// starts {"token":"<token>" is lockctl's and <token> is what renew, release
// and force-release compare, verbatim (JSON escapes and a second "token"
// member do not change it). The other members are read as far as the value
// is JSON.
func ParseValue(key, value string, ttl time.Duration) Holder {
	h := Holder{Key: key, TTL: ttl}
	var v storedValue
	if token, ok := scriptToken(value); ok {
		if !v.parseFlat(value) {
			v = storedValue{}
			_ = json.Unmarshal([]byte(value), &v)
		}
		v.Token = token
		h.Kind = "lockctl"
		h.Token, h.Fence, h.Owner, h.Note, h.CI, h.Limit = v.Token, v.Fence, v.Owner, v.Note, v.CI, v.Limit
		h.LeaseTTL = time.Duration(v.TTLMS) * time.Millisecond
		h.Shared = v.Mode == modeShared
		h.Reentry = max(v.Holds, 1)
		if v.AcquiredMS > 0 {
			h.AcquiredAt = time.UnixMilli(v.AcquiredMS).UTC()
		}
		return h
	}
	h.Kind = "string"
	h.Token, h.Owner, h.Reentry = value, value, 1
	return h
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

// ParseRedisson decodes a Redisson-style hash lock (RLock, and RFairLock,
// whose hash is the same): one field per holder ("<uuid>:<threadId>") whose
// value is its hold count. ok is false when the hash does not look like one;
// a read-write lock's hash, with its "mode" field, is ParseRedissonRW's.
func ParseRedisson(key string, fields map[string]string, ttl time.Duration) (h Holder, ok bool) {
	if len(fields) == 0 {
		return Holder{}, false
	}
	names := make([]string, 0, len(fields))
	for f, v := range fields {
		if _, ok := holdCount(v); !ok || !redissonThread(f) {
			return Holder{}, false
		}
		names = append(names, f)
	}
	sort.Strings(names)
	h = Holder{Key: key, TTL: ttl, Kind: "redisson", Owner: strings.Join(names, ","), Token: names[0]}
	h.Reentry, _ = holdCount(fields[names[0]])
	return h, true
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
// while it lasts: see IsRedissonAux.) It returns one Holder per hold in
// field order: Kind "redisson", RWMode "read" or "write", Token the field
// (what a force-release would name), Owner the thread "<uuid>:<threadId>",
// Reentry its hold count and Holders how many holds there are. ok is false
// when the hash is not one.
func ParseRedissonRW(key string, fields map[string]string, ttl time.Duration) (hs []Holder, ok bool) {
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
	hs = make([]Holder, len(names))
	for i, f := range names {
		h := Holder{Key: key, TTL: ttl, Kind: "redisson", Token: f, Owner: f, RWMode: RedissonRead, Holders: int64(len(names))}
		if t, ok := strings.CutSuffix(f, redissonWriteSuffix); ok {
			h.Owner, h.RWMode = t, RedissonWrite
		}
		h.Reentry, _ = holdCount(fields[f])
		hs[i] = h
	}
	return hs, true
}

// ParseRedissonAny decodes a Redisson lock of either shape (ParseRedisson,
// ParseRedissonRW) into the one Holder a refusal names: for a read-write
// lock, its first hold, with Owner every holding thread (comma-separated)
// and RWMode the lock's mode.
func ParseRedissonAny(key string, fields map[string]string, ttl time.Duration) (Holder, bool) {
	if h, ok := ParseRedisson(key, fields, ttl); ok {
		return h, true
	}
	hs, ok := ParseRedissonRW(key, fields, ttl)
	if !ok {
		return Holder{}, false
	}
	h := hs[0]
	h.RWMode = fields["mode"]
	owners := make([]string, len(hs))
	for i, x := range hs {
		owners[i] = x.Owner
	}
	h.Owner = strings.Join(owners, ",")
	return h, true
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

// encodeJSONString returns s as a JSON string literal, for scripts that
// splice owner and note into the stored value.
func encodeJSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
