package main

import (
	"bytes"
	"errors"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/creack/pty"
	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/spf13/cobra"
)

// helpInvocations are the argument lists of every help page of the
// command tree: `PATH --help` for every command (aliases, `help` and
// `completion` included) and `help PATH`.
func helpInvocations(t *testing.T) [][]string {
	t.Helper()
	io, _, _, _ := ui.Test()
	root := cmd.NewRootCmd(cmd.NewFactory(io))
	root.InitDefaultHelpCmd()
	var calls [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		calls = append(calls, append(append([]string{}, path...), "--help"))
		if len(path) > 0 {
			calls = append(calls, append([]string{"help"}, path...))
		}
		for _, a := range c.Aliases {
			alias := append(append([]string{}, path[:len(path)-1]...), a, "--help")
			calls = append(calls, alias)
		}
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() || sub.Name() == "help" {
				walk(sub, append(append([]string{}, path...), sub.Name()))
			}
		}
	}
	walk(root, nil)
	calls = append(calls, []string{"-h"}, []string{"help"})
	return calls
}

// helpEnv is a plain environment: no configuration of the machine's user
// and no colour, whatever the tests run under.
func helpEnv(t *testing.T) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "TERM=xterm", "NO_COLOR=1"}
}

// checkHelpPage fails when a line of page is wider than 80 terminal
// columns or Usage: is not within the first 25 lines.
func checkHelpPage(t *testing.T, where, page string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(page, "\n"), "\n")
	usage := -1
	for i, l := range lines {
		if w := lipgloss.Width(l); w > 80 {
			t.Errorf("%s: line %d is %d columns wide: %q", where, i+1, w, l)
		}
		if usage < 0 && l == "Usage:" {
			usage = i + 1
		}
	}
	switch {
	case usage < 0:
		t.Errorf("%s: no Usage: line in\n%s", where, page)
	case usage > 25:
		t.Errorf("%s: Usage: is line %d, after the first 25", where, usage)
	}
}

// TestHelpFits80Columns: every help page of the real binary fits 80
// columns, piped and on an 80-column terminal (a real pseudo-terminal),
// with Usage: among its first 25 lines.
func TestHelpFits80Columns(t *testing.T) {
	lockctl, err := exec.LookPath("lockctl")
	if err != nil {
		t.Fatalf("lockctl (this test binary) is not on PATH: %v", err)
	}
	calls := helpInvocations(t)
	if len(calls) < 40 {
		t.Fatalf("only %d help pages found: %q", len(calls), calls)
	}
	env := helpEnv(t)
	for _, args := range calls {
		where := "lockctl " + strings.Join(args, " ")

		c := exec.Command(lockctl, args...)
		c.Env = env
		var stderr bytes.Buffer
		c.Stderr = &stderr
		out, err := c.Output()
		if err != nil {
			t.Errorf("%s (piped): %v\n%s", where, err, stderr.String())
			continue
		}
		checkHelpPage(t, where+" (piped)", string(out))

		page, err := runOnPty(lockctl, args, env, 80)
		if err != nil {
			t.Errorf("%s (terminal): %v\n%s", where, err, page)
			continue
		}
		checkHelpPage(t, where+" (80-column terminal)", page)
	}
	t.Logf("%d help pages, piped and on a terminal", len(calls))

	// On a wider terminal help takes the terminal's width.
	page, err := runOnPty(lockctl, []string{"run", "--help"}, env, 120)
	if err != nil {
		t.Fatalf("lockctl run --help (120-column terminal): %v\n%s", err, page)
	}
	widest := 0
	for _, l := range strings.Split(page, "\n") {
		widest = max(widest, lipgloss.Width(l))
	}
	if widest <= 80 || widest > 120 {
		t.Errorf("lockctl run --help on a 120-column terminal: widest line %d columns, want 81..120\n%s", widest, page)
	}
}

// runOnPty runs lockctl with args on a fresh pseudo-terminal of cols
// columns (stdin, stdout and stderr) and returns what it wrote, with the
// terminal's \r\n as \n.
func runOnPty(lockctl string, args, env []string, cols int) (string, error) {
	c := exec.Command(lockctl, args...)
	c.Env = env
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	ptmx, err := pty.StartWithAttrs(c, &pty.Winsize{Rows: 50, Cols: uint16(cols)}, c.SysProcAttr)
	if err != nil {
		return "", err
	}
	defer ptmx.Close()
	var out bytes.Buffer
	read := make(chan struct{})
	go func() {
		// It ends with EIO once the process and its terminal are gone.
		_, _ = io.Copy(&out, ptmx)
		close(read)
	}()
	waited := make(chan error, 1)
	go func() { waited <- c.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-time.After(time.Minute):
		_ = c.Process.Kill()
		werr = errors.Join(errors.New("still running after a minute"), <-waited)
	}
	select {
	case <-read:
	case <-time.After(10 * time.Second):
		return "", errors.Join(werr, errors.New("the terminal stayed open after the process ended"))
	}
	return strings.ReplaceAll(out.String(), "\r\n", "\n"), werr
}
