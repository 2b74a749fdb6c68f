package cmd

import "golang.org/x/sys/unix"

// hideSecrets makes this process non-dumpable (PR_SET_DUMPABLE 0): its
// /proc/<pid>/environ, mem and fd entries then belong to root, other
// processes of the same user (CMD among them) can no longer read the
// password in its environment or memory, nor ptrace it, and it leaves no
// core dump. Signals, the guard and CMD are unaffected: a program lockctl
// execs is dumpable again. Root (CAP_SYS_PTRACE) still reads everything.
func hideSecrets() {
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
}
