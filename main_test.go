package main

import (
	"os"
	"testing"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/internal/testkit/scripttest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary double as the lockctl binary, so scripts run
// it as a separate process exactly as a user would.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"lockctl": func() { os.Exit(cmd.Main()) },
	})
}

// TestScripts runs testdata/script/*.txtar, each against its own redis-server.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		Setup:               scripttest.Setup,
		Cmds:                scripttest.Cmds,
		RequireExplicitExec: true,
		UpdateScripts:       os.Getenv("UPDATE_SCRIPTS") != "",
	})
}
