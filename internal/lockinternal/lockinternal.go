// Package lockinternal gives lockctl's own packages (cmd, pkg/inspect,
// pkg/once, internal/...) the parts of pkg/lock that are no part of the
// library's API: pkg/lock hands them over through internal/lockinternal/hook
// when it is initialised, and this package gives them back their types.
package lockinternal

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/lockinternal/hook"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// Renewer extends a lease for a watchdog (StartWatchdog); *lock.Locker
// renews plain locks. Renew returns the TTL the lease now has; an error
// matching lock.ErrNotHeld, lock.ErrNotOwner or lock.ErrWrongType means the
// lease is gone for good.
type Renewer = hook.Renewer

// StartWatchdog starts renewing name's lease, held with token, with r, for
// ttl at a time: a watchdog on something else than a lease a Locker
// granted (lock.Locker.Watch), such as a once claim. since is the send
// time of the command that acquired (or last renewed) the lease; zero means
// "now", which is later than the truth and so gives a later deadline.
// Cancelling ctx stops it like Stop (cancellation is not a loss).
func StartWatchdog(ctx context.Context, r Renewer, name, token string, ttl time.Duration, since time.Time, opt *lock.WatchdogOptions) (*lock.Watchdog, error) {
	return hook.StartWatchdog.(func(context.Context, hook.Renewer, string, string, time.Duration, time.Time, *lock.WatchdogOptions) (*lock.Watchdog, error))(ctx, r, name, token, ttl, since, opt)
}

// NewHeldError builds a *lock.HeldError of the given kind (lock.ErrNotObtained
// or lock.ErrNotOwner) describing h.
func NewHeldError(kind error, h lock.Holder) *lock.HeldError {
	return hook.NewHeldError.(func(error, lock.Holder) *lock.HeldError)(kind, h)
}

// ReleaseHold is lease.Release through l (which records it) that also reports how many holds of the
// lease's token remain: 0 when the lock (or slot) is now free, more when
// re-entered holds were not given back yet. lease may be one built from a
// name, key and token (a release by token in another process than the
// acquirer); its AcquiredAt, if known, gives the recorded hold time.
func ReleaseHold(ctx context.Context, l *lock.Locker, lease *lock.Lease) (int, error) {
	return hook.ReleaseHold.(func(context.Context, *lock.Locker, *lock.Lease) (int, error))(ctx, l, lease)
}

// HeldSince is when the lease token holds on the lock called name was
// acquired, whether it holds the lock, a semaphore slot or a shared slot;
// ok is false when token holds nothing there (or the value does not say).
// It reads, and does not check the lease's validity: for reports.
func HeldSince(ctx context.Context, l *lock.Locker, name, token string) (at time.Time, ok bool, err error) {
	return hook.HeldSince.(func(context.Context, *lock.Locker, string, string) (time.Time, bool, error))(ctx, l, name, token)
}

// DataErrorOf turns a data reply (WRONGTYPE, a counter that is no integer)
// to a call on a lock's keys into a *lock.DataError naming the key at
// fault; other errors pass through unchanged. It is for code that runs its
// own scripts on those keys (inspect).
func DataErrorOf(ctx context.Context, c redis.Cmdable, err error, keys ...string) error {
	return hook.DataErrorOf(ctx, c, err, keys...)
}

// ScriptCommands lists, sorted, the Redis commands that the lock scripts
// call on the server, which the connected user must be allowed to run
// besides EVALSHA and EVAL themselves (an ACL applies inside scripts too).
func ScriptCommands() []string { return hook.ScriptCommands() }

// ParseValue describes the holder whose stored value at key is value
// (internal/lockwire parses it); ttl is the key's remaining time (-1 for
// none).
func ParseValue(key, value string, ttl time.Duration) lock.Holder {
	return hook.ParseValue.(func(string, string, time.Duration) lock.Holder)(key, value, ttl)
}

// ParseRedisson describes the holder of a Redisson lock hash; false when
// fields are not one.
func ParseRedisson(key string, fields map[string]string, ttl time.Duration) (lock.Holder, bool) {
	return hook.ParseRedisson.(func(string, map[string]string, time.Duration) (lock.Holder, bool))(key, fields, ttl)
}

// ParseRedissonAny is ParseRedisson for a plain or a read-write lock hash.
func ParseRedissonAny(key string, fields map[string]string, ttl time.Duration) (lock.Holder, bool) {
	return hook.ParseRedissonAny.(func(string, map[string]string, time.Duration) (lock.Holder, bool))(key, fields, ttl)
}

// ParseRedissonRW describes every holder of a Redisson read-write lock
// hash; false when fields are not one.
func ParseRedissonRW(key string, fields map[string]string, ttl time.Duration) ([]lock.Holder, bool) {
	return hook.ParseRedissonRW.(func(string, map[string]string, time.Duration) ([]lock.Holder, bool))(key, fields, ttl)
}
