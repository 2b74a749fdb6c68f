package child

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
)

// The guard: a command run under a lease must not outlive lockctl, since
// nobody renews the lease or stops the command once lockctl is gone. A
// lockctl killed with SIGKILL, by the OOM killer or by a crash gets no
// chance to stop the command's group itself, and the group (in a process
// group of its own, so that signals reach all of it) would run on without
// the lock. So before the command starts, lockctl starts a guard: its own
// binary again, in a process group of its own, holding the read
// end of a pipe whose write end only lockctl holds. The guard is a POSIX
// shell running guardScript where /bin/sh exists (a shell starts in a
// fraction of the time lockctl's runtime does, and run's latency counts),
// else lockctl's own binary again (GuardArg); both speak the same protocol. lockctl writes the
// group's id to it once the command has started, and "done" once the group
// is gone. When the pipe closes before "done" (lockctl died: the kernel
// closes its descriptors however it ends) the guard kills the group with
// SIGKILL and exits.
//
// What the guard does not cover: a lockctl that is stopped rather than
// dead (SIGSTOP, a frozen VM) keeps the pipe open; the fence covers that
// case, as docs/safety.md says. A guard killed along with lockctl (the whole
// session or cgroup killed at once) protects nothing, but then the group
// was killed too.

// GuardArg is the first argument with which lockctl runs as a guard; the
// CLI's entry point hands such a run to RunGuard before anything else.
const GuardArg = "__lockctl-guard"

// guard is the parent's end of a running guard.
type guard struct {
	w   *os.File
	cmd *exec.Cmd
}

// guardShell is the shell that runs guardScript; "" (or a shell that is
// not there) runs lockctl's own binary as the guard.
var guardShell = "/bin/sh"

// guardScript is RunGuard in POSIX shell: read the group, then wait for
// "done" or the end of input; kill the group unless "done" came. A group id
// that is not a number above 1 is never signalled (kill -- -1 would signal
// every process the user may).
const guardScript = `trap '' INT TERM HUP QUIT
read p || exit 0
case $p in ''|*[!0-9]*|0|1) exit 0 ;; esac
read d
[ "$d" = done ] && exit 0
kill -s CONT -- "-$p" 2>/dev/null
kill -s KILL -- "-$p" 2>/dev/null
exit 0`

// startGuard starts a guard that is not yet watching any group.
func startGuard() (*guard, error) {
	path, args := guardShell, []string{"sh", "-c", guardScript}
	if _, err := os.Stat(path); path == "" || err != nil {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("child: guard: %w", err)
		}
		// argv[0] "lockctl": a binary that dispatches on its name (a
		// test binary standing in for lockctl) runs lockctl's entry
		// point.
		path, args = exe, []string{"lockctl", GuardArg}
	}
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("child: guard: %w", err)
	}
	// The guard holds its own copy of the read end once started; ours
	// only has to go.
	defer func() { _ = r.Close() }()
	cmd := &exec.Cmd{Path: path, Args: args, Stdin: r,
		Env: []string{"PATH=/usr/bin:/bin"}, Dir: "/", // holds no directory busy
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		_ = w.Close() // no guard to write to; the start error is the one
		return nil, fmt.Errorf("child: guard: %w", err)
	}
	go func() { _ = cmd.Wait() }()
	return &guard{w: w, cmd: cmd}, nil
}

// watch tells the guard which group to kill should lockctl die.
func (g *guard) watch(pgid int) error {
	_, err := fmt.Fprintf(g.w, "%d\n", pgid)
	return err
}

// done stops the guard without it killing anything: the group is gone.
func (g *guard) done() {
	_, _ = io.WriteString(g.w, "done\n")
	_ = g.w.Close()
}

// RunGuard is the guard's program (see GuardArg): it reads a process group
// id and then waits; if its input ends before a "done" line, it kills that
// group. It returns the exit status.
func RunGuard(in io.Reader) int {
	// Only the pipe decides: a hangup or ^C meant for lockctl's session
	// must not remove the protection while lockctl still lives.
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	return guardLoop(in)
}

func guardLoop(in io.Reader) int {
	pgid, err := readGuard(in)
	if err != nil || pgid == 0 {
		return 0
	}
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	return 0
}

// readGuard reads the guard's input: the group id, then "done". It returns
// the group to kill, 0 when there is none (no group started, or "done").
func readGuard(in io.Reader) (int, error) {
	br := bufio.NewReader(in)
	line, err := br.ReadString('\n')
	if err != nil {
		// lockctl died before the command started, or never started it.
		return 0, nil
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil || pgid <= 1 {
		return 0, errors.New("child: guard: bad process group")
	}
	line, _ = br.ReadString('\n')
	if strings.TrimSpace(line) == "done" {
		return 0, nil
	}
	return pgid, nil
}
