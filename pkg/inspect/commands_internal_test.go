package inspect

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"
)

// inspectScriptCommands reads every script of the package, a new one
// included, so that doctor checks (and its hint grants) what each calls.
func TestInspectScriptCommandsCoverEveryScript(t *testing.T) {
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	call := regexp.MustCompile(`redis\.p?call\('([A-Z]+)'`)
	got := inspectScriptCommands()
	checked := map[string]bool{}
	for _, c := range New(nil, nil).Commands() {
		checked[c[0]] = true
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			if !slices.Contains(got, m[1]) {
				t.Errorf("%s calls %s, missing from inspectScriptCommands %v", f, m[1], got)
			}
			if m[1] != "SPUBLISH" && !checked[m[1]] {
				t.Errorf("%s calls %s, which doctor does not check", f, m[1])
			}
		}
	}
}
