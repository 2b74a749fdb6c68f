package child

import (
	"syscall"
	"unsafe"
)

// defaultAction sets sig's disposition to SIG_DFL in the kernel, unless it
// is ignored (inherited so: a background job of a non-interactive shell
// ignores SIGINT and SIGQUIT, and such a process must neither die of the
// signal nor hand it to its group); it reports whether it did. The Go
// runtime's own handler, which signal.Reset restores, ends the program on
// SIGINT by re-raising it, but answers SIGQUIT with a goroutine dump and
// exit status 2, which is not death by SIGQUIT.
func defaultAction(sig syscall.Signal) bool {
	// struct sigaction: the handler comes first on every architecture;
	// the arrays are larger than any layout needs. All zero is SIG_DFL,
	// no flags, an empty mask.
	var act, old [8]uint64
	if _, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
		0, uintptr(unsafe.Pointer(&old[0])), 8, 0, 0); e != 0 {
		return false
	}
	if old[0] == 1 { // SIG_IGN
		return false
	}
	_, _, e := syscall.RawSyscall6(syscall.SYS_RT_SIGACTION, uintptr(sig),
		uintptr(unsafe.Pointer(&act[0])), 0, 8, 0, 0)
	return e == 0
}
