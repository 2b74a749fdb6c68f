package lock

import (
	"context"
	"fmt"
)

// Fences gives access to fencing counters outside Acquire.
type Fences struct{ l *Locker }

// Fences returns the Locker's fencing counters.
func (l *Locker) Fences() *Fences { return &Fences{l: l} }

// Next increments and returns the fence counter of the lock called name:
// the same counter Acquire increments, so fences from both never repeat.
func (f *Fences) Next(ctx context.Context, name string) (int64, error) {
	key, err := f.l.key(name)
	if err != nil {
		return 0, err
	}
	n, err := f.l.b.incr(ctx, AuxKey(KindFence, key))
	if err != nil {
		return 0, fmt.Errorf("lock: fence next %s: %w", key, err)
	}
	return n, nil
}

// Peek returns the fence counter of the lock called name without changing
// it; 0 when no fence was ever issued.
func (f *Fences) Peek(ctx context.Context, name string) (int64, error) {
	key, err := f.l.key(name)
	if err != nil {
		return 0, err
	}
	n, err := f.l.b.peek(ctx, AuxKey(KindFence, key))
	if err != nil {
		return 0, fmt.Errorf("lock: fence peek %s: %w", key, err)
	}
	return n, nil
}

// Check is the storage-side guard: it atomically accepts fence n for
// resource only if n is greater than every fence accepted for it before,
// and records n. A refused fence yields *StaleFenceError (errors.Is
// ErrStaleFence) naming the newer fence. Resource names are used as given,
// without the lock prefix; their record never expires.
func (f *Fences) Check(ctx context.Context, resource string, n int64) error {
	if resource == "" {
		return fmt.Errorf("%w: empty resource", ErrInvalid)
	}
	if n < 1 {
		return fmt.Errorf("%w: fence %d is not positive", ErrInvalid, n)
	}
	ok, highest, err := f.l.b.check(ctx, AuxKey(KindChecked, resource), n)
	if err != nil {
		return fmt.Errorf("lock: fence check %s: %w", resource, err)
	}
	if !ok {
		return &StaleFenceError{Resource: resource, Fence: n, Highest: highest}
	}
	return nil
}
