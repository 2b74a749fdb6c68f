package child

import (
	"sync"
	"syscall"
	"time"
)

// The witness: the helper (helper.go), a small process of lockctl's in the
// child's process group, reports every Forwarded signal the group receives. It lets lockctl
// tell a signal meant for lockctl alone (`kill PID`, systemd's
// KillMode=mixed, a container runtime signalling PID 1), which it must
// forward, from one that reached the whole group at the same moment
// (systemd's default KillMode=control-group signals every process of the
// unit; `kill -- -PGID` plus lockctl; a terminal's ^C), which it must not
// forward again: a command that takes a second SIGTERM as "force quit"
// would skip its clean-up.
//
// Every way it can fail errs towards forwarding: a helper that could not
// start, is gone (killed with the group) or is slow to report leaves
// lockctl forwarding as it would without one.

// DedupWindow is how long lockctl waits, after receiving a signal, for the
// witness to report that the group received it too; the forward of a
// signal the group did not get is delayed by this much.
const DedupWindow = 200 * time.Millisecond

// witness keeps the helper's reports (helper.go): the signals the group
// received, told apart from those lockctl sent it itself.
type witness struct {
	mu       sync.Mutex
	ready    bool                         // its traps are set: a signal for the group reaches it
	complete bool                         // it has reported all it got up to the command's end
	expected map[syscall.Signal]int       // signals lockctl sent the group, not yet reported
	foreign  map[syscall.Signal]time.Time // reported, sent by someone else, not yet matched
	changed  chan struct{}                // closed at each report
	seen     []syscall.Signal             // every signal reported as someone else's
}

func newWitness() *witness {
	return &witness{expected: map[syscall.Signal]int{}, foreign: map[syscall.Signal]time.Time{}, changed: make(chan struct{})}
}

func (w *witness) setReady() {
	w.mu.Lock()
	w.ready = true
	w.mu.Unlock()
}

func (w *witness) setComplete() {
	w.mu.Lock()
	w.complete = true
	w.mu.Unlock()
}

// report takes one line of the helper's, a signal's name.
func (w *witness) report(name string) {
	s, ok := signalNamed(name)
	if !ok {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.expected[s] > 0 {
		w.expected[s]-- // lockctl's own
	} else {
		w.foreign[s] = time.Now()
		w.seen = append(w.seen, s)
	}
	close(w.changed)
	w.changed = make(chan struct{})
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

// received reports whether the group received s from someone other than
// lockctl while the witness watched; unsure (the helper was not ready, or
// did not confirm that it had reported all it got) counts as yes.
func (w *witness) received(s syscall.Signal) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.ready || !w.complete {
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
