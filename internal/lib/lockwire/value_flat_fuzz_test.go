package lockwire

import (
	"encoding/json"
	"testing"
)

// parseFlat is only a shortcut: whatever it accepts, encoding/json decodes
// the same way.
func FuzzParseFlatAgreesWithJSON(f *testing.F) {
	for _, s := range []string{
		`{"token":"0123456789abcdef0123456789abcdef","fence":1767225600000123,"owner":"ci@build-3:4242","note":"deploy #81","ci":"https://ci/1","ttl_ms":30000,"acquired_ms":1767225600000}`,
		`{"token":"ab","fence":1,"owner":"o","limit":3,"ttl_ms":5,"acquired_ms":1,"holds":2}`,
		`{"token":"ab","fence":1,"owner":"o@h:1","pid_start":4711,"ttl_ms":600,"renew_every_ms":100,"acquired_ms":1,"renewed_ms":2}`,
		`{"token":"ab","fence":"x"}`, `{"token":"ab","fence":01}`, `{"token":"ab","fence":-0}`, `{"token":"ab","fence":1.5}`,
		`{"token":"ab","fence":99999999999999999999}`, `{"token":"a\"b","fence":1}`, `{"token":"ab","Owner":"x"}`,
		`{"token":"a","token":"b"}`, `{"token":"ab","owner":"x","owner":"y"}`, `{"token":"ab", "fence":1}`,
		`{"token":"ab","owner":"\xff"}`, `{"token":"ab","owner":"日本"}`, `{"token":"ab","holders":2,"x":1}`,
		`{"token":"ab",}`, `{}`, `{"token":"ab"}x`, `{"token":"ab","owner":null}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var fast storedValue
		if !fast.parseFlat(s) {
			return
		}
		var slow storedValue
		if err := json.Unmarshal([]byte(s), &slow); err != nil {
			t.Fatalf("parseFlat accepted %q, which encoding/json rejects: %v", s, err)
		}
		if fast != slow {
			t.Fatalf("%q: parseFlat %+v, encoding/json %+v", s, fast, slow)
		}
	})
}

func TestParseFlatTakesLockctlValues(t *testing.T) {
	for _, s := range []string{
		`{"token":"0123456789abcdef0123456789abcdef","fence":1767225600000123,"owner":"ci@build-3:4242","note":"deploy #81","ttl_ms":30000,"acquired_ms":1767225600000}`,
		`{"token":"ab","fence":7,"owner":"o","limit":3,"ttl_ms":5,"acquired_ms":1,"holds":2}`,
		`{"token":"ab","fence":7,"owner":"o@h:1","pid_start":4711,"ttl_ms":600,"renew_every_ms":100,"acquired_ms":1,"renewed_ms":2,"holds":2}`,
	} {
		var v storedValue
		if !v.parseFlat(s) || v.Fence == 0 || v.Owner == "" || v.AcquiredMS == 0 {
			t.Errorf("parseFlat(%q) = %+v: lockctl's own value not taken", s, v)
		}
	}
}
