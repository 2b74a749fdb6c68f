package limit_test

import (
	"testing"

	"github.com/lockctl/lockctl/internal/lib/scriptcmds"
	"github.com/lockctl/lockctl/pkg/limit"
)

// ScriptCommands reads every script of the package, a new one included:
// doctor's ACL check and hint are made from it.
func TestScriptCommandsCoverEveryScript(t *testing.T) {
	missing, _, err := scriptcmds.Uncovered(".", limit.ScriptCommands())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range missing {
		t.Error(m)
	}
}
