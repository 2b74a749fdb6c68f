package child

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// The witness: a small process of lockctl's in the child's process group,
// which reports every Forwarded signal the group receives. It lets lockctl
// tell a signal meant for lockctl alone (`kill PID`, systemd's
// KillMode=mixed, a container runtime signalling PID 1), which it must
// forward, from one that reached the whole group at the same moment
// (systemd's default KillMode=control-group signals every process of the
// unit; `kill -- -PGID` plus lockctl; a terminal's ^C), which it must not
// forward again: a command that takes a second SIGTERM as "force quit"
// would skip its clean-up.
//
// Every way it can fail errs towards forwarding: a witness that could not
// start, is gone (the group's leader has exited, or it was killed) or is
// slow to report leaves lockctl forwarding as it would without one.

// DedupWindow is how long lockctl waits, after receiving a signal, for the
// witness to report that the group received it too; the forward of a
// signal the group did not get is delayed by this much.
const DedupWindow = 200 * time.Millisecond

type witness struct {
	cmd    *exec.Cmd
	in     *os.File      // the witness's stdin: closing it ends the witness
	exited chan struct{} // the witness has been reaped
	readOK chan struct{} // its reports have all been read

	ready bool // its traps are set: a signal for the group reaches it
	clean bool // it ended at the end of its input, not by a signal

	mu       sync.Mutex
	expected map[syscall.Signal]int       // signals lockctl sent the group, not yet reported
	foreign  map[syscall.Signal]time.Time // reported, sent by someone else, not yet matched
	changed  chan struct{}                // closed at each report
	seen     []syscall.Signal             // every signal reported as someone else's
}

// witnessScript reports each Forwarded signal by name until its input
// ends. A trap cuts a read short with the status of end of input, so the
// trap marks that it ran and the loop reads on.
// The terminal's ^Z must not stop it (the group may be the foreground).
const witnessScript = `t=0
trap '' TSTP TTIN TTOU
for s in HUP INT QUIT TERM USR1 USR2; do trap "t=1; echo SIG$s" $s; done
echo ready
while :; do t=0; read -r _ && continue; [ "$t" = 1 ] || break; done`

// startWitness starts a witness in process group pgid: a POSIX shell (it
// starts in a fraction of the time lockctl's runtime would). An error
// means there is none; the caller goes on without.
func startWitness(pgid int) (*witness, error) {
	if _, err := os.Stat(guardShell); guardShell == "" || err != nil {
		return nil, fmt.Errorf("child: witness: no %s", guardShell)
	}
	// The witness holds its own copies of inR and outW once started: ours
	// only have to go. On an error the pipes go unused, and the error is
	// the one to report.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer func() { _ = inR.Close() }()
	outR, outW, err := os.Pipe()
	if err != nil {
		_ = inW.Close()
		return nil, err
	}
	defer func() { _ = outW.Close() }()
	cmd := &exec.Cmd{Path: guardShell, Args: []string{"sh", "-c", witnessScript}, Stdin: inR, Stdout: outW,
		Env: []string{"PATH=/usr/bin:/bin"}, Dir: "/", // holds no directory busy
		SysProcAttr: &syscall.SysProcAttr{Setpgid: true, Pgid: pgid}}
	if err := cmd.Start(); err != nil {
		_ = inW.Close()
		_ = outR.Close()
		return nil, err
	}
	w := &witness{cmd: cmd, in: inW, expected: map[syscall.Signal]int{},
		foreign: map[syscall.Signal]time.Time{}, changed: make(chan struct{}), exited: make(chan struct{}), readOK: make(chan struct{})}
	go func() {
		err := cmd.Wait()
		w.mu.Lock()
		w.clean = err == nil
		w.mu.Unlock()
		close(w.exited)
	}()
	go w.read(outR)
	return w, nil
}

