package lock

import (
	"context"
	_ "embed"
	"time"

	"github.com/lockctl/lockctl/internal/redisreply"
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
// another waiter: each refusal tells the waiter its arrival in the queue,
// and a release wakes, in every process, the local waiter that arrived
// first (hub.go). That one is the head whenever the head waits in that
// process.
//
// Fairness holds among waiters that all use FIFO: a plain Acquire of the
// same lock does not look at the queue and may take the lock first.

var (
	//go:embed fifo_acquire.lua
	fifoAcquireLua string
	//go:embed fifo_leave.lua
	fifoLeaveLua string

	fifoAcquireScript = lazyScript(func() string { return fenceLua + holderLua + auxLua + fifoAcquireLua })
	fifoLeaveScript   = lazyScript(func() string { return auxLua + wakeLua + fifoLeaveLua })
)

func queueKeys(key string) []string {
	return []string{AuxKey(KindQueue, key), AuxKey(KindQueueHB, key)}
}

// queueTTL is how long a waiter keeps its place without a new attempt.
func (l *Locker) queueTTL() time.Duration {
	return max(3*l.poll, 3*time.Second)
}

func (s *single) fifoAcquire(ctx context.Context, key string, a acquireArgs, queueTTL time.Duration) (reply, error) {
	keys := append(append(append([]string{key, AuxKey(KindFence, key)}, queueKeys(key)...), semKeys(key)...), AuxKey(KindWriters, key))
	return s.writeRaw(ctx, fifoAcquireScript(), keys, 0, decodeFIFO,
		a.token, ms(a.ttl), valuePrefix(a.token), a.rest, ms(queueTTL))
}

func (s *single) fifoLeave(ctx context.Context, key, token string) error {
	keys := append(queueKeys(key), AuxKey(KindWriters, key), key)
	return s.dataError(ctx, fifoLeaveScript().Run(ctx, s.c, keys, token, Channel(key), AuxKey(KindWake, key)).Err(), keys...)
}

// decodeFIFO reads fifo_acquire.lua's replies: acquire.lua's, with the
// number of waiters ahead and the waiter's arrival appended to a refusal.
var decodeFIFO = withQueue(decodeSemAcquire)

// withQueue makes a FIFO script's reply decoder from the decoder of the same
// replies without a place in the queue: a refusal (code 0) carries the
// waiters ahead and the waiter's arrival as its last two elements.
func withQueue(dec func(any) (reply, error)) func(any) (reply, error) {
	return func(v any) (reply, error) {
		a, ok := v.([]any)
		if !ok || len(a) < 4 {
			return dec(v)
		}
		if code, _ := a[0].(int64); code != 0 {
			return dec(v)
		}
		ahead, ok1 := a[len(a)-2].(int64)
		arrival, ok2 := a[len(a)-1].(int64)
		if !ok1 || !ok2 {
			return reply{}, redisreply.Unexpected("script reply", v)
		}
		r, err := dec(a[:len(a)-2])
		r.queue, r.arrival = ahead, arrival
		return r, err
	}
}
