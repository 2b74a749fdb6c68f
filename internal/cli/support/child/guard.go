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
// the lock. So before the command starts, a guard holds the read end of a
// pipe whose write end only lockctl holds, and knows the group; when the
// pipe closes before lockctl said "done" (lockctl died: the kernel closes
// its descriptors however it ends) the guard kills the group with SIGKILL
// and exits.
//
// The guard is the helper (helper.go), which is the group's leader. This
// file holds the guard of the other shape, in a process group of its own
// and told the group's id once the command has started, for when there is
// no helper: the helper's script where /bin/sh exists, else lockctl's own
// binary again (GuardArg, RunGuard); both speak the helper's protocol.
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

// guardShell is the shell that runs helperScript; "" (or a shell that is
// not there) leaves no helper, and runs lockctl's own binary as the guard.
var guardShell = "/bin/sh"

// startGuard starts a guard that is not yet watching any group.
func startGuard() (*guard, error) {
	path, args := guardShell, []string{"sh", "-c", helperScript}
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
