package ui

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// WriteError is a failure to write lockctl's own output to stdout: a
// closed stdout, a full disk, a reader that went away. It is lockctl's
// I/O, never the server's. Result marks the output that was the command's
// result (lock's token): its loss is reported even when the reader went
// away, where a listing's reader that went away ends lockctl silently.
type WriteError struct {
	Err    error
	Result bool
}

func (e *WriteError) Error() string { return "cannot write to stdout: " + errText(e.Err) }
func (e *WriteError) Unwrap() error { return e.Err }

// errText is an OS error without the "write /dev/stdout:" that names the
// file the user did not open.
func errText(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// ErrStdoutClosed is stdout that was closed when lockctl started.
var ErrStdoutClosed = fmt.Errorf("stdout was closed when lockctl started: %w", syscall.EBADF)

// closedAtStart reports whether fd, a standard stream, was closed when the
// program started. Go's runtime puts /dev/null, opened read-write, on a
// standard stream it finds closed (runtime.checkfds), so that a later open
// cannot take its number; writes to it then succeed and go nowhere. A
// shell's `>/dev/null` opens it write-only, and stays a place the user
// chose to discard output.
func closedAtStart(fd int) bool {
	fl, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil || fl&unix.O_ACCMODE != unix.O_RDWR {
		return false
	}
	var st, null unix.Stat_t
	if unix.Fstat(fd, &st) != nil || unix.Stat(os.DevNull, &null) != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && st.Rdev == null.Rdev
}
