package lock_test

import (
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/testkit/benchcmp"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// benchClient is shared by the lock and the raw floor so both get the same
// pool: enough connections for every goroutine.
func benchClient(b *testing.B) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, PoolSize: 128, MinIdleConns: 64})
	b.Cleanup(func() { c.Close() })
	return c
}

// BenchmarkAcquireRelease: one acquire and one release per op, each
// goroutine on its own key, beside the raw floor of SET NX PX + DEL.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, g := range []int{1, 64} {
		b.Run(fmt.Sprintf("lock/goroutines=%d", g), func(b *testing.B) {
			l := lock.New(benchClient(b), nil)
			prefix := uniqueName(b)
			var id atomic.Int64
			parallel(b, g, func(next func() bool) {
				name := fmt.Sprintf("%s.%d", prefix, id.Add(1))
				for next() {
					lease, err := l.Acquire(ctx, name, 30*time.Second, nil)
					if err != nil {
						b.Error(err)
						return
					}
					if err := lease.Release(ctx); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
		b.Run(fmt.Sprintf("floor/goroutines=%d", g), func(b *testing.B) {
			c := benchClient(b)
			prefix := "lock:" + uniqueName(b)
			var id atomic.Int64
			parallel(b, g, func(next func() bool) {
				key := fmt.Sprintf("%s.%d", prefix, id.Add(1))
				for next() {
					tok := identity.Token()
					if ok, err := c.SetNX(ctx, key, tok, 30*time.Second).Result(); err != nil || !ok {
						b.Error("SET NX", ok, err)
						return
					}
					if err := c.Del(ctx, key).Err(); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}

// parallel runs body on g goroutines (g must be 1 or a multiple of
// GOMAXPROCS to be exact).
func parallel(b *testing.B, g int, body func(next func() bool)) {
	b.ReportAllocs()
	if g == 1 {
		// RunParallel's minimum is GOMAXPROCS goroutines.
		i := 0
		b.ResetTimer()
		body(func() bool { i++; return i <= b.N })
		return
	}
	b.SetParallelism(max(1, g/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) { body(pb.Next) })
}

// BenchmarkContention: 16 workers take turns on one lock, holding it 1ms
// each time, beside 16 goroutines doing the same with a sync.Mutex.
func BenchmarkContention(b *testing.B) {
	const workers, hold = 16, time.Millisecond
	b.Run("lock", func(b *testing.B) { contendLock(b, workers, hold, &lock.AcquireOptions{Wait: -1}) })
	b.Run("sync.Mutex", func(b *testing.B) {
		var mu sync.Mutex
		contend(b, workers, func(int) func() { mu.Lock(); return mu.Unlock }, hold)
	})
}

// BenchmarkPileUp: the seed's hot lock in one process, 200 goroutines on
// one lock holding it 2ms each time, plain and FIFO; acq/s is hand-offs per
// second.
func BenchmarkPileUp(b *testing.B) {
	const workers, hold = 200, 2 * time.Millisecond
	for _, fifo := range []bool{false, true} {
		b.Run(fmt.Sprintf("goroutines=%d/fifo=%v", workers, fifo), func(b *testing.B) {
			contendLock(b, workers, hold, &lock.AcquireOptions{Wait: -1, FIFO: fifo})
		})
	}
}

// contendLock is contend on one lock of a Locker, acquired with o.
func contendLock(b *testing.B, workers int, hold time.Duration, o *lock.AcquireOptions) {
	l := lock.New(benchClient(b), nil)
	name := uniqueName(b)
	contend(b, workers, func(int) func() {
		lease, err := l.Acquire(ctx, name, 30*time.Second, o)
		if err != nil {
			b.Fatal(err)
		}
		return func() {
			if err := lease.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}, hold)
}

func contend(b *testing.B, workers int, acquire func(worker int) (release func()), hold time.Duration) {
	var (
		next   atomic.Int64
		counts = make([]int, workers)
		waits  = make([][]time.Duration, workers)
		wg     sync.WaitGroup
	)
	b.ResetTimer()
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(b.N) {
				t := time.Now()
				release := acquire(w)
				waits[w] = append(waits[w], time.Since(t))
				counts[w]++
				time.Sleep(hold)
				release()
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	all := slices.Concat(waits...)
	slices.Sort(all)
	pct := func(p float64) float64 {
		return float64(all[min(len(all)-1, int(p*float64(len(all))))]) / float64(time.Millisecond)
	}
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "acq/s")
	b.ReportMetric(pct(0.50), "wait-p50-ms")
	b.ReportMetric(pct(0.99), "wait-p99-ms")
	b.ReportMetric(float64(all[len(all)-1])/float64(time.Millisecond), "wait-max-ms")
	if lo := slices.Min(counts); lo > 0 {
		b.ReportMetric(float64(slices.Max(counts))/float64(lo), "fairness-max/min")
	} else {
		b.ReportMetric(0, "fairness-max/min")
	}
}

// BenchmarkVsFloor is BenchmarkAcquireRelease with the lock and the floor
// alternating in rounds of 20 operations per worker, so their ratio holds
// on a machine whose speed drifts (go test -bench VsFloor reports it as
// "ratio": the lock's throughput over the floor's).
func BenchmarkVsFloor(b *testing.B) {
	for _, g := range []int{1, 64} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			c := benchClient(b)
			l := lock.New(c, nil)
			prefix := uniqueName(b)
			benchcmp.Compare(b, g, 20,
				func(w int) error {
					name := fmt.Sprintf("%s.%d", prefix, w)
					lease, err := l.Acquire(ctx, name, 30*time.Second, nil)
					if err != nil {
						return err
					}
					return lease.Release(ctx)
				},
				func(w int) error {
					key := fmt.Sprintf("lock:%s.floor.%d", prefix, w)
					tok := identity.Token()
					if ok, err := c.SetNX(ctx, key, tok, 30*time.Second).Result(); err != nil || !ok {
						return fmt.Errorf("SET NX: %v %v", ok, err)
					}
					return c.Del(ctx, key).Err()
				})
		})
	}
}
