package scripttest

import (
	"encoding/json"
	"regexp"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
)

var (
	logTimeRE = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	logLevels = map[string]bool{"debug": true, "info": true, "warn": true, "error": true}
)

// jsonlog [-allow REGEXP] stderr|stdout|FILE: every line of the last
// command's stderr (or stdout, or FILE) is one JSON object with a time
// (RFC 3339, milliseconds, UTC), a level (debug, info, warn, error) and a
// non-empty msg; a hint is an array of strings and an exit a number. Lines
// matching -allow (another program's output) are left alone; at least one
// line must be JSON.
func cmdJSONLog(ts *testscript.TestScript, neg bool, args []string) {
	var allow *regexp.Regexp
	if len(args) == 3 && args[0] == "-allow" {
		allow = regexp.MustCompile(args[1])
		args = args[2:]
	}
	if neg || len(args) != 1 {
		ts.Fatalf("usage: jsonlog [-allow REGEXP] stderr|stdout|FILE")
	}
	var text string
	switch args[0] {
	case "stderr":
		text = ts.ReadFile("stderr")
	case "stdout":
		text = ts.ReadFile("stdout")
	default:
		text = ts.ReadFile(args[0])
	}
	n := 0
	for i, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if allow != nil && allow.MatchString(line) {
			continue
		}
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			ts.Fatalf("line %d is not a JSON object (%v): %q", i+1, err, line)
		}
		n++
		if t, _ := rec["time"].(string); !logTimeRE.MatchString(t) {
			ts.Fatalf("line %d: time %v is not RFC 3339 with milliseconds in UTC: %s", i+1, rec["time"], line)
		}
		if l, _ := rec["level"].(string); !logLevels[l] {
			ts.Fatalf("line %d: level %v: %s", i+1, rec["level"], line)
		}
		if m, _ := rec["msg"].(string); m == "" {
			ts.Fatalf("line %d: no msg: %s", i+1, line)
		}
		if h, ok := rec["hint"]; ok {
			hs, ok := h.([]any)
			if !ok || len(hs) == 0 {
				ts.Fatalf("line %d: hint is not a non-empty array: %s", i+1, line)
			}
			for _, x := range hs {
				if _, ok := x.(string); !ok {
					ts.Fatalf("line %d: hint holds a non-string: %s", i+1, line)
				}
			}
		}
		if e, ok := rec["exit"]; ok {
			if _, ok := e.(float64); !ok {
				ts.Fatalf("line %d: exit is not a number: %s", i+1, line)
			}
		}
	}
	if n == 0 {
		ts.Fatalf("no JSON line in %s", args[0])
	}
}
