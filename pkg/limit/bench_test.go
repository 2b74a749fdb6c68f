package limit_test

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/benchcmp"
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

// benchCase is one cell of the benchmark matrix: goroutines × key pattern
// × algorithm, with the floor's client beside it.
type benchCase struct {
	name   string // "<algo>/g=<g>/<hot|distinct>"
	g      int
	hot    bool
	l      limit.Limiter
	client *redis.Client
}

// benchCases builds the matrix once for both benchmarks. A rate high enough
// that most calls are admitted keeps the keys busy.
func benchCases(b *testing.B, prefix string) []benchCase {
	client := srv.Client(b)
	if err := trivial.Load(context.Background(), client).Err(); err != nil {
		b.Fatal(err)
	}
	rate := limit.Rate{Limit: 1000000, Period: 1e9}
	var cases []benchCase
	for _, g := range []int{1, 64} {
		for _, hot := range []bool{true, false} {
			keys := "distinct"
			if hot {
				keys = "hot"
			}
			for _, algo := range limit.Algorithms {
				l, err := limit.New(client, rate, &limit.Options{Algorithm: algo, Prefix: prefix + string(algo) + ":"})
				if err != nil {
					b.Fatal(err)
				}
				cases = append(cases, benchCase{fmt.Sprintf("%s/g=%d/%s", algo, g, keys), g, hot, l, client})
			}
		}
	}
	return cases
}

// BenchmarkDecisions reports decisions/s per algorithm, with the floor of
// one EVALSHA of an empty script run once per goroutine count and key
// pattern.
func BenchmarkDecisions(b *testing.B) {
	floorDone := map[string]bool{}
	for _, c := range benchCases(b, "bench:") {
		keys := c.name[strings.Index(c.name, "/")+1:]
		if !floorDone[keys] {
			floorDone[keys] = true
			b.Run("floor-evalsha/"+keys, func(b *testing.B) {
				runBench(b, c.g, func(ctx context.Context, key string) error {
					return trivial.Run(ctx, c.client, []string{key}).Err()
				}, benchKeys(c.hot))
			})
		}
		b.Run(c.name, func(b *testing.B) {
			runBench(b, c.g, func(ctx context.Context, key string) error {
				_, err := c.l.Allow(ctx, key, 1)
				return err
			}, benchKeys(c.hot))
		})
	}
}

func runtimeProcs() int { return runtime.GOMAXPROCS(0) }

// BenchmarkVsFloor is BenchmarkDecisions with each algorithm and the
// EVALSHA floor alternating in rounds of 20 calls per worker, so their
// ratio ("ratio": the algorithm's throughput over the floor's) holds on a
// machine whose speed drifts.
func BenchmarkVsFloor(b *testing.B) {
	for _, c := range benchCases(b, "vs:") {
		b.Run(c.name, func(b *testing.B) {
			key := benchKeys(c.hot)
			benchcmp.Compare(b, c.g, 20,
				func(int) error { _, err := c.l.Allow(context.Background(), key(), 1); return err },
				func(int) error { return trivial.Run(context.Background(), c.client, []string{key()}).Err() })
		})
	}
}
