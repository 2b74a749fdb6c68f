// Package child runs the command lockctl holds a lock for: in a process
// group of its own, with stdin, stdout and stderr passed through untouched,
// and with "gone" meaning the whole group is gone.
//
// Why the group: a shell script's work is done by its children. Signalling
// only the direct child (as consul lock does) leaves grandchildren running
// after the lock is released. Every signal here goes to the group, and Done
// closes only when no process of the group is left, so a caller that waits
// for Done before releasing never releases while any of them runs.
//
// A process that leaves the group on purpose (setsid, setpgid, a daemon's
// double fork) has left lockctl's care; that is the documented way to start
// something that must outlive the lock. A background job that stays in the
// group (`cmd &` in a script) keeps the lock held until it ends, just as it
// keeps a flock(1) lock held through the inherited descriptor.
package child

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Forwarded are the signals lockctl passes on to the child's group.
var Forwarded = []os.Signal{
	syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP,
	syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2,
}

// Notify starts catching the Forwarded signals on the returned channel,
// until stop is called. Call it before anything that must not be cut short
// by them (acquiring, starting the child): from then on they no longer kill
// lockctl, so the caller decides what each one means.
func Notify() (sigs <-chan os.Signal, stop func()) {
	ch := make(chan os.Signal, 8)
	signal.Notify(ch, Forwarded...)
	return ch, func() { signal.Stop(ch) }
}

// Spec describes the command to run.
type Spec struct {
	// Argv is exec'd directly, no shell: Argv[0] is looked up in PATH
	// unless it contains a slash. Ignored when Script is set.
	Argv []string
	// Script, when not empty, runs as `Shell -c Script`.
	Script string
	// Shell for Script; "" means $SHELL, or /bin/sh when that is unset.
	Shell string
	// Env is added to this process's environment (later entries win).
	Env []string
	// Unset names variables of this process's environment the child must
	// not inherit (secrets, say).
	Unset []string
	// Dir is the working directory; "" is the current one.
	Dir string
	// Stdin, Stdout and Stderr default to this process's own. An *os.File
	// is handed to the child as is (no pipe, no copy), so the child sees
	// the same terminal, file or pipe lockctl was given.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Guard kills the group should this process die while the group
	// runs (see guard.go): for a command run under a lease.
	Guard bool
	// Helper is the command's helper (helper.go), started beforehand so
	// that its start overlaps other work; nil starts one now. Start owns
	// it from the call on, whatever it returns.
	Helper *Helper
}

// Child is a started command and its process group.
type Child struct {
	cmd    *exec.Cmd
	pgid   int
	exited chan struct{} // the direct child has been reaped
	done   chan struct{} // the whole group is gone

	mu     sync.Mutex
	status Status
	gone   bool        // no signal may be sent once set: the pgid may be reused
	killer *time.Timer // pending SIGKILL of a Terminate

	tty     int      // the terminal handed to the child's group, or -1
	guarded bool     // Spec.Guard
	helper  *Helper  // the group's leader; nil once gone, or without one
	guard   *guard   // a guard of the other shape (guard.go), or nil
	witness *witness // the helper's reports; nil without a helper
	polls   int      // times wait slept for the group to go, read after done
}

// pollGroup is how often a group that outlived its leader is checked.
const pollGroup = 20 * time.Millisecond

// Start starts the command in a new process group. Errors are
// *StartError (ErrNotFound, ErrNotExecutable) when the command cannot be
// run, or other errors when the system refused the fork.
func Start(spec Spec) (*Child, error) {
	h := spec.Helper
	if h == nil {
		h = StartHelper()
	}
	argv := spec.Argv
	if spec.Script != "" {
		sh := spec.Shell
		if sh == "" {
			sh = os.Getenv("SHELL")
		}
		if sh == "" {
			sh = "/bin/sh"
		}
		argv = []string{sh, "-c", spec.Script}
	}
	if len(argv) == 0 || argv[0] == "" {
		h.Close()
		return nil, &StartError{Path: "", Err: errors.New("empty command"), kind: ErrNotFound}
	}
	cmd := command(argv[0], argv[1:]...)
	if cmd.Err != nil {
		// The lookup failed: nothing was found to run, or what was found
		// cannot be run.
		h.Close()
		return nil, classify(argv[0], cmd.Path, cmd.Err)
	}
	if len(spec.Env) > 0 || len(spec.Unset) > 0 {
		cmd.Env = append(environWithout(spec.Unset), spec.Env...)
	}
	cmd.Dir = spec.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = spec.Stdin, spec.Stdout, spec.Stderr
	if cmd.Stdin == nil {
		cmd.Stdin = os.Stdin
	}
	if cmd.Stdout == nil {
		cmd.Stdout = os.Stdout
	}
	if cmd.Stderr == nil {
		cmd.Stderr = os.Stderr
	}
	tty := foregroundTTY(cmd.Stdin)
	becomeSubreaper()
	c, err := startIn(cmd, argv[0], h, spec.Guard, tty)
	if err != nil {
		return nil, err
	}
	go c.wait()
	return c, nil
}

