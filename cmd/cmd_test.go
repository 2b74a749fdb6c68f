package cmd_test

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/cmd/ui"
)

var completionFiles = map[string]string{
	"bash":       "lockctl.bash",
	"zsh":        "_lockctl",
	"fish":       "lockctl.fish",
	"powershell": "lockctl.ps1",
}

// TestCompletionsUpToDate fails when completions/ drifts from the command
// tree; `make completions` regenerates the scripts.
func TestCompletionsUpToDate(t *testing.T) {
	for _, shell := range cmd.Shells {
		io, _, out, _ := ui.Test()
		if code := cmd.MainArgs([]string{"completion", shell}, io); code != 0 {
			t.Fatalf("completion %s exited %d", shell, code)
		}
		want, err := os.ReadFile(filepath.Join("..", "completions", completionFiles[shell]))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), want) {
			t.Errorf("completions/%s is stale: run `make completions`", completionFiles[shell])
		}
	}
}

// TestNoDialWithoutNeed: --help, version and completion never connect.
func TestNoDialWithoutNeed(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var accepted atomic.Int32
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			accepted.Add(1)
			_ = c.Close() // a server that hangs up at once: the close is the point
		}
	}()
	t.Setenv("LOCKCTL_URL", "redis://"+l.Addr().String()+"/0")
	for _, args := range [][]string{{"--help"}, {"version"}, {"completion", "zsh"}, {"lock", "--help"}, {"help", "fence"}} {
		io, _, _, _ := ui.Test()
		if code := cmd.MainArgs(args, io); code != 0 {
			t.Errorf("%v exited %d", args, code)
		}
	}
	// The probe itself must be able to see a connection.
	io, _, _, _ := ui.Test()
	cmd.MainArgs([]string{"fence", "peek", "x", "--timeout", "200ms"}, io)
	time.Sleep(50 * time.Millisecond)
	if accepted.Load() == 0 {
		t.Fatal("the probe saw no connection from a command that needs Redis")
	}
	before := accepted.Load()
	for _, args := range [][]string{{"version"}, {"completion", "bash"}} {
		io, _, _, _ := ui.Test()
		cmd.MainArgs(args, io)
	}
	time.Sleep(50 * time.Millisecond)
	if got := accepted.Load(); got != before {
		t.Fatalf("version/completion connected to Redis (%d connections)", got-before)
	}
}

func TestExitCodes(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		err  string
	}{
		{[]string{"lock"}, cmd.ExitUsage, "accepts 1 arg"},
		{[]string{"nope"}, cmd.ExitUsage, "unknown command"},
		{[]string{"lock", "x", "--ttl", "5"}, cmd.ExitUsage, "not a duration"},
		{[]string{"lock", "x", "--url", "redis://127.0.0.1:1/0", "-n"}, cmd.ExitUnavailable, "refused"},
		{[]string{"--color", "sometimes", "version"}, cmd.ExitUsage, "want one of"},
	} {
		io, _, _, errOut := ui.Test()
		if code := cmd.MainArgs(tc.args, io); code != tc.code {
			t.Errorf("%v: exit %d, want %d (%s)", tc.args, code, tc.code, errOut)
		}
		if !strings.Contains(errOut.String(), tc.err) || !strings.HasPrefix(errOut.String(), "lockctl: ") {
			t.Errorf("%v: stderr %q, want %q prefixed lockctl:", tc.args, errOut, tc.err)
		}
	}
}
