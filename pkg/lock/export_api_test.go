package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lib/watchdog"
)

// The tests of package lock_test reach unexported names through these.

// Renewer is what the tests' watchdogs renew with.
type Renewer = renewer

// Watchdog is the engine behind Lease.Watch, and PanicError the loss it
// reports when it (or its renewal) panics.
type (
	Watchdog   = watchdog.Watchdog
	PanicError = watchdog.PanicError
)

// StartWatchdog starts a watchdog on renew as Lease.Watch configures one
// (its losses are *LostError values), from since.
func StartWatchdog(ctx context.Context, renew func(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error),
	name, token string, ttl time.Duration, since time.Time, opt *WatchdogOptions) (*Watchdog, error) {
	var r Renewer
	if renew != nil {
		r = watchdog.RenewFunc(renew)
	}
	return watchdog.Start(ctx, r, name, token, ttl, since, opt.engine(name, nil, nil))
}

// StartWatchdogNow starts a watchdog on r whose schedule counts from now.
func StartWatchdogNow(ctx context.Context, r Renewer, name, token string, ttl time.Duration, opt *WatchdogOptions) (*Watchdog, error) {
	if r == nil {
		return StartWatchdog(ctx, nil, name, token, ttl, time.Time{}, opt)
	}
	return StartWatchdog(ctx, r.Renew, name, token, ttl, time.Time{}, opt)
}

// ReleaseLease releases lease through l (recorded by l's Events).
func (l *Locker) ReleaseLease(ctx context.Context, lease *Lease) error {
	_, err := l.releaseHoldRecorded(ctx, lease)
	return err
}

// ReleaseHold is ReleaseLease returning the holds left.
func (l *Locker) ReleaseHold(ctx context.Context, lease *Lease) (int, error) {
	return l.releaseHoldRecorded(ctx, lease)
}

// ReleaseToken runs the release script for token on the lock called name,
// as Lease.Release does, recorded: the scripts' own answers, without the
// read Resume makes first.
func (l *Locker) ReleaseToken(ctx context.Context, name, token string) error {
	if name == "" {
		return fmt.Errorf("%w: empty lock name", ErrInvalid)
	}
	return l.ReleaseKey(ctx, l.Key(name), token)
}

// ReleaseKey is ReleaseToken on a raw Redis key.
func (l *Locker) ReleaseKey(ctx context.Context, key, token string) error {
	left, err := l.releaseKey(ctx, key, token, nil)
	if l.events != nil {
		l.recordRelease(ctx, l.nameOf(key), 0, left, err)
	}
	return err
}

// RenewToken runs the renew script for token on the lock called name, as
// Lease.Refresh and a Watchdog do.
func (l *Locker) RenewToken(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error) {
	return lockRenewer{l}.Renew(ctx, name, token, ttl)
}

func (l *Locker) Renewer(lease *Lease) Renewer { return l.renewerFor(lease) }

// StartWatch is Watch returning the watchdog it started, for the tests of
// the watchdog's schedule.
func (l *Lease) StartWatch(ctx context.Context, opt *WatchdogOptions) (*Watchdog, error) {
	if err := l.Watch(ctx, opt); err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.dogs[len(l.dogs)-1].w, nil
}
