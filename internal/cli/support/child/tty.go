package child

import (
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// foregroundTTY returns stdin's descriptor when it is a terminal whose
// foreground process group is lockctl's own, or -1.
func foregroundTTY(stdin io.Reader) int {
	f, ok := stdin.(*os.File)
	if !ok {
		return -1
	}
	fd := int(f.Fd())
	fg, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || fg != syscall.Getpgrp() {
		return -1
	}
	return fd
}

// takeTerminal makes lockctl's group the terminal's foreground again once
// the child's group is gone. A background group changing the foreground
// gets SIGTTOU unless it ignores it, so it does for the moment.
func takeTerminal(fd int) {
	signal.Ignore(syscall.SIGTTOU)
	defer signal.Reset(syscall.SIGTTOU)
	_ = unix.IoctlSetPointerInt(fd, unix.TIOCSPGRP, syscall.Getpgrp())
}