// startIn starts cmd in h's process group, armed as the guard when
// guarded, or, without a helper, in a new group of its own under a guard of
// the other shape. On a terminal where lockctl is the foreground job (tty),
// the child's group becomes the foreground instead, as a shell would do:
// otherwise a child that reads the terminal (a confirmation prompt) is
// stopped by SIGTTIN, and ^C would reach lockctl rather than the job.
func startIn(cmd *exec.Cmd, name string, h *Helper, guarded bool, tty int) (*Child, error) {
	c := &Child{cmd: cmd, exited: make(chan struct{}), done: make(chan struct{}), tty: tty, guarded: guarded}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if tty >= 0 {
		cmd.SysProcAttr.Foreground = true
		cmd.SysProcAttr.Ctty = 0 // the child's stdin, which is the terminal
	}
	if h.ready() {
		// Armed before the command starts: from its first instant on,
		// lockctl's death ends it.
		pgid := h.cmd.Process.Pid
		armed := -1
		if guarded {
			armed = pgid
		}
		if h.arm(armed) == nil {
			c.helper, c.witness, c.pgid = h, h.w, pgid
			cmd.SysProcAttr.Pgid = pgid
		} else {
			h.Close() // gone already: the group would be too
		}
	}
	if c.helper == nil && guarded {
		var err error
		if c.guard, err = startGuard(); err != nil {
			return nil, err
		}
	}
	if err := cmd.Start(); err != nil {
		joined := c.helper != nil
		c.stopHelpers()
		if joined && errors.Is(err, syscall.EPERM) {
			// The helper's group was gone before the command could
			// join it (the helper was killed meanwhile): not the
			// command's fault. Without it, then (a Cmd starts once).
			again := &exec.Cmd{Path: cmd.Path, Args: cmd.Args, Env: cmd.Env, Dir: cmd.Dir,
				Stdin: cmd.Stdin, Stdout: cmd.Stdout, Stderr: cmd.Stderr}
			return startIn(again, name, noHelper(err), guarded, tty)
		}
		return nil, classify(name, cmd.Path, err)
	}
	if c.helper == nil {
		c.pgid = cmd.Process.Pid // Setpgid with Pgid 0: the group is named after the leader
	}
	if c.guard != nil {
		if err := c.guard.watch(c.pgid); err != nil {
			// The guard is gone: the command would run unguarded.
			_ = syscall.Kill(-c.pgid, syscall.SIGKILL)
			_ = cmd.Wait()
			c.stopHelpers()
			return nil, err
		}
	}
	return c, nil
}

// stopHelpers ends the helper and the guard without them killing anything.
func (c *Child) stopHelpers() {
	if c.helper != nil {
		c.helper.done()
		c.helper = nil
	}
	if c.guard != nil {
		c.guard.done()
	}
}

// defaultPath is where execvp(3) looks for a command when PATH is not set
// at all (glibc's confstr _CS_PATH); os/exec finds nothing then.
var defaultPath = []string{"/bin", "/usr/bin"}

// command is exec.Command, except that with PATH unset (env -i, some
// minimal images) a name without a slash is looked up in defaultPath as
// execvp and flock(1) do. A PATH set to "" is left to os/exec: nothing is
// found.
func command(name string, args ...string) *exec.Cmd {
	if _, set := os.LookupEnv("PATH"); !set && !strings.Contains(name, "/") {
		for _, dir := range defaultPath {
			if p, err := exec.LookPath(filepath.Join(dir, name)); err == nil {
				cmd := exec.Command(p, args...)
				cmd.Args[0] = name
				return cmd
			}
		}
	}
	return exec.Command(name, args...)
}

