package lock

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// LeaseDeadline is the lease-validity rule, and the only place it is
// computed: a lease written (acquired, re-confirmed or renewed) by a call
// sent at sent, for ttl, counts as held on this host while the local clock
// is before sent + ttl - margin. A margin of 0 means DefaultMargin(ttl).
//
// Counting from the send time is what makes the rule safe whatever the
// reply's delay: the server applied the write at or after sent, so its copy
// of the lease outlives the deadline by at least the margin. A reply that
// arrives after the deadline proves nothing (the link or the server was
// slow, or this process was stopped, while the lease may have run out on
// the server and someone else taken the lock), so that lease is not held.
// Acquire, Renew, the Watchdog and Lease.Deadline all go through here.
func LeaseDeadline(sent time.Time, ttl, margin time.Duration) time.Time {
	if margin <= 0 {
		margin = DefaultMargin(ttl)
	}
	return sent.Add(ttl - margin)
}

// Deadline is the moment the lease stops counting as held unless renewed
// before: Refresh moves it; a Watchdog (Watch) renews the lease and keeps
// its own, later, deadline. A nil *Lease (what a failed Acquire returns)
// has the zero time: it never counts as held.
func (l *Lease) Deadline() time.Time {
	if l == nil {
		return time.Time{}
	}
	return LeaseDeadline(l.Sent, l.TTL, 0)
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
// lease (Reenter) it gives back this hold only; the last one frees the lock.
// Done is closed once the lease is given back or found lost.
//
// Errors as Locker.Release: ErrNotHeld when the lock is gone; *HeldError
// (errors.Is ErrNotOwner) when another token holds it; a *WakeError
// (errors.Is ErrNotWoken) is a warning: the lease was given back.
// On a nil *Lease it does nothing and returns an error that matches
// ErrNotHeld.
func (l *Lease) Release(ctx context.Context) error {
	if l == nil {
		return errNilLease
	}
	_, err := l.release(ctx, l.l)
	return err
}

// release is Release through by (which records it, Options.Events),
// returning how many holds of the token remain.
func (l *Lease) release(ctx context.Context, by *Locker) (int, error) {
	if by == nil {
		return 0, errNoLocker
	}
	l.mu.Lock()
	dogs := l.dogs
	l.dogs = nil
	l.mu.Unlock()
	for _, w := range dogs {
		// No renewal may race the release.
		w.Stop()
	}
	left, err := by.releaseHoldRecorded(ctx, l)
	if err == nil || errors.Is(err, ErrNotWoken) || gone(err) {
		l.end()
	}
	return left, err
}

// Refresh renews the lease for ttl from now (0: the TTL it was taken with)
// if its token still holds it, as Locker.Renew does, and moves the lease's
// TTL and Sent, and so its Deadline, to the renewal's. A reply that comes
// after the renewal's own deadline does not count (LeaseDeadline): that is
// a *LateError, and the lease is lost. It never re-creates an expired lock.
//
// Errors: ErrNotHeld when the lock is gone; *HeldError (errors.Is
// ErrNotOwner) when another token holds it; *LateError (errors.Is
// ErrNotHeld); *WrongTypeError; ErrInvalid; *ReplicationError (renewed on
// the master, but too few replicas acknowledged it: the deadline stays, as
// the master may be one a failover replaced); Redis errors (nothing is
// known: the deadline stays). Done is closed on the errors that mean the lease is
// lost (ErrNotHeld, ErrNotOwner, ErrWrongType).
//
// Refresh writes the lease's TTL and Sent: read them from the goroutine
// that calls it. The other methods are safe for concurrent use. On a nil
// *Lease it does nothing and returns an error that matches ErrNotHeld.
func (l *Lease) Refresh(ctx context.Context, ttl time.Duration) error {
	if l == nil {
		return errNilLease
	}
	if l.l == nil {
		return errNoLocker
	}
	// Taken before the call: no later than the server's renewal, so the
	// deadline counted from it is safe (LeaseDeadline).
	sent := l.l.clock.Now()
	var got time.Duration
	var err error
	switch {
	case l.set != nil:
		got, err = l.l.renewSet(ctx, l.set, l.Token, ttl)
	case l.Limit > 0 || l.Shared:
		got, err = l.l.renewSem(ctx, l.Key, l.Token, ttl)
	default:
		got, err = l.l.renewKey(ctx, l.Key, l.Token, ttl)
	}
	if err == nil {
		l.Sent, l.TTL = sent, got
		return nil
	}
	if gone(err) {
		l.end()
	}
	return err
}

// Done returns a channel that is closed when the lease is lost or given back:
// when a Watchdog started on it (Watch, Locker.Watch) loses it, when Refresh
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

// Watch starts a Watchdog that keeps the lease renewed in the background
// until it is stopped (Watchdog.Stop, Release, or ctx) or the lease is lost,
// which closes Done. It is Locker.Watch on the Locker that granted the lease.
// On a nil *Lease it starts nothing and returns an error that matches ErrNotHeld.
func (l *Lease) Watch(ctx context.Context, opt *WatchdogOptions) (*Watchdog, error) {
	if l == nil {
		return nil, errNilLease
	}
	if l.l == nil {
		return nil, errNoLocker
	}
	return l.l.Watch(ctx, l, opt)
}

// closedChan is the Done of a nil *Lease.
var closedChan = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// errNoLocker: a Lease built by hand, not granted by a Locker.
var errNoLocker = fmt.Errorf("%w: the lease was not granted by a Locker (Acquire or Reenter)", ErrInvalid)

// gone reports an error that says the lease is lost for good.
func gone(err error) bool {
	return errors.Is(err, ErrNotHeld) || errors.Is(err, ErrNotOwner) || errors.Is(err, ErrWrongType)
}

// attach makes w's loss close Done, and Release stop w. Before w runs.
func (l *Lease) attach(w *Watchdog) {
	w.onLost = l.end
	l.mu.Lock()
	l.dogs = append(l.dogs, w)
	l.mu.Unlock()
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

// ErrLate is the error of a reply that arrived after the local deadline of
// the lease it granted or renewed, so that lease does not count as held
// (*LateError).
var ErrLate = errors.New("lock: reply after the lease's local deadline")

// LateError reports a grant or renewal whose reply came too late to count.
// From Acquire (a bounded wait that ended on a late grant, given back
// without time left to re-confirm it; a grant whose re-confirmation was
// late as well is a *SlowLinkError) it matches ErrNotObtained too, and
// from Reenter (the hold was given back); from Renew it
// matches ErrNotHeld (the lease can no longer be counted on, although the
// server did extend it).
type LateError struct {
	Key string
	Op  string // "acquire", "re-enter" or "renew"
	TTL time.Duration
	// Took is the time from sending the call to reading its reply.
	Took time.Duration
}

func (e *LateError) Error() string {
	return fmt.Sprintf("%s: the %s reply came %s after it was sent, past the lease's local deadline (ttl %s - margin %s): not held",
		e.Key, e.Op, e.Took.Round(time.Millisecond), e.TTL, DefaultMargin(e.TTL))
}

// Is makes a *LateError match ErrLate, and ErrNotObtained or ErrNotHeld
// by its Op, as LateError's doc says.
func (e *LateError) Is(target error) bool {
	switch target {
	case ErrLate:
		return true
	case ErrNotObtained:
		return e.Op == "acquire" || e.Op == "re-enter"
	case ErrNotHeld:
		return e.Op == "renew"
	}
	return false
}

// ErrSlowLink is the error of replies that take longer than the lease's TTL
// less its margin, so that no grant can count as held (*SlowLinkError).
var ErrSlowLink = errors.New("lock: replies slower than the lease allows")

// SlowLinkError reports that a grant and its re-confirmation both came too
// late to count (LeaseDeadline). Each call took longer than the TTL leaves
// (TTL - Margin after it is sent), so no grant can be valid on this link
// until it speeds up or the TTL grows: the lock is not held by anyone
// else, and waiting at this speed does not get it. The grants were given
// back. It matches ErrSlowLink and ErrLate, not ErrNotObtained.
type SlowLinkError struct {
	Key string
	// RTT is the re-confirmation's time from sending to reading its reply.
	RTT    time.Duration
	TTL    time.Duration
	Margin time.Duration
}

func (e *SlowLinkError) Error() string {
	return fmt.Sprintf("%s: replies took %s, too slow for a %s lease: no grant can count", e.Key, e.RTT.Round(time.Millisecond), e.TTL)
}

// Window is how long after its call was sent a grant still counts: the
// round trip a lease of this TTL tolerates.
func (e *SlowLinkError) Window() time.Duration {
	return LeaseDeadline(time.Time{}, e.TTL, e.Margin).Sub(time.Time{})
}

// Is makes a *SlowLinkError match ErrSlowLink and ErrLate.
func (e *SlowLinkError) Is(target error) bool { return target == ErrSlowLink || target == ErrLate }

// late applies LeaseDeadline to a write of key for ttl sent at sent whose
// reply has just arrived: nil when it counts, else a *LateError.
func (l *Locker) late(op, key string, sent time.Time, ttl time.Duration) error {
	now := l.clock.Now()
	if now.Before(LeaseDeadline(sent, ttl, 0)) {
		return nil
	}
	return &LateError{Key: key, Op: op, TTL: ttl, Took: now.Sub(sent)}
}
