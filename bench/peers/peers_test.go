package main

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/benchcmp"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"
)

// The same contenders as the interleaved driver, one at a time, for
// -cpuprofile, -memprofile and -benchmem:
//
//	go test -run '^$' -bench 'AcquireRelease/lockctl/g=1$' -benchmem -cpuprofile cpu.out
var srv *redistest.Server

func TestMain(m *testing.M) { redistest.Main(m, &srv) }

func bench(b *testing.B, g int, op benchcmp.Op) {
	b.ReportAllocs()
	if g == 1 {
		for i := 0; i < 10; i++ {
			if err := op(0); err != nil {
				b.Fatal(err)
			}
		}
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			if err := op(0); err != nil {
				b.Fatal(err)
			}
		}
		return
	}
	// RunParallel starts parallelism × GOMAXPROCS goroutines; each takes a
	// worker number of its own.
	b.SetParallelism(max(1, g/runtime.GOMAXPROCS(0)))
	workers := make(chan int, maxWorkers)
	for w := 0; w < maxWorkers; w++ {
		workers <- w
	}
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		w := <-workers
		for pb.Next() {
			if err := op(w); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

func client(b *testing.B) *redis.Client {
	c := newClient(srv.Addr, nil)
	b.Cleanup(func() { c.Close() })
	return c
}

func BenchmarkAcquireRelease(b *testing.B) {
	for _, ct := range lockContenders() {
		for _, g := range []int{1, 64} {
			b.Run(fmt.Sprintf("%s/g=%d", ct.name, g), func(b *testing.B) { bench(b, g, ct.make(client(b))) })
		}
	}
}

func BenchmarkLimit(b *testing.B) {
	for _, hot := range []bool{true, false} {
		keys := "distinct"
		if hot {
			keys = "hot"
		}
		for _, ct := range limitContenders(hot) {
			for _, g := range []int{1, 64} {
				b.Run(fmt.Sprintf("%s/%s/g=%d", ct.name, keys, g), func(b *testing.B) { bench(b, g, ct.make(client(b))) })
			}
		}
	}
}

// BenchmarkScriptRun: what go-redis's Script.Run (EVALSHA through the
// Script's hash, EVAL on NOSCRIPT) costs beside a precomputed EVALSHA of
// the same script, interleaved; ratio is Run's throughput over EvalSha's.
func BenchmarkScriptRun(b *testing.B) {
	c := client(b)
	ctx := context.Background()
	sha := trivial.Hash()
	keys := []string{"k"}
	if err := trivial.Load(ctx, c).Err(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	benchcmp.Compare(b, 1, 20,
		func(int) error { return trivial.Run(ctx, c, keys).Err() },
		func(int) error { return c.EvalSha(ctx, sha, keys).Err() })
}
