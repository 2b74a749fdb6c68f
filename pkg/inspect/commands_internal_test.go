package inspect

import (
	"testing"

	"github.com/lockctl/lockctl/internal/lib/scriptcmds"
)

// inspectScriptCommands reads every script of the package, a new one
// included, so that doctor checks (and its hint grants) what each calls.
func TestInspectScriptCommandsCoverEveryScript(t *testing.T) {
	missing, all, err := scriptcmds.Uncovered(".", inspectScriptCommands())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Error(m)
	}
	checked := map[string]bool{}
	for _, c := range New(nil, nil).commands() {
		checked[c[0]] = true
	}
	for _, c := range all {
		if c != "SPUBLISH" && !checked[c] {
			t.Errorf("the scripts call %s, which doctor does not check", c)
		}
	}
}
