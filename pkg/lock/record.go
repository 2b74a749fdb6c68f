package lock

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/lockctl/lockctl/pkg/events"
)

// recordAcquire: acquired (with the wait), busy (no waiting) or timeout.
// Errors that say nothing about the lock (Redis unreachable, ctx ended,
// invalid arguments) record nothing.
func (l *Locker) recordAcquire(ctx context.Context, name string, wait time.Duration, lease *Lease, err error) {
	switch {
	case err == nil && lease != nil:
		// At least 1µs: a zero duration reads as "unknown".
		l.events.Record(ctx, events.Event{Kind: events.Acquired, Name: name, Duration: max(lease.waited, time.Microsecond)})
	case !errors.Is(err, ErrNotObtained):
	case wait == 0:
		l.events.Record(ctx, events.Event{Kind: events.Busy, Name: name})
	default:
		l.events.Record(ctx, events.Event{Kind: events.Timeout, Name: name})
	}
}

// recordRelease: released once no hold of the token is left (a re-entered
// hold given back records nothing, as its re-entry did not), or the
// refusal. held is 0 when unknown. Errors that did not reach a decision
// (Redis unreachable) record nothing.
func (l *Locker) recordRelease(ctx context.Context, name string, held time.Duration, left int, err error) {
	switch {
	case (err == nil || errors.Is(err, ErrNotWoken)) && left == 0:
		l.events.Record(ctx, events.Event{Kind: events.Released, Name: name, Duration: held})
	case errors.Is(err, ErrNotOwner):
		l.events.Record(ctx, events.Event{Kind: events.NotOwner, Name: name})
	case errors.Is(err, ErrNotHeld):
		l.events.Record(ctx, events.Event{Kind: events.NotHeld, Name: name})
	}
}

// nameOf is the lock name of a key of this Locker (the key itself when it
// lies outside the prefix).
func (l *Locker) nameOf(key string) string {
	return strings.TrimPrefix(key, l.prefix)
}

// heldFor is how long lease has been held, 0 when unknown: from its send
// time on the Locker's clock when this lease is the acquisition itself,
// else from its server-side acquisition time (a re-entered lease, or one
// rebuilt from a token), which is only as good as the two clocks agree.
func (l *Locker) heldFor(lease *Lease) time.Duration {
	lease.mu.Lock()
	sent, holds := lease.sent, lease.holds
	lease.mu.Unlock()
	switch {
	case !sent.IsZero() && holds <= 1 && !lease.resumed:
		return max(l.clock.Now().Sub(sent), time.Microsecond)
	case !lease.acquiredAt.IsZero():
		if d := time.Since(lease.acquiredAt); d > 0 {
			return d
		}
	}
	return 0
}
