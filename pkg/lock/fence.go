package lock

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

// Fences gives access to fencing counters outside Acquire.
type Fences struct{ l *Locker }

// Fences returns the Locker's fencing counters.
func (l *Locker) Fences() *Fences { return &Fences{l: l} }

// Next issues a fence from the counter of the lock called name: the same
// counter Acquire uses, so fences from both never repeat. Like every fence,
// it is greater than every fence issued before it from that counter, also
// across a restart that lost the counter and across a failover (see
// Lease.Fence for what that assumes).
//
// Errors: ErrInvalid; *ReplicationError when Options.WaitReplicas is set and
// too few replicas acknowledged the counter's new value (the fence is not
// returned: a failover could issue it again); Redis errors.
func (f *Fences) Next(ctx context.Context, name string) (int64, error) {
	key, err := f.l.key(name)
	if err != nil {
		return 0, err
	}
	r, err := f.l.b.nextFence(ctx, lockwire.AuxKey(lockwire.KindFence, key))
	if err != nil {
		return 0, fmt.Errorf("lock: fence next %s: %w", key, err)
	}
	if err := f.l.replicated(key, r); err != nil {
		return 0, err
	}
	return r.Fence, nil
}

// Peek returns the fence counter of the lock called name without changing
// it; 0 when no fence was ever issued.
func (f *Fences) Peek(ctx context.Context, name string) (int64, error) {
	key, err := f.l.key(name)
	if err != nil {
		return 0, err
	}
	n, err := f.l.b.peek(ctx, lockwire.AuxKey(lockwire.KindFence, key))
	if err != nil {
		return 0, fmt.Errorf("lock: fence peek %s: %w", key, err)
	}
	return n, nil
}

// Check is the storage-side guard. It atomically accepts fence n for
// resource when n is greater than every fence accepted for it before, and
// records n with token, the holder presenting it; it accepts n again when n
// is the highest fence and token is the one recorded with it, since a holder
// writes many times with one fence. It refuses everything else, a lower
// fence from anyone and the highest from anyone but its holder (or with an
// empty token), with *StaleFenceError (errors.Is ErrStaleFence) naming the
// newer fence. Resource names are used as given, without the lock prefix;
// their record never expires.
//
// With Options.WaitReplicas, an accepted fence whose record too few
// replicas acknowledged yields *ReplicationError.
func (f *Fences) Check(ctx context.Context, resource string, n int64, token string) error {
	return f.check(ctx, resource, n, token, false)
}

// CheckShared is Check for a shared holder (AcquireOptions.Shared), whose
// fence is the one of the last exclusive acquisition, held by every shared
// holder since: it accepts n when it is at least the highest fence seen,
// from any number of holders, and then records n without a token, so that
// the exclusive holder that presented n before (and lost its lease, or
// shared holders could not have come in) may not repeat it.
//
// Errors as Check.
func (f *Fences) CheckShared(ctx context.Context, resource string, n int64) error {
	return f.check(ctx, resource, n, "", true)
}

func (f *Fences) check(ctx context.Context, resource string, n int64, token string, shared bool) error {
	if resource == "" {
		return fmt.Errorf("%w: empty resource", ErrInvalid)
	}
	if n < 1 {
		return fmt.Errorf("%w: fence %d is not positive", ErrInvalid, n)
	}
	if token != "" && !validToken(token) {
		return fmt.Errorf("%w: token must be 1-256 printable ASCII characters without '\"' or '\\'", ErrInvalid)
	}
	r, err := f.l.b.check(ctx, lockwire.AuxKey(lockwire.KindChecked, resource), n, token, shared)
	if err != nil {
		return fmt.Errorf("lock: fence check %s: %w", resource, err)
	}
	if r.Code != lockwire.CheckAccepted {
		return &StaleFenceError{Resource: resource, Fence: n, Highest: r.Fence}
	}
	return f.l.replicated(resource, r)
}
