package child

import "golang.org/x/sys/unix"

// ioprio_get(2) and ioprio_set(2) arguments (linux/ioprio.h).
const (
	ioprioWhoProcess = 1
	ioprioWhoPgrp    = 2
	ioprioClassShift = 13
	ioprioClassIdle  = 3
)

// markHelper puts pid in the idle I/O class, which tells it apart from the
// command's processes (see othersInGroup) at no cost: the helper does no
// I/O, and its CPU share is untouched. It reports whether it did; not when
// this process is in that class already, since the command would be too.
func markHelper(pid int) bool {
	self, _, e := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoProcess, 0, 0)
	if e != 0 || int(self)>>ioprioClassShift == ioprioClassIdle {
		return false
	}
	_, _, e = unix.Syscall(unix.SYS_IOPRIO_SET, ioprioWhoProcess, uintptr(pid), ioprioClassIdle<<ioprioClassShift)
	return e == 0
}

// unmarkedIn reports whether process group pgid has a member outside the
// idle I/O class: ioprio_get(2) with IOPRIO_WHO_PGRP reports the best
// class of the group's members.
func unmarkedIn(pgid int) bool {
	p, _, e := unix.Syscall(unix.SYS_IOPRIO_GET, ioprioWhoPgrp, uintptr(pgid), 0)
	return e == 0 && int(p)>>ioprioClassShift != ioprioClassIdle
}
