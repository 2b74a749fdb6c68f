// Package benchcmp measures an operation against its floor in one
// benchmark, alternating between them in short rounds, so that the drift of
// a shared, noisy machine (a VM whose loopback latency doubles for a few
// seconds) hits both sides alike and their ratio stays meaningful.
package benchcmp

import (
	"sync"
	"testing"
	"time"
)

// Op is one operation; it reports failure through b.
type Op func(worker int) error

// Compare runs op and floor alternately in rounds of roundOps operations per
// worker, on the given number of concurrent workers, b.N operations of each
// in all. It reports op-ns/op, floor-ns/op (wall time per operation across
// all workers, i.e. inverse throughput) and ratio = op throughput ÷ floor
// throughput.
func Compare(b *testing.B, workers, roundOps int, op, floor Op) {
	b.Helper()
	if workers < 1 {
		workers = 1
	}
	if roundOps < 1 {
		roundOps = 1
	}
	var opWall, floorWall time.Duration
	done := 0
	b.ResetTimer()
	for done < b.N {
		n := min(roundOps*workers, b.N-done)
		floorWall += round(b, workers, n, floor)
		opWall += round(b, workers, n, op)
		done += n
	}
	b.StopTimer()
	opNs := float64(opWall.Nanoseconds()) / float64(b.N)
	floorNs := float64(floorWall.Nanoseconds()) / float64(b.N)
	b.ReportMetric(opNs, "op-ns/op")
	b.ReportMetric(floorNs, "floor-ns/op")
	b.ReportMetric(floorNs/opNs, "ratio")
}

// round runs n operations spread over workers and returns the wall time.
func round(b *testing.B, workers, n int, f Op) time.Duration {
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		share := n / workers
		if w < n%workers {
			share++
		}
		wg.Add(1)
		go func(w, share int) {
			defer wg.Done()
			for i := 0; i < share; i++ {
				if err := f(w); err != nil {
					b.Error(err)
					return
				}
			}
		}(w, share)
	}
	wg.Wait()
	return time.Since(start)
}
