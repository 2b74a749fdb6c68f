package lock

import (
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
// before (a Watchdog started with Since: Sent renews it and keeps its own,
// later, deadline).
func (l *Lease) Deadline() time.Time { return LeaseDeadline(l.Sent, l.TTL, 0) }

// ErrLate: a reply arrived after the local deadline of the lease it granted
// or renewed, so that lease does not count as held (*LateError).
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

// ErrSlowLink: replies take longer than the lease's TTL less its margin, so
// no grant can count as held (*SlowLinkError).
var ErrSlowLink = errors.New("lock: replies slower than the lease allows")

// SlowLinkError: a grant and its re-confirmation both came too late to
// count (LeaseDeadline). Each call took longer than the TTL leaves
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
