package main

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// lockFunc blocks until worker w holds the contended lock and returns how to
// let it go.
type lockFunc func(w int) (unlock func() error, err error)

type waiter struct {
	name string
	make func(c *redis.Client) lockFunc
}

// waiters contend for one key each. redislock has no wake-up: it polls with
// the retry strategy it is given, so it appears twice, with a tight linear
// poll (best hand-off latency, most server load) and with its exponential
// backoff (what its README recommends, from 16ms; here from 4ms).
func waiters() []waiter {
	return []waiter{
		{"lockctl", func(c *redis.Client) lockFunc {
			return lockctlWaiter(lock.New(c, nil), "peers.contended.plain", false)
		}},
		{"lockctl --fifo", func(c *redis.Client) lockFunc {
			return lockctlWaiter(lock.New(c, nil), "peers.contended.fifo", true)
		}},
		{"lockctl --fifo, a Locker per worker", func(c *redis.Client) lockFunc {
			// Each worker alone in its Locker's waiter queue, as if in a
			// process of its own, on the same client: tells FIFO's local
			// queueing apart from FIFO in Redis.
			ls := make([]lockFunc, maxWorkers)
			for i := range ls {
				ls[i] = lockctlWaiter(lock.New(c, nil), "peers.contended.fifo-own", true)
			}
			return func(w int) (func() error, error) { return ls[w](w) }
		}},
		{"redislock linear 1ms", func(c *redis.Client) lockFunc {
			rl := redislock.New(c)
			return func(int) (func() error, error) {
				lk, err := rl.Obtain(context.Background(), "peers:contended:redislock-linear", ttl,
					&redislock.Options{RetryStrategy: redislock.LinearBackoff(time.Millisecond)})
				if err != nil {
					return nil, err
				}
				return func() error { return lk.Release(context.Background()) }, nil
			}
		}},
		{"redislock exp 4–16ms", func(c *redis.Client) lockFunc {
			rl := redislock.New(c)
			return func(int) (func() error, error) {
				// A strategy per call: exponentialBackoff counts its retries.
				lk, err := rl.Obtain(context.Background(), "peers:contended:redislock-exp", ttl,
					&redislock.Options{RetryStrategy: redislock.ExponentialBackoff(time.Millisecond, 16*time.Millisecond)})
				if err != nil {
					return nil, err
				}
				return func() error { return lk.Release(context.Background()) }, nil
			}
		}},
		{"sync.Mutex", func(*redis.Client) lockFunc {
			var mu sync.Mutex
			unlock := func() error { mu.Unlock(); return nil }
			return func(int) (func() error, error) { mu.Lock(); return unlock, nil }
		}},
	}
}

func lockctlWaiter(l *lock.Locker, name string, fifo bool) lockFunc {
	o := &lock.AcquireOptions{Wait: -1, FIFO: fifo}
	return func(int) (func() error, error) {
		lease, err := l.Acquire(context.Background(), name, ttl, o)
		if err != nil {
			return nil, err
		}
		return func() error { return lease.Release(context.Background()) }, nil
	}
}

// contendResult is one contender's share of one round.
type contendResult struct {
	elapsed time.Duration
	waits   []time.Duration // time inside the lock call, per acquisition
	counts  []int           // acquisitions per worker
}

// contend has workers take the lock n times in all, each holding it for
// hold.
func contend(workers, n int, hold time.Duration, lf lockFunc) (contendResult, error) {
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		res   = contendResult{counts: make([]int, workers)}
		waits = make([][]time.Duration, workers)
	)
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				t := time.Now()
				unlock, err := lf(w)
				if err == nil {
					waits[w] = append(waits[w], time.Since(t))
					res.counts[w]++
					time.Sleep(hold)
					err = unlock()
				}
				if err != nil {
					mu.Lock()
					first = err
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.waits = slices.Concat(waits...)
	return res, first
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(p*float64(len(sorted))))]
}
