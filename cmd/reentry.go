package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockctl/lockctl/pkg/lock"
)

// take acquires name for lock and run, or re-enters it: a caller whose
// environment proves it holds name (LOCKCTL_KEY is name's key and
// LOCKCTL_TOKEN holds it now on the server, as inside `lockctl run name`)
// takes one more hold of that lease at once instead of waiting for itself
// forever; so does a caller inside a run of a set that has name
// (LOCKCTL_KEY_<i>, run_set.go). The hold is given back by the release at the end (run) or by
// `lockctl release` (lock); the key goes with the last one. --no-reentry
// waits like any other caller.
func (w *waitFlags) take(ctx context.Context, f *Factory, l *lock.Locker, name string, opts *lock.AcquireOptions) (*lock.Lease, error) {
	if lease, err := w.reenter(ctx, f, l, name); lease != nil || err != nil {
		return lease, err
	}
	return l.Acquire(ctx, name, w.ttl, opts)
}

func (w *waitFlags) reenter(ctx context.Context, f *Factory, l *lock.Locker, name string) (*lock.Lease, error) {
	token := f.Getenv("LOCKCTL_TOKEN")
	if w.noReentry || token == "" || !envHolds(f.Getenv, l.Key(name)) {
		return nil, nil
	}
	lease, err := l.Reenter(ctx, name, token)
	switch {
	case errors.Is(err, lock.ErrNotHeld), errors.Is(err, lock.ErrNotOwner):
		// The environment claims a lease that is gone (lost, or released
		// by hand): this caller proves nothing and waits like anyone.
		f.IO.Errorf("warning: LOCKCTL_TOKEN no longer holds %s; waiting for it like any other caller", name)
		return nil, nil
	case err != nil:
		return nil, err
	}
	// An exclusive hold covers a shared one; the reverse would let this
	// caller write while other shared holders read.
	if lease.Limit() != w.limit || (lease.Shared() && !w.shared) {
		// Give the hold back: a caller that asks for another mode than the
		// one it holds is confused, and must not count as inside.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.G.Timeout)
		defer cancel()
		_ = lease.Release(rctx)
		hint := "use the same --limit as the holder, or --no-reentry to wait for the lock as a separate holder"
		if lease.Shared() {
			hint = "a shared holder cannot take the lock exclusively inside its hold (it would wait for itself); take it exclusively from the start"
		}
		return nil, &UsageError{Err: fmt.Errorf("%s is held here as %s, but this call asks for %s", name, modeText(lease.Limit(), lease.Shared()), modeText(w.limit, w.shared)),
			Hints: []string{hint}}
	}
	f.Verbosef("re-entered %s (fence %d): hold %d of this token; the outer holder keeps renewing", lease.Key(), lease.Fence(), lease.Holds())
	return lease, nil
}

func modeText(limit int, shared bool) string {
	switch {
	case limit > 0:
		return fmt.Sprintf("a semaphore slot (--limit %d)", limit)
	case shared:
		return "a shared hold (--shared)"
	}
	return "an exclusive lock"
}