func environWithout(names []string) []string {
	env := os.Environ()
	if len(names) == 0 {
		return env
	}
	out := env[:0:0]
next:
	for _, kv := range env {
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}

// Pid is the id of the child's process group (the helper's pid, or the
// direct child's without a helper).
func (c *Child) Pid() int { return c.pgid }

// CommandPid is the direct child's pid.
func (c *Child) CommandPid() int { return c.cmd.Process.Pid }

// Foreground reports whether the group was started as the terminal's
// foreground (lockctl itself was): a ^C then reaches the group and not
// lockctl or the shell that started it.
func (c *Child) Foreground() bool { return c.tty >= 0 }

// GroupReceived reports whether the group as a whole received s from
// someone other than lockctl (the terminal's ^C reaches every process of
// the foreground group), as opposed to s sent to one of its processes
// alone (a command that kills itself). When lockctl cannot tell (no
// witness, or it did not see the run through) it reports true. Valid once
// Exited has closed.
func (c *Child) GroupReceived(s syscall.Signal) bool {
	if c.witness == nil {
		return true
	}
	return c.witness.received(s)
}

// Exited closes when the direct child has exited; members of its group
// may still run.
func (c *Child) Exited() <-chan struct{} { return c.exited }

// Ended reports whether the direct child has exited, also when its status
// has not been collected yet: after this process was stopped (SIGSTOP, a
// stalled VM) it resumes with the child's exit and other news at once, in
// any order, and a decision taken on the news (a lease lost) must know
// whether the child had ended by itself before it.
func (c *Child) Ended() bool {
	select {
	case <-c.exited:
		return true
	default:
	}
	return exitedUnreaped(c.cmd.Process.Pid)
}

// Done closes when the direct child has exited and no process is left in
// its group.
func (c *Child) Done() <-chan struct{} { return c.done }

// Wait blocks until Done and returns the direct child's status.
func (c *Child) Wait() Status {
	<-c.done
	return c.Status()
}

// Status is the direct child's status once Exited has closed; before that
// it is the zero Status.
func (c *Child) Status() Status {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// Signal sends sig to every process of the group. It returns
// os.ErrProcessDone once the group is gone.
func (c *Child) Signal(sig os.Signal) error {
	s, ok := sig.(syscall.Signal)
	if !ok {
		return fmt.Errorf("child: unsupported signal %v", sig)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.signalLocked(s)
}

func (c *Child) signalLocked(s syscall.Signal) error {
	if c.gone {
		return os.ErrProcessDone
	}
	if err := syscall.Kill(-c.pgid, s); err != nil {
		if err == syscall.ESRCH {
			return os.ErrProcessDone
		}
		return fmt.Errorf("child: signal group %d: %w", c.pgid, err)
	}
	if c.witness != nil {
		c.witness.sent(s)
	}
	return nil
}

// Kill sends SIGKILL to the group.
func (c *Child) Kill() error { return c.Signal(syscall.SIGKILL) }

// Terminate sends SIGTERM (and SIGCONT, so that stopped members can act on
// it) to the group, and SIGKILL when the group is still there after grace.
// It does not wait; Done tells when the group is gone. A second Terminate
// never postpones a SIGKILL already scheduled.
func (c *Child) Terminate(grace time.Duration) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if grace <= 0 {
		return c.signalLocked(syscall.SIGKILL)
	}
	err := c.signalLocked(syscall.SIGTERM)
	if err != nil {
		return err
	}
	_ = c.signalLocked(syscall.SIGCONT)
	if c.killer == nil {
		c.killer = time.AfterFunc(grace, func() { _ = c.Kill() })
	}
	return nil
}

func (c *Child) wait() {
	_ = c.cmd.Wait() // the status is in ProcessState whatever the error
	st := statusOf(c.cmd.ProcessState)
	if c.helper != nil && st.Signal != 0 {
		// Whether the group received that signal too is to be known
		// once Exited closes (GroupReceived).
		c.helper.sync()
	}
	c.mu.Lock()
	c.status = st
	c.mu.Unlock()
	close(c.exited)

	// The leader is reaped; wait for the rest of its group. Only now may
	// we reap by group: before, wait4(-pgid) could steal the leader's
	// status from os/exec.
	for c.groupAlive() {
		c.polls++
		time.Sleep(pollGroup)
	}
	if c.tty >= 0 {
		takeTerminal(c.tty)
	}
	c.mu.Lock()
	c.gone = true
	if c.killer != nil {
		c.killer.Stop()
	}
	c.mu.Unlock()
	c.stopHelpers()
	close(c.done)
}

// groupAlive reports whether a process of the command's is left in its
// group. The helper, the group's leader, stays as long as it can tell that
// one is (and the group is guarded); then it is ended and reaped, and what
// the group still holds is the command's. Should that be anything, which
// the helper could not tell, a guard of the other shape takes over.
func (c *Child) groupAlive() bool {
	if h := c.helper; h != nil {
		reapGroup(c.pgid)
		if c.guarded && h.othersInGroup(c.pgid) {
			return true
		}
		h.done()
		c.helper = nil
	}
	if !groupAlive(c.pgid) {
		return false
	}
	if c.guarded && c.guard == nil {
		if g, err := startGuard(); err == nil {
			if g.watch(c.pgid) == nil {
				c.guard = g
			} else {
				g.done()
			}
		}
	}
	return true
}

// groupAlive reaps the group's zombies that are ours to reap (orphans
// handed to us as subreaper) and reports whether any process is left.
// A zombie still counts as a group member for kill(2), so without the
// reaping a dead orphan would keep the group "alive" whenever init does not
// reap promptly (lockctl as PID 1 in a container, for one).
func groupAlive(pgid int) bool {
	reapGroup(pgid)
	err := syscall.Kill(-pgid, 0)
	// EPERM: a member we may not signal (setuid) is still a member.
	return err == nil || err == syscall.EPERM
}

// reapGroup reaps the group's zombies that are ours to reap.
func reapGroup(pgid int) {
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-pgid, &ws, syscall.WNOHANG, nil)
		if err != nil || pid <= 0 {
			return
		}
	}
}

