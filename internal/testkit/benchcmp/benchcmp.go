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
		d, err := round(workers, n, floor)
		floorWall += d
		if err != nil {
			b.Error(err)
		}
		d, err = round(workers, n, op)
		opWall += d
		if err != nil {
			b.Error(err)
		}
		done += n
	}
	b.StopTimer()
	opNs := float64(opWall.Nanoseconds()) / float64(b.N)
	floorNs := float64(floorWall.Nanoseconds()) / float64(b.N)
	b.ReportMetric(opNs, "op-ns/op")
	b.ReportMetric(floorNs, "floor-ns/op")
	b.ReportMetric(floorNs/opNs, "ratio")
}

// Interleave is Compare for any number of contenders, outside testing.B:
// rounds times, it runs slices passes in which every op does sliceOps
// operations per worker in turn (the order rotating from pass to pass, so
// no op always follows the same one). It returns wall[op][round], the time
// each op spent in each round, every op having done the same
// workers×sliceOps×slices operations per round. Per-round ratios then show
// how far the machine's drift moves a ratio (their min–max), and sums over
// rounds give the overall ratio.
func Interleave(workers, sliceOps, slices, rounds int, ops ...Op) ([][]time.Duration, error) {
	workers, sliceOps, slices, rounds = max(workers, 1), max(sliceOps, 1), max(slices, 1), max(rounds, 1)
	wall := make([][]time.Duration, len(ops))
	for i := range wall {
		wall[i] = make([]time.Duration, rounds)
	}
	pass := 0
	for r := 0; r < rounds; r++ {
		for s := 0; s < slices; s++ {
			for k := range ops {
				i := (k + pass) % len(ops)
				d, err := round(workers, workers*sliceOps, ops[i])
				if err != nil {
					return wall, err
				}
				wall[i][r] += d
			}
			pass++
		}
	}
	return wall, nil
}

// round runs n operations spread over workers and returns the wall time and
// the first error.
func round(workers, n int, f Op) (time.Duration, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
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
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
		}(w, share)
	}
	wg.Wait()
	return time.Since(start), first
}
