package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/lib/watchdog"
)

// Deadline is the moment the lease stops counting as held unless renewed
// before, on the Locker's clock: the send time of the call that granted or
// last renewed it, plus its TTL, less a margin (a quarter of the TTL, at
// least 100ms, at most half) that the server's copy of the lease still
// outlives it by. Refresh moves it, and while a watchdog runs (Watch) it is
// the watchdog's, which every renewal moves and whose margin
// (WatchdogOptions.Margin) applies. A nil *Lease has the zero time: it
// never counts as held.
func (l *Lease) Deadline() time.Time {
	if l == nil {
		return time.Time{}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.deadlineLocked()
}

func (l *Lease) deadlineLocked() time.Time {
	if !l.deadline.IsZero() {
		return l.deadline
	}
	return leasetime.Deadline(l.sent, l.ttl, 0)
}

// renewed moves the deadline to d after a renewal that counted (a
// watchdog's), unless it is later already.
func (l *Lease) renewed(d time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.renewals++
	if d.After(l.deadline) {
		l.deadline = d
	}
}

// errNilLease is the error of Release, Refresh and Watch called on a nil
// *Lease, such as a failed Acquire returns: it matches ErrNotHeld, so that
//
//	lease, err := locker.Acquire(ctx, name, ttl, nil)
//	defer lease.Release(ctx)
//
// is safe before err is checked, as with other Redis lock libraries.
var errNilLease = fmt.Errorf("%w: nil lease (no lock was acquired)", ErrNotHeld)

// Release gives the lease back: it stops the watchdogs started on it (Watch),
// then deletes the lock, or frees the semaphore or shared slot, if the
// lease's token still holds it, and wakes the waiters. For a re-entered
// lease (Reenter) it gives back this hold only; the last one frees the lock,
// and Holds says how many the token has left (0: the lock or slot is free).
// Done is closed once the lease is given back or found lost.
//
// Errors: ErrNotHeld when the lock is gone; *HeldError (errors.Is
// ErrNotOwner) carrying the holder's owner and TTL when another token
// holds it (nothing is deleted); *DataError (ErrWrongType); ErrInvalid; Redis errors.
// A *WakeError (errors.Is ErrNotWoken) is a warning: the lease was given
// back, but the server refused to wake its waiters.
// On a nil *Lease it does nothing and returns an error that matches
// ErrNotHeld.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return errNilLease
	}
	by := l.l
	if by == nil {
		return errNoLocker
	}
	l.mu.Lock()
	dogs := l.dogs
	l.dogs = nil
	l.mu.Unlock()
	for _, d := range dogs {
		// No renewal may race the release.
		d.w.Stop()
		if e := d.w.Err(); e != nil {
			l.lost(e)
		}
	}
	left, err := by.releaseHoldRecorded(ctx, l)
	if err == nil || errors.Is(err, ErrNotWoken) {
		l.mu.Lock()
		l.holds = left
		l.mu.Unlock()
	}
	if gone(err) {
		l.lost(err)
	}
	if err == nil || errors.Is(err, ErrNotWoken) || gone(err) {
		l.end()
	}
	return err
}

// Refresh renews the lease for ttl from now (0: the TTL it was taken with)
// if its token still holds it, and moves the lease's TTL and Deadline to
// the renewal's. A reply that comes
// after the renewal's own deadline (Deadline) does not count: that is
// a *LateError, and the lease is lost. It never re-creates an expired lock.
//
// Errors: ErrNotHeld when the lock is gone; *HeldError (errors.Is
// ErrNotOwner) when another token holds it; *LateError (errors.Is
// ErrNotHeld); *DataError (ErrWrongType); ErrInvalid when ttl is 0 and the lease's
// value does not record its TTL (a foreign lock); ErrInvalid; *ReplicationError (renewed on
// the master, but too few replicas acknowledged it: the deadline stays, as
// the master may be one a failover replaced); Redis errors (nothing is
// known: the deadline stays). Done is closed on the errors that mean the lease is
// lost (ErrNotHeld, ErrNotOwner, ErrWrongType).
//
// On a nil *Lease it does nothing and returns an error that matches
// ErrNotHeld.
func (l *Lease) Refresh(ctx context.Context, ttl time.Duration) error {
	if l == nil {
		return errNilLease
	}
	if l.l == nil {
		return errNoLocker
	}
	// Taken before the call: no later than the server's renewal, so the
	// deadline counted from it is safe (leasetime.Deadline).
	sent := l.l.clock.Now()
	var got time.Duration
	var err error
	switch {
	case l.set != nil:
		got, err = l.l.renewSet(ctx, l.set, l.token, ttl)
	case l.limit > 0 || l.shared:
		got, err = l.l.renewSem(ctx, l.key, l.token, ttl)
	default:
		got, err = l.l.renewKey(ctx, l.key, l.token, ttl)
	}
	if err == nil {
		l.mu.Lock()
		l.sent, l.ttl = sent, got
		l.renewals++
		if !l.deadline.IsZero() {
			// Watched: the later of the two deadlines counts.
			if d := leasetime.Deadline(sent, got, 0); d.After(l.deadline) {
				l.deadline = d
			}
		}
		l.mu.Unlock()
		return nil
	}
	if gone(err) {
		l.lost(err)
		l.end()
	}
	return err
}

