package lock

import (
	"context"
	"time"
)

// The tests of package lock_test reach unexported names through these.

type Renewer = renewer

var NewHeldError = newHeldError

// StartWatchdog starts a watchdog whose schedule counts from now.
func StartWatchdog(ctx context.Context, r Renewer, name, token string, ttl time.Duration, opt *WatchdogOptions) (*Watchdog, error) {
	return startWatchdog(ctx, r, name, token, ttl, time.Time{}, opt)
}

// StartWatchdogSince starts a watchdog whose schedule counts from since.
func StartWatchdogSince(ctx context.Context, r Renewer, name, token string, ttl time.Duration, since time.Time, opt *WatchdogOptions) (*Watchdog, error) {
	return startWatchdog(ctx, r, name, token, ttl, since, opt)
}

func ScriptCommands() []string { return scriptCommands() }

// ReleaseLease releases lease through l (recorded by l's Events).
func (l *Locker) ReleaseLease(ctx context.Context, lease *Lease) error {
	_, err := l.releaseHoldRecorded(ctx, lease)
	return err
}

// ReleaseHold is ReleaseLease returning the holds left.
func (l *Locker) ReleaseHold(ctx context.Context, lease *Lease) (int, error) {
	return l.releaseHoldRecorded(ctx, lease)
}

// ReleaseKey is Release on a raw Redis key.
func (l *Locker) ReleaseKey(ctx context.Context, key, token string) error {
	return l.releaseKeyRecorded(ctx, key, token)
}

func (l *Locker) Renewer(lease *Lease) Renewer { return l.renewerFor(lease) }

func (l *Locker) HeldSince(ctx context.Context, name, token string) (time.Time, bool, error) {
	return l.heldSince(ctx, name, token)
}
