package lock

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/lib/watchdog"
)

// Names the tests reach that are internal: the value's and Redisson's
// parsers as Holders, and the key scheme.
var (
	ParseValue       = parseValue
	ParseRedissonAny = parseRedissonAny
	AuxKey           = lockwire.AuxKey
	Channel          = lockwire.Channel
	IsRedissonAux    = lockwire.IsRedissonAux
)

const (
	KindFence     = lockwire.KindFence
	KindQueue     = lockwire.KindQueue
	KindQueueHB   = lockwire.KindQueueHB
	KindSem       = lockwire.KindSem
	KindSemVal    = lockwire.KindSemVal
	KindChannel   = lockwire.KindChannel
	KindWake      = lockwire.KindWake
	KindChecked   = lockwire.KindChecked
	KindWriters   = lockwire.KindWriters
	KindWaiting   = lockwire.KindWaiting
	RedissonRead  = lockwire.RedissonRead
	RedissonWrite = lockwire.RedissonWrite
)

// ParseRedisson describes the holder of a Redisson lock hash; false when
// fields are not one.
func ParseRedisson(key string, fields map[string]string, ttl time.Duration) (Holder, bool) {
	r, ok := lockwire.ParseRedisson(fields)
	if !ok {
		return Holder{}, false
	}
	return redissonHolder(key, r, ttl), true
}

// ParseRedissonRW describes every holder of a Redisson read-write lock hash.
func ParseRedissonRW(key string, fields map[string]string, ttl time.Duration) ([]Holder, bool) {
	rs, ok := lockwire.ParseRedissonRW(fields)
	if !ok {
		return nil, false
	}
	hs := make([]Holder, len(rs))
	for i, r := range rs {
		hs[i] = redissonHolder(key, r, ttl)
	}
	return hs, true
}

// The watchdog's schedule is tested on an injected clock and renewer,
// which no caller of the public API can give it: these reach the engine
// behind Lease.Watch.

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

// Renewer is the renewer Lease.Watch gives lease's watchdog.
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

// QueuedFor counts l's waiters for the lock called name: those in its hub
// and the one asleep on its wake-up stream.
func QueuedFor(l *Locker, name string) int { return l.b.queued(lockwire.Channel(l.Key(name))) }