// Done returns a channel that is closed when the lease is lost or given back:
// when the watchdog started on it (Watch) loses it, when Refresh
// finds it lost, or when Release gives it back. Nothing watches a lease
// without a watchdog: its expiry closes nothing, so a holder that does not
// start one keeps to Deadline itself. A nil *Lease's channel is closed
// already: nothing is held.
func (l *Lease) Done() <-chan struct{} {
	if l == nil {
		return closedChan
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
	}
	return l.done
}

// Watch keeps the lease renewed in the background, renewed as its kind
// needs (a lock, a semaphore or shared slot, or a set of locks), until ctx
// ends or Release (which stops it before releasing), or until the lease is
// lost, which closes Done; Err then says why (a *LostError). opt may be
// nil; its Clock defaults to the Locker's, and renewals that failed and
// losses go to the Locker's Options.Events.
//
// The lease counts as held until deadline = S + ttl - margin, where S is the
// send time of the last successful renewal (or of the acquire: Deadline()
// to start with). Counting from the send time is what makes the rule safe:
// the server applied the renewal at or after S, so its copy of the lease
// outlives the deadline by at least the margin, however long the reply
// took. For the same reason a reply processed after the deadline is no
// proof of anything (the process may have been stopped, or the network
// slow, while the server's lease ran out and someone else took and
// released the lock) and the lease is lost. The clock is monotonic, so a
// process that was SIGSTOPped past the deadline finds it passed at its
// first wake-up after SIGCONT and reports the loss before anything else.
//
// A renewal answered "not held", "not owner" or "wrong type" is a loss at
// once. Other errors (Redis unreachable, timeouts, a failover under way)
// are retried, at once and then with a short back-off, until the deadline;
// no renewal call outlives the deadline. A *ReplicationError
// (Options.WaitReplicas) does not count either: the master that took it
// may be one a failover already replaced; it is retried, and the deadline
// stays where the last acknowledged renewal put it.
//
// On a nil *Lease it starts nothing and returns an error that matches ErrNotHeld.
func (l *Lease) Watch(ctx context.Context, opt *WatchdogOptions) error {
	if l == nil {
		return errNilLease
	}
	by := l.l
	if by == nil {
		return errNoLocker
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	o := opt.engine(l.name, by.clock, by.events)
	o.OnLost = l.end
	onRenew := o.OnRenew
	o.OnRenew = func(d time.Time) {
		l.renewed(d)
		if onRenew != nil {
			onRenew(d)
		}
	}
	w, err := watchdog.Start(ctx, by.renewerFor(l), l.name, l.token, l.ttl, l.sent, o)
	if err != nil {
		return err
	}
	// From now on the watchdog's deadline (its margin) is the lease's.
	if d := w.Deadline(); l.deadline.IsZero() || d.After(l.deadline) {
		l.deadline = d
	}
	l.dogs = append(l.dogs, watch{w, ctx})
	return nil
}

// RenewNow asks the lease's watchdogs (Watch) for a renewal at once, or,
// while one is in flight, for another as soon as it is answered (the one in
// flight may have gone to a server that is no longer the master). A caller
// that learns the master changed (a Sentinel failover) calls it: renewals
// the old master took after the promotion never reach the new one, whose
// copy of the lease runs out at its TTL from the last renewal it did get,
// so waiting for the next period can lose a lease that a renewal now would
// keep. It never blocks, and does nothing without a watchdog.
func (l *Lease) RenewNow() {
	if l == nil {
		return
	}
	l.mu.Lock()
	dogs := l.dogs
	l.mu.Unlock()
	for _, d := range dogs {
		d.w.RenewNow()
	}
}

// Err says why the lease was lost: nil while it is held or after a clean
// Release; a *LostError once its watchdog (Watch) gave it up; the error of
// the Refresh or Release that found it gone. After Watch's ctx has ended,
// Err first waits until that watchdog has stopped, so its answer is final.
// A nil *Lease's is an error that matches ErrNotHeld.
func (l *Lease) Err() error {
	if l == nil {
		return errNilLease
	}
	l.mu.Lock()
	dogs, err := l.dogs, l.err
	l.mu.Unlock()
	for _, d := range dogs {
		if d.ctx.Err() != nil {
			d.w.Stop()
		}
		if e := d.w.Err(); e != nil && err == nil {
			err = e
		}
	}
	return err
}

// watch is a watchdog started on a lease, and the context that stops it.
type watch struct {
	w   *watchdog.Watchdog
	ctx context.Context
}

// closedChan is the Done of a nil *Lease.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// errNoLocker: a Lease built by hand, not granted by a Locker.
var errNoLocker = fmt.Errorf("%w: the lease was not granted by a Locker (Acquire, Reenter or Resume)", ErrInvalid)

// gone reports an error that says the lease is lost for good.
func gone(err error) bool {
	return errors.Is(err, ErrNotHeld) || errors.Is(err, ErrNotOwner) || errors.Is(err, ErrWrongType)
}

// lost records err as the lease's loss (Err), unless one is recorded.
func (l *Lease) lost(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err == nil {
		l.err = err
	}
}

// end closes Done, once.
func (l *Lease) end() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.done == nil {
		l.done = make(chan struct{})
	}
	select {
	case <-l.done:
	default:
		close(l.done)
	}
}

