package lock_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

func FuzzParseValue(f *testing.F) {
	for _, s := range []string{
		`{"token":"0123456789abcdef0123456789abcdef","fence":7,"owner":"ci@build-3:4242","note":"deploy #81","ci":"https://ci/1","acquired_ms":1767225600000}`,
		`{"token":"ab","fence":1,"owner":"o","limit":3,"acquired_ms":1}`,
		`{"token":"ab","fence":"x"}`, `{"token":"","fence":1}`, `{"token":"ab"`, `{"token":"a\"b","fence":1}`,
		`{"token":"\u0061","fence":1}`, `{"token":"a","token":"b"}`, `{"token":"ab","acquired_ms":-5}`,
		`{"token":"ab","acquired_ms":99999999999999999}`, `{"token":"ab","fence":1e400}`, `{"token":"ab"} trailing`,
		"uuid-of-another-client", "", "\xff\xfe", `{"token":""}`, `{"token":"ab","owner":5,"fence":3}`, `{"token":"ab","owner":"\u001b[31m"}`, `["token"]`, `null`,
	} {
		f.Add(s, int64(5000))
		f.Add(s, int64(-1))
	}
	f.Fuzz(func(t *testing.T, value string, ttlMS int64) {
		ttl := time.Duration(ttlMS) * time.Millisecond
		h := lock.ParseValue("lock:fuzz", value, ttl)
		if h.Key != "lock:fuzz" || h.TTL != ttl {
			t.Fatalf("ParseValue(%q): key %q ttl %v", value, h.Key, h.TTL)
		}
		// The scripts' rule: {"token":" then a token without '"', then '"'.
		rest, scripts := strings.CutPrefix(value, `{"token":"`)
		scripts = scripts && strings.IndexByte(rest, '"') > 0
		if scripts != (h.Kind() == "lockctl") {
			t.Fatalf("ParseValue(%q): kind %q, but the scripts read it as lockctl's: %v", value, h.Kind(), scripts)
		}
		switch h.Kind() {
		case "lockctl":
			// The token shown is the token the scripts compare: a holder
			// released or renewed by it is the holder listed.
			if h.Token == "" || strings.Contains(h.Token, `"`) || !strings.HasPrefix(value, `{"token":"`+h.Token+`"`) {
				t.Fatalf("ParseValue(%q): token %q is not the one the scripts see", value, h.Token)
			}
		case "string":
			if h.Token != value || h.Owner != value || h.Fence != 0 {
				t.Fatalf("ParseValue(%q) = %+v: a foreign value is its own token and owner", value, h)
			}
		default:
			t.Fatalf("ParseValue(%q): kind %q", value, h.Kind())
		}
	})
}

func FuzzParseRedisson(f *testing.F) {
	f.Add("8743c9c0-0795-4907-87fd-6c719a6b4586:1", "1", "", "")
	f.Add("8743c9c0-0795-4907-87fd-6c719a6b4586:1", "3", "8743c9c0-0795-4907-87fd-6c719a6b4586:2", "1")
	f.Add("u:1", "0", "", "")
	f.Add("u:x", "1", "", "")
	f.Add(":1", "1", "", "")
	f.Add("u:", "1", "", "")
	f.Add("u:1", "-1", "", "")
	f.Add("u:1", "99999999999999999999", "", "")
	f.Add("a,b:1", "1", "c:2", "2")
	f.Add("mode", "write", "", "")
	f.Fuzz(func(t *testing.T, f1, v1, f2, v2 string) {
		fields := map[string]string{f1: v1}
		if f2 != "" {
			fields[f2] = v2
		}
		h, ok := lock.ParseRedisson("lock:fuzz", fields, -1)
		if !ok {
			return
		}
		n, err := strconv.ParseInt(fields[h.Token], 10, 64)
		if _, in := fields[h.Token]; !in || err != nil || n < 1 || h.Reentry != n {
			t.Fatalf("ParseRedisson(%q) = %+v: token is not a holding field with its count", fields, h)
		}
		if h.Kind() != "redisson" || h.TTL != -1 {
			t.Fatalf("ParseRedisson(%q) = %+v", fields, h)
		}
		for f := range fields {
			if !strings.Contains(h.Owner, f) {
				t.Fatalf("ParseRedisson(%q): owner %q leaves out %q", fields, h.Owner, f)
			}
		}
	})
}
