package child

import (
	"runtime"
	"syscall"
	"testing"
)

// The helper tells a member of the command's from itself, so that it stays
// to guard a group whose first process has gone while a job of its runs on,
// and goes at once when nothing but itself is left.
func TestHelperTellsOthersInItsGroup(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("I/O classes are Linux's")
	}
	h := StartHelper()
	if !h.ready() {
		t.Fatalf("no helper: %v", h.err)
	}
	defer h.done()
	if !h.marked {
		t.Skip("this process is in the idle I/O class: the helper cannot be told apart")
	}
	pgid := h.cmd.Process.Pid
	if err := h.arm(-1); err != nil {
		t.Fatal(err)
	}
	if h.othersInGroup(pgid) {
		t.Fatal("only the helper in its group: othersInGroup = true")
	}
	c, err := Start(Spec{Argv: []string{"sleep", "60"}, Helper: h})
	if err != nil {
		t.Fatal(err)
	}
	if c.Pid() != pgid {
		t.Fatalf("the command is in group %d, not the helper's %d", c.Pid(), pgid)
	}
	if !h.othersInGroup(pgid) {
		t.Fatal("the command in the helper's group: othersInGroup = false")
	}
	_ = syscall.Kill(c.CommandPid(), syscall.SIGKILL)
	<-c.Done()
}
