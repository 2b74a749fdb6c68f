package child

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exitedUnreaped reports whether the process pid, a child of this process,
// has exited, without reaping it (WNOWAIT: os/exec's Wait still collects
// its status). A child that is no longer there (ECHILD) was reaped: it
// exited too.
func exitedUnreaped(pid int) bool {
	var info unix.Siginfo
	err := unix.Waitid(unix.P_PID, pid, &info, unix.WEXITED|unix.WNOHANG|unix.WNOWAIT, nil)
	if errors.Is(err, unix.ECHILD) {
		return true
	}
	// The siginfo stays zeroed when the child has not exited (WNOHANG).
	return err == nil && info.Signo != 0
}
