package limit_test

import (
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/limit"
)

// memoryAfter admits calls on a fresh key and returns its MEMORY USAGE.
func memoryAfter(t *testing.T, algo limit.Algorithm, calls int) int64 {
	t.Helper()
	l := newLimiter(t, algo, "100000/1h", 0)
	key := redistest.UniqueKey(t)
	ctx := redistest.Context(t)
	for i := 0; i < calls; i++ {
		r, err := l.Allow(ctx, key, 1)
		if err != nil || !r.Allowed {
			t.Fatalf("call %d: %+v %v", i, r, err)
		}
	}
	return srv.Int(t, "MEMORY", "USAGE", l.Key(key), "SAMPLES", "0")
}

func TestMemoryPerKey(t *testing.T) {
	for _, algo := range []limit.Algorithm{limit.GCRA, limit.SlidingWindow, limit.TokenBucket} {
		t.Run(string(algo), func(t *testing.T) {
			small, large := memoryAfter(t, algo, 10), memoryAfter(t, algo, 2000)
			// Constant up to a few bytes of longer digits.
			if large > small+16 {
				t.Fatalf("memory grew with load: %d bytes after 10 calls, %d after 2000", small, large)
			}
			t.Logf("%s: %d bytes after 10 calls, %d after 2000", algo, small, large)
		})
	}
	t.Run(string(limit.SlidingLog), func(t *testing.T) {
		m200, m2000 := memoryAfter(t, limit.SlidingLog, 200), memoryAfter(t, limit.SlidingLog, 2000)
		// One entry per admitted call: ten times the calls, roughly ten
		// times the bytes, and at least the 16-digit member per entry.
		if m2000 < 5*m200 || m2000 > 20*m200 || m2000 < 2000*16 {
			t.Fatalf("sliding log: %d bytes after 200 calls, %d after 2000; want proportional", m200, m2000)
		}
		t.Logf("sliding-log: %d bytes after 200 calls, %d after 2000", m200, m2000)
	})
}