// LateError reports a grant or renewal whose reply came too late to count
// (Lease.Deadline). From Acquire (a bounded wait that ended on a late
// grant, given back without time left to re-confirm it) it matches
// ErrNotObtained too, and from Reenter (the hold was given back); from a
// renewal it matches ErrNotHeld (the lease can no longer be counted on,
// although the server did extend it).
//
// Slow says that a grant and its re-confirmation both came too late: each
// call took longer than the TTL leaves (TTL less the margin after it is
// sent), so no grant can be valid on this link until it speeds up or the
// TTL grows. The lock is not held by anyone else, and waiting at this speed
// does not get it; the grants were given back. A slow LateError matches
// ErrUnavailable, not ErrNotObtained: tell it by errors.As and Slow.
type LateError struct {
	Key string
	Op  string // "acquire", "re-enter" or "renew"
	TTL time.Duration
	// Took is the time from sending the call to reading its reply (the
	// re-confirmation's, when Slow).
	Took time.Duration
	Slow bool
}

func (e *LateError) Error() string {
	if e.Slow {
		return fmt.Sprintf("lock: %s: replies took %s, too slow for a %s lease: no grant can count", e.Key, e.Took.Round(time.Millisecond), e.TTL)
	}
	return fmt.Sprintf("lock: %s: the %s reply came %s after it was sent, past the lease's local deadline (ttl %s - margin %s): not held",
		e.Key, e.Op, e.Took.Round(time.Millisecond), e.TTL, leasetime.DefaultMargin(e.TTL))
}

// Is makes a slow *LateError match ErrUnavailable, and any other
// ErrNotObtained or ErrNotHeld by its Op, as LateError's doc says.
func (e *LateError) Is(target error) bool {
	switch target {
	case lockwire.ErrLate:
		return true
	case ErrUnavailable:
		return e.Slow
	case ErrNotObtained:
		return !e.Slow && (e.Op == "acquire" || e.Op == "re-enter")
	case ErrNotHeld:
		return !e.Slow && e.Op == "renew"
	}
	return false
}

// late applies the lease rule (leasetime.Deadline) to a write of key for ttl sent at sent whose
// reply has just arrived: nil when it counts, else a *LateError.
func (l *Locker) late(op, key string, sent time.Time, ttl time.Duration) error {
	now := l.clock.Now()
	if now.Before(leasetime.Deadline(sent, ttl, 0)) {
		return nil
	}
	return &LateError{Key: key, Op: op, TTL: ttl, Took: now.Sub(sent)}
}
