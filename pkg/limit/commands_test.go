package limit_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/lockctl/lockctl/pkg/limit"
)

// ScriptCommands reads every script of the package, a new one included:
// doctor's ACL check and hint are made from it.
func TestScriptCommandsCoverEveryScript(t *testing.T) {
	files, err := filepath.Glob("*.lua")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	call := regexp.MustCompile(`redis\.p?call\('([A-Z]+)'`)
	got := limit.ScriptCommands()
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range call.FindAllStringSubmatch(string(src), -1) {
			if !slices.Contains(got, m[1]) {
				t.Errorf("%s calls %s, missing from ScriptCommands %v", f, m[1], got)
			}
		}
	}
}
