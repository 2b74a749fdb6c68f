// Package hook carries functions of pkg/lock that its public API does not
// offer to the package that does, internal/lockinternal. pkg/lock fills
// these variables when it is initialised; nothing else writes them.
//
// It imports nothing of pkg/lock (which imports it), so the functions
// whose types name pkg/lock's are held as any: lockinternal gives them
// their types back, and its tests call every one.
package hook

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// Renewer extends a lease: what a watchdog renews with. Its Renew returns
// the TTL the lease now has; an error matching lock.ErrNotHeld,
// lock.ErrNotOwner or lock.ErrWrongType means the lease is gone for good.
type Renewer interface {
	Renew(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error)
}

var (
	// NewHeldError is func(kind error, h lock.Holder) *lock.HeldError.
	NewHeldError any
	// StartWatchdog is func(context.Context, Renewer, string, string,
	// time.Duration, time.Time, *lock.WatchdogOptions) (*lock.Watchdog, error).
	StartWatchdog any
	// ReleaseHold is func(context.Context, *lock.Locker, *lock.Lease) (int, error).
	ReleaseHold any
	// HeldSince is func(context.Context, *lock.Locker, string, string) (time.Time, bool, error).
	HeldSince any
	// ParseValue is func(key, value string, ttl time.Duration) lock.Holder.
	ParseValue any
	// ParseRedisson is func(key string, fields map[string]string, ttl
	// time.Duration) (lock.Holder, bool).
	ParseRedisson any
	// ParseRedissonAny is typed as ParseRedisson.
	ParseRedissonAny any
	// ParseRedissonRW is func(key string, fields map[string]string, ttl
	// time.Duration) ([]lock.Holder, bool).
	ParseRedissonRW any

	// DataErrorOf is lockinternal.DataErrorOf: a data reply on a lock's
	// keys as a *lock.DataError.
	DataErrorOf func(ctx context.Context, c redis.Cmdable, err error, keys ...string) error
	// ScriptCommands is lockinternal.ScriptCommands: the commands the lock
	// scripts call.
	ScriptCommands func() []string
)
