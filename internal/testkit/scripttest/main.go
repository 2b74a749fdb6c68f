package scripttest

import (
	"maps"
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// Main is the TestMain of a package whose scripts run lockctl: the test
// binary doubles as lockctl (lockctlMain is cmd.Main), so that scripts and
// tests run it as a separate process exactly as a user would.
func Main(m *testing.M, lockctlMain func() int) {
	testscript.Main(m, map[string]func(){
		"lockctl": func() { os.Exit(lockctlMain()) },
	})
}

// Params runs the scripts in dir, each against its own redis-server (see
// Setup), with Cmds and any extra commands. UPDATE_SCRIPTS=1 rewrites
// their golden sections.
func Params(dir string, extra map[string]func(ts *testscript.TestScript, neg bool, args []string)) testscript.Params {
	cmds := maps.Clone(Cmds)
	maps.Copy(cmds, extra)
	return testscript.Params{
		Dir:                 dir,
		Setup:               Setup,
		Cmds:                cmds,
		RequireExplicitExec: true,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") != "",
	}
}
