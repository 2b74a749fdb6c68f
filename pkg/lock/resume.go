package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/redis/go-redis/v9"
)

// Resume returns the lease that token holds on the lock called name, as a
// *Lease of this Locker: a lease known by its name and token, such as one
// another process acquired and handed over (`lockctl lock` prints the
// token), to Refresh, Watch or Release here. It reads the lock and changes
// nothing: the lease has the stored owner, note, fence, TTL and, when the
// value records them, AcquiredAt and Holds (the re-entered holds of the
// token); a semaphore or shared slot is found by its token. Its Deadline
// counts from the read, as if the lease had last been renewed by then.
//
// When the server refuses the read (an ACL that grants the lease's scripts
// but not a command the read runs), the lease has its name, key and token
// only, and Refresh and Release find out what the token holds.
//
// Errors: ErrNotHeld when token holds nothing there; *HeldError (errors.Is
// ErrNotOwner) when another token holds the lock; *DataError (ErrWrongType);
// ErrInvalid; Redis errors.
func (l *Locker) Resume(ctx context.Context, name, token string) (*Lease, error) {
	key, err := l.key(name)
	if err != nil {
		return nil, err
	}
	if token == "" {
		return nil, fmt.Errorf("%w: empty token", ErrInvalid)
	}
	start := l.clock.Now()
	h, err := l.getKey(ctx, key)
	if refusedRead(err) {
		// A user allowed the lease's own scripts but not the read (an ACL
		// without a command the read needs): the lease by name and token
		// alone, which Refresh and Release still check.
		return &Lease{l: l, resumed: true, name: name, key: key, token: token, holds: 1}, nil
	}
	if err != nil {
		return nil, err
	}
	if h.Token != token && (h.Reason == ReasonSemaphore || h.Reason == ReasonShared) {
		// Get describes the slot that frees first; token's own is in the hash.
		v, err := l.b.slotValue(ctx, key, token)
		if err != nil {
			return nil, fmt.Errorf("lock: resume %s: %w", key, err)
		}
		if v != "" {
			slot := parseValue(key, v, h.TTL)
			slot.Reason = h.Reason
			h = &slot
		} else {
			// Slots are found by token: another's is no refusal.
			return nil, fmt.Errorf("%w: %s", ErrNotHeld, key)
		}
	}
	switch {
	case h.Reason == ReasonQueue || h.Reason == ReasonWriters:
		return nil, fmt.Errorf("%w: %s", ErrNotHeld, key)
	case h.Token != token || h.Format == FormatRedisson:
		return nil, newHeldError(ErrNotOwner, *h)
	}
	lease := &Lease{l: l, resumed: true, name: name, key: key, token: token, owner: h.Owner, note: h.Note, fence: h.Fence,
		ttl: h.LeaseTTL, acquiredAt: h.AcquiredAt, holds: int(max(h.Reentry, 1))}
	switch h.Reason {
	case ReasonSemaphore:
		lease.limit = int(h.Limit)
	case ReasonShared:
		lease.shared = true
	}
	remaining := h.TTL
	if remaining < 0 {
		remaining = 0 // a key without a TTL: no deadline to count on
	}
	if lease.ttl <= 0 {
		// A value that does not record the TTL it was taken with.
		lease.ttl = remaining
	}
	// The lease lasts at least until start+remaining: Sent is set so that
	// Sent+TTL is that moment, as a watchdog (Watch) expects.
	lease.sent = start.Add(remaining - lease.ttl)
	if h.TTL >= 0 {
		lease.expiresAt = time.Now().Add(remaining).UTC()
	}
	return lease, nil
}

// refusedRead reports an error reply of the server to Resume's read that
// says nothing about the lease: not a data error (WRONGTYPE), which is the
// lease's answer.
func refusedRead(err error) bool {
	var rerr redis.Error
	return err != nil && errors.As(err, &rerr) && !redisreply.IsData(err) && !errors.Is(err, ErrWrongType)
}
