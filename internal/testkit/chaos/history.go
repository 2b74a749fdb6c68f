// Package chaos is lockctl's fault-injection suite: real holders (lockctl
// run processes and pkg/lock clients) against real redis-server processes
// while faults are injected, every operation recorded, and both the lock
// history (with porcupine) and the protected resource checked.
//
// The tests live in this package; `go test ./internal/testkit/chaos` runs the short
// tier, LOCKCTL_CHAOS=full the full one, and LOCKCTL_CHAOS_REPORT=FILE writes
// the figures as Markdown (RELIABILITY.md).
package chaos

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Kind is what a recorded operation did to the lock.
type Kind int

const (
	// Acquire is one attempt to take the lock.
	Acquire Kind = iota
	// Release is a voluntary release (compare-and-delete, or DEL for the
	// unprotected variants). Its interval starts at the holder's last act
	// under the lease.
	Release
	// Lost is a holder giving the lease up because it counts as lost; its
	// interval runs from the holder's last act under the lease to the moment
	// it stopped believing it held the lock.
	Lost
)

func (k Kind) String() string { return [...]string{"acquire", "release", "lost"}[k] }

// Result is an operation's outcome.
type Result int

// The outcomes an operation can have.
const (
	OK      Result = iota
	Busy           // held by someone else
	Fail           // refused by a definite error; nothing changed
	Unknown        // timed out or unreachable: it may have taken effect
)

func (r Result) String() string { return [...]string{"ok", "busy", "fail", "unknown"}[r] }

// Op is one recorded operation on the lock, with monotonic times since the
// start of the run.
type Op struct {
	Lock         string // the lock's name: histories of different locks are checked apart
	Holder       int
	Kind         Kind
	Result       Result
	Call, Return time.Duration
	// Ghost is how long after Return a lease this operation may have left
	// on the server outlives the holder's belief in it (the TTL for a lost
	// lease or an unknown acquire): other clients may find the lock busy
	// until then.
	Ghost time.Duration
	Fence int64
}

// Recorder collects operations from every holder of a run.
type Recorder struct {
	base time.Time
	mu   sync.Mutex
	ops  []Op
}

// NewRecorder starts the run's clock.
func NewRecorder() *Recorder { return &Recorder{base: time.Now()} }

// Now is the monotonic time since the run started.
func (r *Recorder) Now() time.Duration { return time.Since(r.base) }

// Add records one operation.
func (r *Recorder) Add(op Op) {
	r.mu.Lock()
	r.ops = append(r.ops, op)
	r.mu.Unlock()
}

// Ops returns a copy of the history, in call order.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := append([]Op(nil), r.ops...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

// Count returns how many operations of kind ended with each result.
func (r *Recorder) Count(kind Kind) map[Result]int {
	m := map[Result]int{}
	for _, op := range r.Ops() {
		if op.Kind == kind {
			m[op.Result]++
		}
	}
	return m
}

// lockState is the model's state: who holds the lock, and until when a
// lease nobody believes in any more may still sit on the server.
type lockState struct {
	holder int // -1 when free
	ghost  time.Duration
}

// LeaseModel is a mutex whose leases expire. A successful acquire needs a
// free lock: a holder keeps the lock, in the model, until its Release or
// Lost operation, so a grant to anyone else in between is illegal. That is
// the property a lease lock must give its users: never two holders that
// both believe they hold it. A busy answer is legal while someone holds the
// lock or while a lease that was given up (lost, or an acquire whose reply
// never came) may still live on the server, so a correct lock that errs on
// the side of "busy" passes, and an unprotected one (a holder that keeps
// working after its TTL, a DEL that frees someone else's lease) fails.
var LeaseModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		var names []string
		for _, op := range h {
			n := op.Input.(Op).Lock
			if _, ok := by[n]; !ok {
				names = append(names, n)
			}
			by[n] = append(by[n], op)
		}
		out := make([][]porcupine.Operation, 0, len(names))
		for _, n := range names {
			out = append(out, by[n])
		}
		return out
	},
	Init: func() interface{} { return lockState{holder: -1} },
	Step: func(s, in, out interface{}) (bool, interface{}) {
		st := s.(lockState)
		op := in.(Op)
		end := op.Return + op.Ghost
		switch op.Kind {
		case Acquire:
			switch op.Result {
			case OK:
				if st.holder != -1 && st.holder != op.Holder {
					return false, st
				}
				return true, lockState{holder: op.Holder, ghost: st.ghost}
			case Busy:
				return st.holder != -1 || st.ghost >= op.Call, st
			case Unknown:
				if end > st.ghost {
					st.ghost = end
				}
				return true, st
			default:
				return true, st
			}
		case Release, Lost:
			if st.holder != op.Holder {
				return false, st
			}
			st.holder = -1
			if op.Kind == Lost && end > st.ghost {
				st.ghost = end
			}
			return true, st
		}
		return false, st
	},
	Equal: func(a, b interface{}) bool { return a.(lockState) == b.(lockState) },
	DescribeOperation: func(in, out interface{}) string {
		op := in.(Op)
		return fmt.Sprintf("h%d %s %s", op.Holder, op.Kind, op.Result)
	},
	DescribeState: func(s interface{}) string {
		st := s.(lockState)
		return fmt.Sprintf("holder=%d ghost=%v", st.holder, st.ghost)
	},
}

// Linearizable checks ops against LeaseModel and returns "ok", "illegal"
// or "unknown" (the checker ran out of time).
func Linearizable(ops []Op, limit time.Duration) string {
	hist := make([]porcupine.Operation, 0, len(ops))
	for _, op := range ops {
		ret := op.Return
		if ret < op.Call {
			ret = op.Call
		}
		hist = append(hist, porcupine.Operation{ClientId: op.Holder, Input: op, Call: int64(op.Call), Output: op.Result, Return: int64(ret)})
	}
	return strings.ToLower(string(porcupine.CheckOperationsTimeout(LeaseModel, hist, limit)))
}
