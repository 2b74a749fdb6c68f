package lock

import (
	"context"
	_ "embed"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

// FIFO waiting: AcquireOptions.FIFO serves waiters in arrival order. Each
// waiter joins a queue kept in two auxiliary keys of the lock key:
//
//	AuxKey(KindQueue, key)   ZSET  token -> arrival (server µs)
//	AuxKey(KindQueueHB, key) ZSET  token -> heartbeat expiry (server ms)
//
// Only the head of the queue may take the free lock. Every attempt refreshes
// the waiter's heartbeat; a waiter that stops trying (killed, partitioned)
// is dropped by the next attempt of anyone once its heartbeat is older than
// the queue TTL (3× the polling interval, at least 3s), so a dead waiter
// delays those behind it by at most that much. Both keys carry the TTL of
// the latest heartbeat, so an abandoned queue disappears by itself. A waiter
// that gives up (timeout, -n, interrupt) leaves at once and wakes the rest.
//
// Only the head can take the lock, so a release must wake it and not
// another waiter: the release appends to the head's wake-up stream
// (wake.lua, sleep.go). Waiters that listen on pub/sub instead (hub.go)
// learn their arrival from each refusal, and a release wakes, in every
// process, the local waiter that arrived first, which is the head whenever
// the head waits in that process.
//
// Fairness holds among waiters that all use FIFO: a plain Acquire of the
// same lock does not look at the queue and may take the lock first.

var (
	//go:embed fifo_acquire.lua
	fifoAcquireLua string
	//go:embed fifo_leave.lua
	fifoLeaveLua string

	fifoAcquireScript = lazyScript("fifoAcquire", func() string { return lockwire.ValueLua + fenceLua + holderLua + auxLua + fifoAcquireLua })
	fifoLeaveScript   = lazyScript("fifoLeave", func() string { return auxLua + lockwire.WakeLua + fifoLeaveLua })
)

func queueKeys(key string) []string {
	return []string{lockwire.AuxKey(lockwire.KindQueue, key), lockwire.AuxKey(lockwire.KindQueueHB, key)}
}

// queueTTL is how long a waiter keeps its place without a new attempt.
func (l *Locker) queueTTL() time.Duration {
	return max(3*l.poll, 3*time.Second)
}

func (s *single) fifoAcquire(ctx context.Context, key string, a acquireArgs, queueTTL time.Duration) (reply, error) {
	keys := append(append(append([]string{key, lockwire.AuxKey(lockwire.KindFence, key)}, queueKeys(key)...), semKeys(key)...), lockwire.AuxKey(lockwire.KindWriters, key))
	return s.writeRaw(ctx, fifoAcquireScript(), keys, 0, lockwire.DecodeFIFOAcquire,
		a.token, ms(a.ttl), lockwire.ValuePrefix(a.token), a.rest, ms(queueTTL), a.keep())
}

func (s *single) fifoLeave(ctx context.Context, key, token string) error {
	keys := append(queueKeys(key), lockwire.AuxKey(lockwire.KindWriters, key), key, lockwire.AuxKey(lockwire.KindWaiting, key))
	return s.dataError(ctx, fifoLeaveScript().Run(ctx, s.c, keys, token, lockwire.Channel(key), lockwire.AuxKey(lockwire.KindWake, key)).Err(), keys...)
}
