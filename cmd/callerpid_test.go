package cmd

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// forkedSubshell starts the README's eval form in a real sh: a subshell
// forked for $( ... || ... ) runs a child that stands for lock. It returns
// the outer shell's PID and the subshell's (the child's parent).
func forkedSubshell(t *testing.T) (outer, sub int) {
	t.Helper()
	dir := t.TempDir()
	c := exec.Command("sh", "-c", `echo $$ > outer.tmp && mv outer.tmp outer
v=$(sh -c 'echo $PPID > sub.tmp && mv sub.tmp sub; exec sleep 60' || echo refused)`)
	c.Dir = dir
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Killed on purpose: Wait reports the kill, which is no failure.
		_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
		_ = c.Wait()
	})
	read := func(name string) int {
		deadline := time.Now().Add(30 * time.Second)
		for {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err == nil {
				n, err := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil {
					t.Fatalf("%s: %q", name, b)
				}
				return n
			}
			if time.Now().After(deadline) {
				t.Fatalf("the shell did not write %s", name)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	outer, sub = read("outer"), read("sub")
	if outer == sub {
		t.Fatalf("sh ran the substitution without forking a subshell (both %d)", outer)
	}
	return outer, sub
}

// TestCallerWithoutProc: on a system without /proc (processTable at a
// directory with no proc filesystem) the caller is still the shell the
// subshell was forked from, found with ps, not the short-lived subshell.
func TestCallerWithoutProc(t *testing.T) {
	if _, err := exec.LookPath("ps"); err != nil {
		t.Fatal("no ps: install it with `sudo apt-get install -y procps` (scripts/ensure-tools.sh does)")
	}
	outer, sub := forkedSubshell(t)
	noProc := processTable(t.TempDir())
	if _, ok := noProc.(procfs); ok {
		t.Error("processTable read an empty directory as a proc filesystem")
	}
	if got := callerOf(sub, noProc); got != outer {
		t.Errorf("without /proc: caller %d, want the outer shell %d (the subshell is %d)", got, outer, sub)
	}
	// /proc, where there is one, agrees.
	if _, err := os.Stat("/proc/self/stat"); err == nil {
		if got := callerOf(sub, processTable("/proc")); got != outer {
			t.Errorf("with /proc: caller %d, want the outer shell %d (the subshell is %d)", got, outer, sub)
		}
	}
	// A caller that is no subshell is kept: the outer shell's parent is
	// this test, another program.
	if got := callerOf(outer, noProc); got != outer {
		t.Errorf("without /proc: the outer shell's caller is %d, want itself %d", got, outer)
	}
}
