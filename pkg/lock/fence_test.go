package lock_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

func TestFencesMonotonicWithoutGaps(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	f := l.Fences()
	if n, err := f.Peek(ctx, name); err != nil || n != 0 {
		t.Fatalf("fresh Peek %d %v", n, err)
	}
	var want int64
	for i := 0; i < 5; i++ {
		lease, err := l.Acquire(ctx, name, 10*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		want++
		if lease.Fence != want {
			t.Errorf("acquire %d: fence %d, want %d", i, lease.Fence, want)
		}
		// Refused attempts, waiting ones included, burn no numbers.
		for j := 0; j < 3; j++ {
			if _, err := l.Acquire(ctx, name, time.Second, nil); !errors.Is(err, lock.ErrNotObtained) {
				t.Fatal(err)
			}
		}
		if _, err := l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Wait: 20 * time.Millisecond}); !errors.Is(err, lock.ErrNotObtained) {
			t.Fatal(err)
		}
		if n, _ := f.Peek(ctx, name); n != want {
			t.Errorf("Peek %d, want %d", n, want)
		}
		// Next shares the counter with Acquire.
		n, err := f.Next(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		want++
		if n != want {
			t.Errorf("Next %d, want %d", n, want)
		}
		if err := l.Release(ctx, name, lease.Token); err != nil {
			t.Fatal(err)
		}
	}
	if p := redisDo(t, c, "PTTL", lock.AuxKey(lock.KindFence, l.Key(name))).(int64); p != -1 {
		t.Errorf("fence counter PTTL %d, want -1 (never expires)", p)
	}
}

func TestFenceCheck(t *testing.T) {
	l, c := newLocker(t, nil)
	f := l.Fences()
	res := uniqueName(t)
	if err := f.Check(ctx, res, 5); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{5, 3, 1} {
		var se *lock.StaleFenceError
		if err := f.Check(ctx, res, n); !errors.Is(err, lock.ErrStaleFence) || !errors.As(err, &se) || se.Highest != 5 || se.Fence != n || se.Resource != res {
			t.Errorf("Check(%d) after 5: %v", n, err)
		}
	}
	for _, n := range []int64{6, 10, 1 << 60, 1<<60 + 1} {
		if err := f.Check(ctx, res, n); err != nil {
			t.Errorf("Check(%d): %v", n, err)
		}
	}
	if err := f.Check(ctx, res, 1<<60); !errors.Is(err, lock.ErrStaleFence) {
		t.Errorf("Check(2^60) after 2^60+1: %v", err)
	}
	if p := redisDo(t, c, "PTTL", lock.AuxKey(lock.KindChecked, res)).(int64); p != -1 {
		t.Errorf("check record PTTL %d, want -1", p)
	}
}

// Concurrent checks with many repeated values: an atomic check accepts each
// value at most once, never accepts one at or below a value already
// recorded, and ends with the largest value recorded. A check that reads and
// writes in two steps fails this within a few rounds.
func TestFenceCheckIsAtomic(t *testing.T) {
	l, _ := newLocker(t, nil)
	f := l.Fences()
	for round := 0; round < 20; round++ {
		res := uniqueName(t)
		const checkers = 50
		var (
			mu       sync.Mutex
			accepted = map[int64]int{}
			wg       sync.WaitGroup
			maxN     int64
		)
		vals := make([]int64, checkers)
		for i := range vals {
			vals[i] = 1 + rand.Int64N(20)
			maxN = max(maxN, vals[i])
		}
		start := make(chan struct{})
		for _, n := range vals {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				err := f.Check(ctx, res, n)
				var se *lock.StaleFenceError
				switch {
				case err == nil:
					mu.Lock()
					accepted[n]++
					mu.Unlock()
				case errors.As(err, &se):
					if se.Highest < n {
						t.Errorf("refused %d with highest %d", n, se.Highest)
					}
				default:
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		for n, k := range accepted {
			if k > 1 {
				t.Errorf("round %d: fence %d accepted %d times", round, n, k)
			}
		}
		if err := f.Check(ctx, res, maxN); !errors.Is(err, lock.ErrStaleFence) {
			t.Errorf("round %d: the largest fence %d was not the one recorded: %v", round, maxN, err)
		}
		if err := f.Check(ctx, res, maxN+1); err != nil {
			t.Errorf("round %d: %v", round, err)
		}
	}
}
