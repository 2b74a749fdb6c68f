package once_test

import (
	"slices"
	"testing"

	"github.com/lockctl/lockctl/internal/lib/scriptcmds"
	"github.com/lockctl/lockctl/pkg/once"
)

// ScriptCommands reads every script of the package, a new one included:
// doctor's ACL check and hint are made from it.
func TestScriptCommandsCoverEveryScript(t *testing.T) {
	missing, _, err := scriptcmds.Uncovered(".", append(once.ScriptCommands(), once.ResolveScriptCommands()...))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Error(m)
	}
}

// Doctor checks no family of its own for `once resolve`: its script calls
// nothing beyond the once scripts' commands, and XADD and XDEL (on the
// audit stream, checked for inspect force-release, whose script withdraws
// its audit record on a refusal too).
func TestResolveNeedsNoMoreThanOnceAndAudit(t *testing.T) {
	for _, c := range once.ResolveScriptCommands() {
		if c != "XADD" && c != "XDEL" && !slices.Contains(once.ScriptCommands(), c) {
			t.Errorf("resolve.lua calls %s, which doctor does not check on once keys", c)
		}
	}
}
