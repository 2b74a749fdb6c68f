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
		if v.Holds > 1 {
			h.Reentry = v.Holds
		}
		if v.AcquiredMS > 0 {
			h.AcquiredAt = time.UnixMilli(v.AcquiredMS).UTC()
		}
		return h
	}
	h.Kind = "string"
	h.Token, h.Owner = value, value
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

// ParseRedisson decodes a Redisson-style hash lock: one field per holder
// ("<uuid>:<threadId>") whose value is the reentry count. ok is false when
// the hash does not look like one.
func ParseRedisson(key string, fields map[string]string, ttl time.Duration) (h Holder, ok bool) {
	if len(fields) == 0 {
		return Holder{}, false
	}
	names := make([]string, 0, len(fields))
	for f, v := range fields {
		n, err := strconv.ParseInt(v, 10, 64)
		i := strings.LastIndexByte(f, ':')
		if err != nil || n < 1 || i <= 0 || i == len(f)-1 {
			return Holder{}, false
		}
		if _, err := strconv.ParseInt(f[i+1:], 10, 64); err != nil {
			return Holder{}, false
		}
		names = append(names, f)
	}
	sort.Strings(names)
	h = Holder{Key: key, TTL: ttl, Kind: "redisson", Owner: strings.Join(names, ","), Token: names[0]}
	h.Reentry, _ = strconv.ParseInt(fields[names[0]], 10, 64)
	return h, true
}

// encodeJSONString returns s as a JSON string literal, for scripts that
// splice owner and note into the stored value.
func encodeJSONString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
