package main

import (
	"testing"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/internal/testkit/scripttest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary double as the lockctl binary, so scripts run
// it as a separate process exactly as a user would.
func TestMain(m *testing.M) { scripttest.Main(m, cmd.Main) }

// TestScripts runs testdata/script/*.txtar, each against its own redis-server.
func TestScripts(t *testing.T) {
	testscript.Run(t, scripttest.Params("testdata/script", nil))
}