// Status is how the direct child ended.
type Status struct {
	Code   int            // exit code; -1 when killed by a signal
	Signal syscall.Signal // the signal that killed it, or 0
	Core   bool           // it dumped core
}

func (s Status) String() string {
	if s.Signal != 0 {
		return "killed by " + SignalName(s.Signal)
	}
	return fmt.Sprintf("exit status %d", s.Code)
}

func statusOf(ps *os.ProcessState) Status {
	if ps == nil {
		return Status{Code: -1}
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return Status{Code: -1, Signal: ws.Signal(), Core: ws.CoreDump()}
	}
	return Status{Code: ps.ExitCode()}
}

// SignalName is the conventional name of s (SIGTERM), or its description.
func SignalName(s syscall.Signal) string {
	switch s {
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case syscall.SIGKILL:
		return "SIGKILL"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGUSR1:
		return "SIGUSR1"
	case syscall.SIGUSR2:
		return "SIGUSR2"
	case syscall.SIGABRT:
		return "SIGABRT"
	case syscall.SIGSEGV:
		return "SIGSEGV"
	case syscall.SIGPIPE:
		return "SIGPIPE"
	}
	return fmt.Sprintf("signal %d", int(s))
}

// ErrNotFound and ErrNotExecutable classify a *StartError (the shell's 127
// and 126, which lockctl's exit codes follow).
var (
	ErrNotFound      = errors.New("child: command not found")
	ErrNotExecutable = errors.New("child: command not executable")
)

// StartError is the error of a command that could not be run at all.
type StartError struct {
	Path string
	Err  error // the underlying cause
	kind error
}

func (e *StartError) Error() string {
	if e.kind == ErrNotFound {
		return fmt.Sprintf("%s: command not found", e.Path)
	}
	return fmt.Sprintf("%s: cannot execute: %v", e.Path, e.Err)
}

// Is reports whether target is the error's class, ErrNotFound or
// ErrNotExecutable.
func (e *StartError) Is(target error) bool { return target == e.kind }

func (e *StartError) Unwrap() error { return e.Err }

// classify maps lookup and exec failures the way shells do. ENOENT from
// execve on a file that exists means its #! interpreter is missing: bash
// calls that "bad interpreter" and exits 126, not 127.
func classify(name, resolved string, err error) error {
	missing := errors.Is(err, exec.ErrNotFound)
	if !missing && errors.Is(err, fs.ErrNotExist) {
		_, statErr := os.Stat(resolved)
		missing = statErr != nil
	}
	switch {
	case missing:
		return &StartError{Path: name, Err: err, kind: ErrNotFound}
	case errors.Is(err, fs.ErrNotExist),
		errors.Is(err, fs.ErrPermission),
		errors.Is(err, syscall.EISDIR),
		errors.Is(err, syscall.ENOEXEC),
		errors.Is(err, syscall.ENOTDIR),
		errors.Is(err, syscall.ETXTBSY),
		errors.Is(err, syscall.ELOOP),
		errors.Is(err, syscall.E2BIG):
		return &StartError{Path: name, Err: err, kind: ErrNotExecutable}
	}
	return fmt.Errorf("child: start %s: %w", name, err)
}
