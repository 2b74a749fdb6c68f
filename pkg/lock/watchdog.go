package lock

import (
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/internal/lib/watchdog"
	"github.com/lockctl/lockctl/pkg/events"
)

// renewer extends a lease for its watchdog: a lock, a semaphore or shared
// slot, or a set of locks (renewerFor).
type renewer = watchdog.Renewer

// LostError says why a lease's watchdog (Lease.Watch) gave it up: Lease.Err
// returns it.
type LostError struct {
	Name string
	// Expired: the local deadline passed without a successful renewal.
	// Otherwise a renewal was refused and Err says how.
	Expired bool
	// Err is the refusal (ErrNotHeld, *HeldError, ...) or, when Expired,
	// the last renewal error seen (nil when renewals hung rather than failed).
	Err error
}

func (e *LostError) Error() string {
	if !e.Expired {
		return fmt.Sprintf("lock: %s lost: renewal refused: %v", e.Name, e.Err)
	}
	msg := fmt.Sprintf("lock: %s lost: no renewal succeeded before the lease's local deadline", e.Name)
	if e.Err != nil {
		msg += fmt.Sprintf(" (last error: %v)", e.Err)
	}
	return msg
}

// Unwrap returns ErrLost, which a *LostError matches, and Err.
func (e *LostError) Unwrap() []error { return causes(ErrLost, e.Err) }

// WatchdogOptions tune Lease.Watch. A nil *WatchdogOptions takes every default.
type WatchdogOptions struct {
	// RenewEvery is the renewal period; 0 means ttl/6. It
	// must leave room for at least one renewal before the deadline:
	// RenewEvery < ttl-Margin.
	RenewEvery time.Duration
	// Margin is how long before the lease would expire on the server the
	// lock already counts as lost; 0 means ttl/4, at least
	// 100ms and at most ttl/2.
	Margin time.Duration
	// Clock drives the watchdog's schedules; nil is the real, monotonic clock.
	Clock Clock
	// RetryMin and RetryMax bound the back-off between attempts after a
	// failed renewal (Redis unreachable, timeout, a failover under way);
	// 0 means 100ms and min(1s, RenewEvery, Margin/3), so that several
	// attempts fit between the first failure and the deadline.
	RetryMin, RetryMax time.Duration
	// Observer, if set, is told (from the watchdog's goroutine) of every
	// renewal that counted and every renewal error that did not lose the
	// lease. Done and Err tell of the loss.
	Observer func(WatchEvent)
}

// WatchEvent is what a watchdog tells WatchdogOptions.Observer.
type WatchEvent struct {
	// Renewed: a renewal counted, and Deadline is the lease's new local
	// deadline. Otherwise a renewal failed without losing the lease, and
	// Err says how: a transient error (Redis unreachable, a timeout, a
	// failover under way), retried until the deadline, or a
	// *ReplicationError (see Lease.Watch).
	Renewed  bool
	Deadline time.Time
	Err      error
}

// engine is o as the watchdog's options for the lease called name: clock
// and sink unless o sets them, and losses reported as *LostError.
func (o *WatchdogOptions) engine(name string, clock leasetime.Clock, sink events.Sink) *watchdog.Options {
	e := watchdog.Options{}
	if o != nil {
		e = watchdog.Options{RenewEvery: o.RenewEvery, Margin: o.Margin, Clock: o.Clock,
			RetryMin: o.RetryMin, RetryMax: o.RetryMax}
		if obs := o.Observer; obs != nil {
			e.OnRenewError = func(err error) { obs(WatchEvent{Err: err}) }
			e.OnRenew = func(d time.Time) { obs(WatchEvent{Renewed: true, Deadline: d}) }
		}
	}
	if e.Clock == nil {
		e.Clock = clock
	}
	e.Events = sink
	e.Lost = func(expired bool, err error) error { return &LostError{Name: name, Expired: expired, Err: err} }
	return &e
}
