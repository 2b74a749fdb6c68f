package child

import (
	"os/signal"
	"syscall"
	"time"
)

// DieOf ends this process by sig, as a shell reports a command killed by
// it, rather than by an exit status: a shell stops its script or loop only
// when the command it waited for died of SIGINT (or SIGQUIT), and goes on
// after one that merely exited 130. So timeout(1), env(1) and sudo re-raise
// the signal that ended their command; lockctl does the same once it has
// cleaned up.
//
// group sends sig to this process's whole process group instead of this
// process alone: the terminal's ^C reached only the child's group, which
// lockctl had made the foreground, and not the group lockctl shares with a
// calling shell that runs without job control (dash -c, a script); that
// shell would otherwise never learn of the interrupt.
//
// Core dumps are turned off first (a SIGQUIT would dump lockctl's memory,
// credentials included), as timeout(1) does. DieOf returns only when the
// signal did not end the process (it is ignored, as a background job of a
// non-interactive shell ignores SIGINT); the caller then exits with 128+sig.
func DieOf(sig syscall.Signal, group bool) {
	_ = syscall.Setrlimit(syscall.RLIMIT_CORE, &syscall.Rlimit{})
	signal.Reset(sig)
	if !defaultAction(sig) {
		return
	}
	pid := syscall.Getpid()
	if group {
		pid = 0
	}
	if syscall.Kill(pid, sig) != nil {
		return
	}
	// The kernel ends the process as it queues the signal; this only
	// covers a delivery that is late for a reason of its own.
	time.Sleep(100 * time.Millisecond)
}
