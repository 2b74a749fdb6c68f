package child_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli/support/child"
	"github.com/lockctl/lockctl/internal/lib/identity"
)

// guardedParent starts the test binary as a process that runs script
// guarded (see TestMain) and waits to be killed; script writes a pid to
// the returned file's path.
func guardedParent(t *testing.T, script string) (parent *exec.Cmd, pid int) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "pid")
	parent = exec.Command(os.Args[0])
	parent.Env = append(os.Environ(), "CHILD_TEST_GUARDED_PARENT="+f)
	if script != "" {
		parent.Env = append(parent.Env, "CHILD_TEST_GUARDED_SCRIPT="+strings.ReplaceAll(script, "$PIDFILE", f))
	}
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = parent.Process.Kill()
		_ = parent.Wait()
	})
	pid = atoiT(t, waitFile(t, f))
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	return parent, pid
}

// proc is what /proc/PID/stat says of a process.
type proc struct{ pid, ppid, pgrp int }

// childrenOf lists the live (not zombie) children of ppid.
func childrenOf(ppid int) []proc {
	var out []proc
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		// state ppid pgrp ...: the fields after the command name.
		f, ok := identity.StatFields("/proc", pid)
		if !ok || len(f) < 3 || f[0] == "Z" {
			continue
		}
		p, _ := strconv.Atoi(f[1])
		g, _ := strconv.Atoi(f[2])
		if p == ppid {
			out = append(out, proc{pid, p, g})
		}
	}
	return out
}

// A guarded command costs one process of lockctl's besides itself: the
// helper, which leads the command's process group (guard and witness in
// one), not a guard and a witness.
func TestOneHelperPerCommand(t *testing.T) {
	parent, pid := guardedParent(t, "")
	var kids []proc
	// The helper was started before the command: both are there once the
	// command wrote its pid.
	for end := time.Now().Add(bound); ; time.Sleep(20 * time.Millisecond) {
		kids = childrenOf(parent.Process.Pid)
		if len(kids) >= 2 || time.Now().After(end) {
			break
		}
	}
	if len(kids) != 2 {
		t.Fatalf("lockctl's children: %+v, want the command (%d) and one helper", kids, pid)
	}
	var cmd, helper proc
	for _, k := range kids {
		if k.pid == pid {
			cmd = k
		} else {
			helper = k
		}
	}
	if cmd.pid == 0 {
		t.Fatalf("the command %d is not among lockctl's children %+v", pid, kids)
	}
	if helper.pgrp != helper.pid || cmd.pgrp != helper.pid {
		t.Fatalf("command %+v, helper %+v: want the command in the group the helper leads", cmd, helper)
	}
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", helper.pid))
	if !strings.Contains(string(b), "read p || exit 0") {
		t.Fatalf("the other child %d is not the helper: %q", helper.pid, b)
	}
}

// The command's first process is gone, a background job of its stays in
// the group: a SIGKILL of lockctl still ends that job (the helper stays
// while it can tell a member of the command's is left).
func TestGuardKillsWhatOutlivesTheCommand(t *testing.T) {
	parent, pid := guardedParent(t, `sleep 60 & echo $! > $PIDFILE`)
	// The command has exited; its job lingers, reparented to lockctl.
	for end := time.Now().Add(bound); ; time.Sleep(20 * time.Millisecond) {
		if len(childrenOf(parent.Process.Pid)) == 2 { // the helper and the job
			break
		}
		if time.Now().After(end) {
			t.Fatalf("lockctl's children: %+v", childrenOf(parent.Process.Pid))
		}
	}
	time.Sleep(100 * time.Millisecond) // past the first look at the group
	if gone(pid) {
		t.Fatalf("the background job %d is not running", pid)
	}
	_ = parent.Process.Kill()
	_ = parent.Wait()
	if !waitGone(pid, 3*time.Second) {
		t.Fatalf("the background job %d outlived lockctl's SIGKILL", pid)
	}
}

// BenchmarkStartWaitGuarded is what `run` pays around a trivial command
// once the lock is held: the helper was started during the acquire (here:
// before the timer), the command starts in its group, and the group is
// found gone.
func BenchmarkStartWaitGuarded(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		h := child.StartHelper()
		child.WaitStarted(h)
		b.StartTimer()
		c, err := child.Start(child.Spec{Argv: []string{"/bin/true"}, Guard: true, Helper: h})
		if err != nil {
			b.Fatal(err)
		}
		if st := c.Wait(); st != (child.Status{}) {
			b.Fatal(st)
		}
	}
}
