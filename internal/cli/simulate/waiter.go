package simulate

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/pkg/lock"
)

// waiter is an Acquire that waits (lockctl run --wait), played step by
// step. What a waiter does while it waits is part of what some scenarios
// show (an exclusive waiter keeps new shared holders out only while its
// wait is under way), so it is pkg/lock's own wait loop that runs, in a
// goroutine, not a stand-in. Its timers fire at once and every refused
// attempt (Observer) parks it until the timeline lets it try again, so each
// attempt happens at the simulated time the scenario gives it, embedded and
// on a real server alike, and the timeline stays the same on every run.
//
// Only one side runs at a time: the scenario blocks while the waiter
// attempts, the waiter is parked while the scenario goes on.
type waiter struct {
	e      *env
	actor  string
	ttl    time.Duration
	since  time.Duration // simulated time of the first attempt
	held   lock.Holder   // who refused the last attempt
	lease  *lock.Lease
	err    error
	over   bool
	cancel context.CancelFunc
	resume chan struct{}
	parked chan lock.Holder
	done   chan struct{}
}

// soonClock is a waiter's clock: the timeline decides when it tries again,
// so its polling timers need not wait.
type soonClock struct{}

func (soonClock) Now() time.Time { return time.Now() }

func (soonClock) NewTimer(time.Duration) leasetime.Timer {
	c := make(chan time.Time, 1)
	c <- time.Now()
	return soonTimer(c)
}

type soonTimer chan time.Time

func (t soonTimer) C() <-chan time.Time { return t }
func (t soonTimer) Stop() bool          { return false }

// waitFor starts actor's waiting Acquire of name, in shared mode or not, and
// returns after its first attempt: granted (w.lease), or refused and
// parked. Call it inside a step (e.do), whose ctx carries the actor.
func (e *env) waitFor(ctx context.Context, actor, name string, ttl time.Duration, shared bool) *waiter {
	w := &waiter{e: e, actor: actor, ttl: ttl, since: e.now,
		resume: make(chan struct{}), parked: make(chan lock.Holder), done: make(chan struct{})}
	if e.err != nil {
		w.over = true
		return w
	}
	n := e.lockNode()
	// A Locker of its own, as a waiter in another process has: its
	// pub/sub connection and polling are its own.
	l := lock.New(n.rdb, &lock.Options{Prefix: n.prefix + "lock:", Clock: soonClock{}, PollInterval: e.wall(time.Second)})
	wctx, cancel := context.WithCancel(ctx)
	w.cancel = cancel
	e.waiters = append(e.waiters, w)
	go func() {
		defer close(w.done)
		w.lease, w.err = l.Acquire(wctx, name, e.wall(ttl), &lock.AcquireOptions{
			Token: token(actor), Owner: actor, Shared: shared, Wait: -1,
			Observer: func(ev lock.AcquireEvent) {
				if ev.Late != nil {
					return
				}
				h := ev.Holder
				select {
				case w.parked <- h:
				case <-wctx.Done():
					return
				}
				select {
				case <-w.resume:
				case <-wctx.Done():
				}
			},
		})
	}()
	w.settle()
	return w
}

// again lets a parked waiter make its next attempt, and returns once that
// attempt is over. Call it inside a step.
func (w *waiter) again() {
	if w.over || w.e.err != nil {
		return
	}
	w.resume <- struct{}{}
	w.settle()
}

// settle waits until the waiter is parked again or its Acquire returned.
func (w *waiter) settle() {
	select {
	case h := <-w.parked:
		w.held = h
	case <-w.done:
		w.over = true
		w.cancel()
		if w.err != nil {
			w.e.expect(w.err, lock.ErrNotObtained)
			return
		}
		w.e.grant(w.actor, w.ttl)
	}
}

// waited is how long the waiter has waited, or waited before its grant.
func (w *waiter) waited() time.Duration {
	if w.lease != nil {
		return w.e.leases[w.actor].since - w.since
	}
	return w.e.now - w.since
}

// stopWaiters ends the waits a scenario left under way (one that failed
// half-way), unrecorded, so that no goroutine outlives its run.
func (e *env) stopWaiters() {
	e.mute = true
	for _, w := range e.waiters {
		if !w.over {
			w.cancel()
			<-w.done
			w.over = true
		}
	}
	e.waiters = nil
	e.mute = false
}