// read takes the witness's reports, one signal name a line.
func (w *witness) read(r io.ReadCloser) {
	defer close(w.readOK)
	defer func() { _ = r.Close() }() // read to its end or given up on: nothing to report
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if sc.Text() == "ready" {
			w.mu.Lock()
			w.ready = true
			w.mu.Unlock()
			continue
		}
		s, ok := signalNamed(sc.Text())
		if !ok {
			continue
		}
		w.mu.Lock()
		if w.expected[s] > 0 {
			w.expected[s]-- // lockctl's own
		} else {
			w.foreign[s] = time.Now()
			w.seen = append(w.seen, s)
		}
		close(w.changed)
		w.changed = make(chan struct{})
		w.mu.Unlock()
	}
}

// sent records that lockctl itself sent s to the group.
func (w *witness) sent(s syscall.Signal) {
	if !witnessed(s) {
		return
	}
	w.mu.Lock()
	w.expected[s]++
	w.mu.Unlock()
}

// take reports whether the group received s from someone else since
// since, consuming that receipt; changed closes at the next report.
func (w *witness) take(s syscall.Signal, since time.Time) (got bool, changed <-chan struct{}) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if t, ok := w.foreign[s]; ok && !t.Before(since) {
		delete(w.foreign, s)
		return true, nil
	}
	return false, w.changed
}

// stop ends the witness: the group's leader is gone, and the witness must
// not keep the group alive. Closing its input lets it first report a
// signal it has received but not yet told (the terminal's ^C, which
// reached it with the leader); it is killed if it does not end by itself
// within witnessEnd. stop returns once the witness has been reaped and its
// reports read (or after a bound, should that take unusually long), so
// that the group's first check after its leader finds it gone at once
// instead of polling: a `run` whose command leaves nothing behind ends
// without a poll's delay.
func (w *witness) stop() {
	_ = w.in.Close()
	t := time.NewTimer(witnessEnd)
	defer t.Stop()
	select {
	case <-w.exited:
	case <-t.C:
		_ = w.cmd.Process.Kill()
		t.Reset(witnessReap)
		select {
		case <-w.exited:
		case <-t.C:
		}
	}
	r := time.NewTimer(witnessReap)
	defer r.Stop()
	select {
	case <-w.readOK:
	case <-r.C:
	}
}

// witnessEnd is how long the witness has to end by itself at the end of
// its input; witnessReap bounds the wait for it to be reaped once killed.
const (
	witnessEnd  = 500 * time.Millisecond
	witnessReap = time.Second
)

// received reports whether the group received s from someone other than
// lockctl while the witness watched; unsure (the witness was not ready,
// or did not end by itself after reporting all it got) counts as yes.
func (w *witness) received(s syscall.Signal) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ready || !w.clean {
		return true
	}
	for _, r := range w.seen {
		if r == s {
			return true
		}
	}
	return false
}

func witnessed(s syscall.Signal) bool {
	for _, f := range Forwarded {
		if f == s {
			return true
		}
	}
	return false
}

func signalNamed(name string) (syscall.Signal, bool) {
	for _, f := range Forwarded {
		if s := f.(syscall.Signal); SignalName(s) == name {
			return s, true
		}
	}
	return 0, false
}

// Forward passes on to the group a signal that lockctl itself received,
// unless the group received the same signal by itself within DedupWindow
// of it (see witness). It does not wait: the forward, when there is one,
// happens at the latest DedupWindow later.
func (c *Child) Forward(s syscall.Signal) {
	w := c.witness
	if w == nil {
		_ = c.Signal(s)
		return
	}
	received := time.Now()
	go func() {
		deadline := time.NewTimer(DedupWindow)
		defer deadline.Stop()
		for {
			got, changed := w.take(s, received.Add(-DedupWindow))
			if got {
				return // the group has it already
			}
			select {
			case <-changed:
			case <-c.exited:
				// The witness is going; the group may run on.
				_ = c.Signal(s)
				return
			case <-deadline.C:
				_ = c.Signal(s)
				return
			}
		}
	}()
}
