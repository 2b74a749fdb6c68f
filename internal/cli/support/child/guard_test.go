package child_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli/support/child"
)

// TestMain lets the test binary be lockctl's guard (as lockctl's own entry
// point does) and the parent process of TestGuardKillsTheGroupWhenItsParentDies.
func TestMain(m *testing.M) {
	if len(os.Args) == 2 && os.Args[1] == child.GuardArg {
		os.Exit(child.RunGuard(os.Stdin))
	}
	if f := os.Getenv("CHILD_TEST_GUARDED_PARENT"); f != "" {
		if os.Getenv("CHILD_TEST_GUARD_SELF") != "" {
			child.SetGuardShell("")
		}
		// Start a guarded group that records its pid, then wait to be
		// killed.
		script := "echo $$ > " + f + "; exec sleep 60"
		if s := os.Getenv("CHILD_TEST_GUARDED_SCRIPT"); s != "" {
			script = s // writes f itself
		}
		_, err := child.Start(child.Spec{Script: script, Guard: true})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		select {}
	}
	os.Exit(m.Run())
}

// gone reports whether pid has exited (absent, or a zombie nobody reaped).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] == 'Z'
}

func waitGone(pid int, d time.Duration) bool {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if gone(pid) {
			return true
		}
	}
	return gone(pid)
}

func TestGuardKillsTheGroupWhenItsParentDies(t *testing.T) {
	for _, guard := range []string{"none", "shell", "self"} {
		guarded := guard != "none"
		t.Run(guard, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "pid")
			parent := exec.Command(os.Args[0])
			parent.Env = append(os.Environ(), "CHILD_TEST_GUARDED_PARENT="+f)
			if guard == "self" {
				parent.Env = append(parent.Env, "CHILD_TEST_GUARD_SELF=1")
			}
			if !guarded {
				// The same group without a guard: the parent is a plain
				// shell that starts it in a group of its own and waits.
				parent = exec.Command("sh", "-c", `set -m; sh -c 'echo $$ > "$1"; exec sleep 60' sh "$0" & wait`, f)
			}
			if err := parent.Start(); err != nil {
				t.Fatal(err)
			}
			pid := atoiT(t, waitFile(t, f))
			t.Cleanup(func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
			if gone(pid) {
				t.Fatalf("the group's leader %d is not running", pid)
			}
			_ = parent.Process.Kill()
			_ = parent.Wait()
			died := waitGone(pid, 3*time.Second)
			if guarded && !died {
				t.Fatalf("the group (pid %d) outlived its guarded parent's SIGKILL", pid)
			}
			if !guarded && died {
				t.Fatalf("the unguarded group died with its parent: the check has no teeth")
			}
		})
	}
}

func TestGuardStandsDownAfterDone(t *testing.T) {
	for _, sh := range []string{"/bin/sh", ""} {
		restore := child.SetGuardShell(sh)
		c := start(t, child.Spec{Script: "exit 3", Guard: true})
		if st := waitDone(t, c); st.Code != 3 {
			t.Fatalf("status %v", st)
		}
		restore()
	}
	// No guard of ours is left: each one read "done" and exited.
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left := guardsOf(os.Getpid())
		if len(left) == 0 {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("guards still running: %v", left)
		}
	}
}

// guardsOf lists the live guard processes whose parent is ppid.
func guardsOf(ppid int) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		b, err := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if err != nil {
			continue
		}
		if cmd := string(b); !strings.Contains(cmd, child.GuardArg) && !strings.Contains(cmd, "read p || exit 0") {
			continue
		}
		st, _ := os.ReadFile("/proc/" + d.Name() + "/stat")
		s := string(st)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		fs := strings.Fields(s[i+1:])
		if len(fs) >= 2 && fs[0] != "Z" && fs[1] == fmt.Sprint(ppid) {
			out = append(out, d.Name())
		}
	}
	return out
}

// guardCases runs each guard input through run, against a group of its
// own (a sleep), which only the last input may kill. "1" (init's group)
// goes only to the Go guard: a shell guard that took it would signal every
// process of the user.
func guardCases(t *testing.T, withInit bool, run func(in string)) {
	c := start(t, child.Spec{Argv: []string{"sleep", "60"}})
	ins := []string{
		"",                                 // lockctl died before the command started
		fmt.Sprintf("%d\ndone\n", c.Pid()), // the group ended first
		fmt.Sprintf("%d", c.Pid()),         // a torn write: no group named
		"0\n", "12ab\n",                    // no group
	}
	if withInit {
		ins = append(ins, "1\n")
	}
	ins = append(ins, fmt.Sprintf("%d\n", c.Pid())) // lockctl died while it ran: kill
	for i, in := range ins {
		kill := i == len(ins)-1
		run(in)
		// A kill must show within the generous bound; an input that must
		// not kill gets a short look (the guard has returned by then).
		wait := 200 * time.Millisecond
		if kill {
			wait = bound
		}
		select {
		case <-c.Done():
			if !kill {
				t.Fatalf("input %q killed the group", in)
			}
		case <-time.After(wait):
			if kill {
				t.Fatalf("input %q did not kill the group within %s", in, wait)
			}
		}
	}
}

func TestGuardLoop(t *testing.T) {
	guardCases(t, true, func(in string) { child.GuardLoop(strings.NewReader(in)) })
}

func TestGuardScript(t *testing.T) {
	guardCases(t, false, func(in string) {
		sh := exec.Command("/bin/sh", "-c", child.GuardScript)
		sh.Stdin = strings.NewReader(in)
		if out, err := sh.CombinedOutput(); err != nil {
			t.Fatalf("input %q: %v: %s", in, err, out)
		}
	})
}

func atoiT(t *testing.T, s string) int {
	t.Helper()
	var n int
	if _, err := fmt.Sscan(s, &n); err != nil {
		t.Fatalf("not a pid: %q", s)
	}
	return n
}
