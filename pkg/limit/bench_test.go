package limit_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/lockctl/lockctl/internal/benchcmp"
	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/redis/go-redis/v9"
)

// The floor: one EVALSHA round trip of a script that does nothing. A
// decision cannot be cheaper than this; the algorithms are measured against
// it in the same run.
var trivial = redis.NewScript("return 1")

// benchKeys gives each call either the one hot key or a key of its own
// among many (distinct keys spread the load like real per-user limits).
func benchKeys(hot bool) func() string {
	if hot {
		return func() string { return "bench:hot" }
	}
	var n atomic.Int64
	return func() string { return "bench:k" + strconv.FormatInt(n.Add(1)%100000, 10) }
}

func runBench(b *testing.B, goroutines int, call func(ctx context.Context, key string) error, key func() string) {
	ctx := context.Background()
	if goroutines == 1 {
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := call(ctx, key()); err != nil {
				b.Fatal(err)
			}
		}
	} else {
		// RunParallel starts parallelism × GOMAXPROCS goroutines.
		p := goroutines / runtimeProcs()
		if p < 1 {
			p = 1
		}
		b.SetParallelism(p)
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			for pb.Next() {
				if err := call(ctx, key()); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "decisions/s")
}

func BenchmarkDecisions(b *testing.B) {
	client := srv.Client(b)
	if err := trivial.Load(context.Background(), client).Err(); err != nil {
		b.Fatal(err)
	}
	// A rate high enough that most calls are admitted and keys stay busy.
	rate := limit.Rate{Limit: 1000000, Period: 1e9}
	for _, g := range []int{1, 64} {
		for _, hot := range []bool{true, false} {
			keys := "distinct"
			if hot {
				keys = "hot"
			}
			b.Run(fmt.Sprintf("floor-evalsha/g=%d/%s", g, keys), func(b *testing.B) {
				runBench(b, g, func(ctx context.Context, key string) error {
					return trivial.Run(ctx, client, []string{key}).Err()
				}, benchKeys(hot))
			})
			for _, algo := range limit.Algorithms {
				l, err := limit.New(client, rate, &limit.Options{Algorithm: algo, Prefix: "bench:" + string(algo) + ":"})
				if err != nil {
					b.Fatal(err)
				}
				b.Run(fmt.Sprintf("%s/g=%d/%s", algo, g, keys), func(b *testing.B) {
					runBench(b, g, func(ctx context.Context, key string) error {
						_, err := l.Allow(ctx, key, 1)
						return err
					}, benchKeys(hot))
				})
			}
		}
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// BenchmarkVsFloor is BenchmarkDecisions with each algorithm and the
// EVALSHA floor alternating in rounds of 20 calls per worker, so their
// ratio ("ratio": the algorithm's throughput over the floor's) holds on a
// machine whose speed drifts.
func BenchmarkVsFloor(b *testing.B) {
	client := srv.Client(b)
	if err := trivial.Load(context.Background(), client).Err(); err != nil {
		b.Fatal(err)
	}
	rate := limit.Rate{Limit: 1000000, Period: 1e9}
	for _, g := range []int{1, 64} {
		for _, hot := range []bool{true, false} {
			keys := "distinct"
			if hot {
				keys = "hot"
			}
			for _, algo := range limit.Algorithms {
				l, err := limit.New(client, rate, &limit.Options{Algorithm: algo, Prefix: "vs:" + string(algo) + ":"})
				if err != nil {
					b.Fatal(err)
				}
				b.Run(fmt.Sprintf("%s/g=%d/%s", algo, g, keys), func(b *testing.B) {
					key := benchKeys(hot)
					benchcmp.Compare(b, g, 20,
						func(int) error { _, err := l.Allow(context.Background(), key(), 1); return err },
						func(int) error { return trivial.Run(context.Background(), client, []string{key()}).Err() })
				})
			}
		}
	}
}
