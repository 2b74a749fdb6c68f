package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

// Re-entry: a nested holder (a script run under a lock that calls another
// script wrapped in the same lock) would otherwise wait for itself forever.
// Reenter lets a caller that proves it holds the lock, by the token it was
// handed, take one more hold of the same lease instead of a new one, as
// Redisson's reentrant locks do with a per-holder count:
//
//   - the count is kept in the stored value ("holds", absent meaning 1), so
//     it lives and dies with the lock key and needs no key of its own;
//   - Reenter leaves the TTL alone: whoever already renews the lease keeps
//     doing so, and a nested holder renewing with the lease's own TTL never
//     shortens it;
//   - each release (Lease.Release) gives back one hold; the last one
//     deletes the key, normally the outermost holder's;
//   - Acquire with the token that holds the lock stays an idempotent retry
//     (a lost reply must not leave a hold nobody gives back): only Reenter
//     adds holds.
//
// A semaphore slot is re-entered the same way, by its token. FIFO locks are
// plain locks at the key: re-entry takes no place in the queue.

// Reenter takes one more hold of the lease token holds on the lock called name
// now, and returns it: the same token, fence, owner and acquisition time, and
// the TTL the lease was taken with. Release the returned lease as any other;
// that gives back this hold only.
//
// Errors: ErrNotHeld when token holds nothing there; *HeldError (errors.Is
// ErrNotOwner) when another token holds the lock; *DataError (ErrWrongType);
// ErrInvalid; Redis errors.
func (l *Locker) Reenter(ctx context.Context, name, token string) (*Lease, error) {
	key, err := l.key(name)
	if err != nil {
		return nil, err
	}
	if !validToken(token) {
		return nil, fmt.Errorf("%w: token must be 1-256 printable ASCII characters without '\"' or '\\'", ErrInvalid)
	}
	start := l.clock.Now()
	r, err := l.b.reenter(ctx, key, token)
	if err != nil {
		return nil, fmt.Errorf("lock: re-enter %s: %w", key, err)
	}
	switch r.Code {
	case lockwire.ReenterNotHeld:
		return nil, fmt.Errorf("%w: %s (this token holds nothing there)", ErrNotHeld, key)
	case lockwire.ReenterLock, lockwire.ReenterSlot:
	default:
		return nil, refused(key, r)
	}
	v, err := lockwire.ParseValueStrict(r.Value)
	if err != nil {
		return nil, fmt.Errorf("lock: re-enter %s: stored value: %w", key, err)
	}
	now := time.UnixMilli(r.NowMS).UTC()
	lease := &Lease{l: l, name: name, key: key, token: token, owner: v.Owner, note: v.Note, fence: v.Fence,
		ttl: v.LeaseTTL, acquiredAt: v.AcquiredAt, expiresAt: now.Add(r.PTTL),
		holds: int(v.Holds), waited: l.clock.Now().Sub(start)}
	if r.Code == lockwire.ReenterSlot {
		lease.limit, lease.shared = int(v.Limit), v.Shared
	}
	if lease.ttl <= 0 {
		// A value written before leases recorded their TTL.
		lease.ttl = r.PTTL
	}
	// The lease lasts at least until start+pttl: Sent is set so that
	// Sent+TTL is that moment, as a watchdog (Watch) expects.
	lease.sent = start.Add(r.PTTL - lease.ttl)
	if now := l.clock.Now(); !now.Before(lease.Deadline()) {
		// The lease rule (leasetime.Deadline), as for any grant: too late to
		// count on. Give this hold back.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_, _ = l.releaseHold(rctx, lease, nil)
		return nil, &LateError{Key: key, Op: "re-enter", TTL: lease.ttl, Took: now.Sub(start)}
	}
	return lease, nil
}
