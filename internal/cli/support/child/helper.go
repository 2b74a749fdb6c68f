package child

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"
)

// The helper: one small process per command, which is both its guard and
// its witness (see guard.go and witness.go for why each is needed). It is
// a POSIX shell running helperScript, started as the leader of a new
// process group; the command is then started into that group, so the
// helper receives every signal sent to the group (the witness) and knows
// the group to kill (the guard: it is the group).
//
// StartHelper forks it in the background, so that a caller that starts it
// before acquiring the lock pays for the fork and exec during the acquire's
// round trip instead of after it. Where no shell is found, or the helper
// could not be started, Start falls back to lockctl's own binary as the
// guard (GuardArg), in a group of its own, and to no witness: every signal
// is forwarded.
//
// At the end the helper is ended (see done) once the command's group has
// nothing left in it but the helper; the group is gone once the helper
// has been reaped, which is quick. Telling "nothing but the helper" costs one
// ioprio_get(2) call on Linux: the helper is put in the idle I/O class
// (it does no I/O, and its CPU share is untouched; a lower CPU priority
// was tried and made it slow to die on a loaded machine), and
// IOPRIO_WHO_PGRP reports the best class among the group's members, so
// any other class is a process of the command's. While that holds (a
// background job outlived the command's first process) the helper stays
// and keeps guarding the group. When it cannot tell (lockctl itself in the
// idle class, a member that put itself there, a system without I/O
// classes) the helper goes, and should the group still be there, a guard
// of the other shape (guard.go) takes over for the rest of it.

// helperScript reads the group to kill ("-" for none: a command not
// under a lease), reports each Forwarded signal by name once its traps are
// set ("ready"), answers "sync" with "synced" once it has reported every
// signal it received before the request, ends quietly at "done", and kills
// the group with SIGKILL when its input ends before that (lockctl died: the
// kernel closes its descriptors however it ends). A group id that is not a
// number above 1 is never signalled (kill -- -1 would signal every process
// of the user). A trap cuts a read short with the status of end of input,
// so the trap marks that it ran and the loop reads on. Nothing but its
// input ends it: the terminal's ^Z, a hangup or ^C meant for lockctl's
// session, a reader gone from its output.
const helperScript = `trap '' INT TERM HUP QUIT USR1 USR2 TSTP TTIN TTOU PIPE
read p || exit 0
case $p in -) p= ;; ''|*[!0-9]*|0|1) exit 0 ;; esac
for s in HUP INT QUIT TERM USR1 USR2; do trap "t=1; echo SIG$s" $s; done
echo ready
while :; do
t=0
if read -r l; then
case $l in sync) echo synced ;; done) exit 0 ;; esac
elif [ "$t" = 0 ]; then break
fi
done
[ -n "$p" ] || exit 0
kill -s CONT -- "-$p" 2>/dev/null
kill -s KILL -- "-$p" 2>/dev/null
exit 0`

// Helper is a started (or starting) helper process.
type Helper struct {
	started chan struct{} // the start has been tried: err, cmd and the rest are set
	err     error         // why there is no helper; set before started closes

	cmd    *exec.Cmd
	in     *os.File      // the helper's input
	marked bool          // it can be told from the command's processes (markHelper)
	exited chan struct{} // it has been reaped (or given up on)
	synced chan struct{} // receives each "synced"
	w      *witness      // its reports
}

// StartHelper starts a helper in the background and returns at once.
// Hand it to Start in Spec.Helper, or Close it when no command is run.
func StartHelper() *Helper {
	h := &Helper{started: make(chan struct{})}
	go func() {
		defer close(h.started)
		h.err = h.start()
	}()
	return h
}

// errNoShell is the helper's start error where there is no shell to run it.
var errNoShell = errors.New("child: helper: no shell")

// noHelper is a Helper that is not there.
func noHelper(err error) *Helper {
	h := &Helper{started: make(chan struct{}), err: err}
	close(h.started)
	return h
}

func (h *Helper) start() error {
	if _, err := os.Stat(guardShell); guardShell == "" || err != nil {
		return errNoShell
	}
	// The helper holds its own copies of inR and outW once started: ours
	// only have to go. On an error the pipes go unused, and the error is
	// the one to report.
	inR, inW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer func() { _ = inR.Close() }()
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inW.Close()
		return err
	}
	defer func() { _ = outW.Close() }()
	cmd := &exec.Cmd{Path: guardShell, Args: []string{"sh", "-c", helperScript}, Stdin: inR, Stdout: outW,
		Env: []string{"PATH=/usr/bin:/bin"}, Dir: "/", // holds no directory busy
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true}}
	if err := cmd.Start(); err != nil {
		_ = inW.Close()
		_ = outR.Close()
		return fmt.Errorf("child: helper: %w", err)
	}
	h.cmd, h.in = cmd, inW
	h.exited, h.synced = make(chan struct{}), make(chan struct{}, 1)
	h.w = newWitness()
	h.marked = markHelper(cmd.Process.Pid)
	go func() {
		// An error here is the helper reaped by the group's reaping
		// (groupAlive) first: it is gone all the same.
		_ = cmd.Wait()
		close(h.exited)
	}()
	go h.read(outR)
	return nil
}

// ready waits for the start and reports whether there is a helper.
func (h *Helper) ready() bool {
	<-h.started
	return h.err == nil
}

// Close ends a helper that Start was not given; it kills nothing.
func (h *Helper) Close() {
	if h != nil && h.ready() {
		_ = h.in.Close()
	}
}

// arm sends the helper the group it is to kill should this process die, or
// "-" for none.
func (h *Helper) arm(pgid int) error {
	line := "-\n"
	if pgid > 1 {
		line = strconv.Itoa(pgid) + "\n"
	}
	_, err := io.WriteString(h.in, line)
	return err
}

// read takes the helper's output: "ready", "synced" and the reports.
func (h *Helper) read(r io.ReadCloser) {
	defer func() { _ = r.Close() }()
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		switch line := sc.Text(); line {
		case "ready":
			h.w.setReady()
		case "synced":
			select {
			case h.synced <- struct{}{}:
			default:
			}
		default:
			h.w.report(line)
		}
	}
}

// sync returns once the helper has reported every signal it received
// before the call (or after a bound, should it not answer: then the
// witness is unsure). The command's first process has died of a signal;
// whether the group received it too is known after this.
func (h *Helper) sync() {
	if _, err := io.WriteString(h.in, "sync\n"); err != nil {
		return
	}
	t := time.NewTimer(witnessEnd)
	defer t.Stop()
	select {
	case <-h.synced:
		h.w.setComplete()
	case <-h.exited:
	case <-t.C:
	}
}

// othersInGroup reports whether pgid surely has a member other than the
// helper. false means either none, or none that can be told from the
// helper.
func (h *Helper) othersInGroup(pgid int) bool {
	return h.marked && unmarkedIn(pgid)
}

// done ends the helper without it killing anything, and returns once it
// has been reaped, so that it no longer counts as a member of the group.
// It is killed rather than asked to end: it may still be starting (a
// command as short as `true` ends first), and its shell's start-up would
// otherwise be waited for. "done" goes first, so that a helper that reads
// its input before the kill lands ends quietly all the same.
func (h *Helper) done() {
	_, _ = io.WriteString(h.in, "done\n")
	_ = h.cmd.Process.Kill() // by pidfd: never another process
	_ = h.in.Close()
	t := time.NewTimer(witnessReap)
	defer t.Stop()
	select {
	case <-h.exited:
	case <-t.C:
	}
}

// witnessEnd is how long the helper has to answer a "sync"; witnessReap
// bounds the wait for it to be reaped once killed.
const (
	witnessEnd  = 500 * time.Millisecond
	witnessReap = time.Second
)
