package lock_test

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
)

func TestFencesGrow(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	f := l.Fences()
	if n, err := f.Peek(ctx, name); err != nil || n != 0 {
		t.Fatalf("fresh Peek %d %v", n, err)
	}
	var last int64
	for i := 0; i < 5; i++ {
		floor := serverMicros(t, c)
		lease, err := l.Acquire(ctx, name, 10*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		if lease.Fence() <= last || lease.Fence() < floor {
			t.Errorf("acquire %d: fence %d, want more than %d and at least the server's time %d", i, lease.Fence(), last, floor)
		}
		last = lease.Fence()
		// Refused attempts, waiting ones included, issue no fence.
		for j := 0; j < 3; j++ {
			if _, err := l.Acquire(ctx, name, time.Second, nil); !errors.Is(err, lock.ErrNotObtained) {
				t.Fatal(err)
			}
		}
		if _, err := l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Wait: 20 * time.Millisecond}); !errors.Is(err, lock.ErrNotObtained) {
			t.Fatal(err)
		}
		if n, _ := f.Peek(ctx, name); n != last {
			t.Errorf("Peek %d, want %d", n, last)
		}
		// Next shares the counter with Acquire.
		n, err := f.Next(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if n <= last {
			t.Errorf("Next %d, want more than %d", n, last)
		}
		last = n
		if err := releaseToken(ctx, l, name, lease.Token()); err != nil {
			t.Fatal(err)
		}
	}
	if p := redisDo(t, c, "PTTL", lock.AuxKey(lock.KindFence, l.Key(name))).(int64); p != -1 {
		t.Errorf("fence counter PTTL %d, want -1 (never expires)", p)
	}
}

// A counter ahead of the clock (raised by Redlock's write-back, or by hand)
// goes on by one, exactly, beyond what a Lua double holds; one that is not
// an integer issues no fence.
func TestFenceCounterAheadOfTheClock(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	counter := lock.AuxKey(lock.KindFence, l.Key(name))
	redisDo(t, c, "SET", counter, "9007199254740993") // 2^53 + 1
	lease, err := l.Acquire(ctx, name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if lease.Fence() != 9007199254740994 {
		t.Errorf("fence %d, want 9007199254740994", lease.Fence())
	}
	if n, err := l.Fences().Next(ctx, name); err != nil || n != 9007199254740995 {
		t.Errorf("next %d, %v", n, err)
	}
	redisDo(t, c, "SET", counter, "-5")
	if n, err := l.Fences().Next(ctx, name); err != nil || n < serverMicros(t, c)-time.Minute.Microseconds() {
		t.Errorf("next after a negative counter: %d, %v", n, err)
	}
	redisDo(t, c, "SET", counter, "x")
	if _, err := l.Fences().Next(ctx, name); err == nil {
		t.Error("a counter that is not an integer issued a fence")
	}
}

func TestFenceCheck(t *testing.T) {
	l, c := newLocker(t, nil)
	f := l.Fences()
	res := uniqueName(t)
	if err := f.Check(ctx, res, 5, ""); err != nil {
		t.Fatal(err)
	}
	for _, n := range []int64{5, 3, 1} {
		var se *lock.StaleFenceError
		if err := f.Check(ctx, res, n, ""); !errors.Is(err, lock.ErrStaleFence) || !errors.As(err, &se) || se.Highest != 5 || se.Fence != n || se.Resource != res {
			t.Errorf("Check(%d) after 5: %v", n, err)
		}
	}
	for _, n := range []int64{6, 10, 1 << 60, 1<<60 + 1} {
		if err := f.Check(ctx, res, n, ""); err != nil {
			t.Errorf("Check(%d): %v", n, err)
		}
	}
	if err := f.Check(ctx, res, 1<<60, ""); !errors.Is(err, lock.ErrStaleFence) {
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
				err := f.Check(ctx, res, n, "")
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
		if err := f.Check(ctx, res, maxN, ""); !errors.Is(err, lock.ErrStaleFence) {
			t.Errorf("round %d: the largest fence %d was not the one recorded: %v", round, maxN, err)
		}
		if err := f.Check(ctx, res, maxN+1, ""); err != nil {
			t.Errorf("round %d: %v", round, err)
		}
	}
}

// A holder writes many times with one fence: the highest fence is accepted
// again from the token that presented it, and from no one else.
func TestFenceCheckRepeatsForItsHolder(t *testing.T) {
	l, c := newLocker(t, nil)
	f := l.Fences()
	res := uniqueName(t)
	a, b := strings.Repeat("a", 32), strings.Repeat("b", 32)
	for i := 0; i < 3; i++ {
		if err := f.Check(ctx, res, 7, a); err != nil {
			t.Fatalf("holder's write %d: %v", i+1, err)
		}
	}
	for who, tok := range map[string]string{"another holder": b, "no token": ""} {
		var se *lock.StaleFenceError
		err := f.Check(ctx, res, 7, tok)
		if !errors.As(err, &se) || se.Highest != 7 || !strings.Contains(err.Error(), "another holder already wrote with fence 7") {
			t.Errorf("fence 7 from %s: %v", who, err)
		}
	}
	var se *lock.StaleFenceError
	if err := f.Check(ctx, res, 6, a); !errors.As(err, &se) || se.Highest != 7 || !strings.Contains(err.Error(), "7 is newer") {
		t.Errorf("a lower fence from the holder: %v", err)
	}
	if err := f.Check(ctx, res, 8, b); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx, res, 7, a); !errors.Is(err, lock.ErrStaleFence) {
		t.Errorf("the old holder after a newer one: %v", err)
	}
	if err := f.Check(ctx, res, 8, b); err != nil {
		t.Errorf("the new holder again: %v", err)
	}
	// A record without a token (written before tokens were recorded, or
	// by a caller without one) is repeated by no one.
	redisDo(t, c, "SET", lock.AuxKey(lock.KindChecked, res), "9")
	if err := f.Check(ctx, res, 9, a); !errors.Is(err, lock.ErrStaleFence) {
		t.Errorf("fence 9 on a record without a token: %v", err)
	}
	if err := f.Check(ctx, res, 10, "has space"); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("a token with a space: %v", err)
	}
}

// allkeys-* eviction can evict a fence counter itself (it has no TTL, which
// only protects it from volatile-*). With the server's time as the floor, the
// next fence is still greater than every fence issued before.
func TestFencesGrowAfterTheCounterIsEvicted(t *testing.T) {
	s, err := redistest.Start(&redistest.Options{Args: []string{"--maxmemory-policy", "allkeys-random"}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c := s.Client(t)
	l := lock.New(c, nil)
	name := uniqueName(t)
	counter := lock.AuxKey(lock.KindFence, l.Key(name))
	var last int64
	for i := 0; i < 6; i++ {
		if last, err = l.Fences().Next(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	used, err := c.MemoryUsage(ctx, counter).Result()
	if err != nil {
		t.Fatal(err)
	}
	info := redisDo(t, c, "INFO", "memory").(string)
	var mem int64
	for _, line := range strings.Split(info, "\r\n") {
		if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
			mem, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	redisDo(t, c, "CONFIG", "SET", "maxmemory", strconv.FormatInt(mem+1<<20, 10))
	blob := strings.Repeat("x", 1024)
	for i := 0; ; i++ {
		if n := redisDo(t, c, "EXISTS", counter).(int64); n == 0 {
			break
		}
		if i == 200 {
			t.Fatalf("the counter (%d bytes) survived %d MB of filler", used, i/10)
		}
		p := c.Pipeline()
		for j := 0; j < 100; j++ {
			p.Set(ctx, fmt.Sprintf("filler:%d:%d", i, j), blob, 0)
		}
		if _, err := p.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	n, err := l.Fences().Next(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if n <= last {
		t.Errorf("after eviction, fence %d; before, %d", n, last)
	}
}

// Every way of taking a fence has the clock floor: a semaphore slot, a FIFO
// acquisition, a plain one and Fences.Next share the counter, and each fence
// is at least the server's time when it was issued.
func TestEveryFenceHasTheClockFloor(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	var last int64
	for _, o := range []*lock.AcquireOptions{{Limit: 2}, {FIFO: true}, nil} {
		floor := serverMicros(t, c)
		lease, err := l.Acquire(ctx, name, 10*time.Second, o)
		if err != nil {
			t.Fatal(err)
		}
		if lease.Fence() < floor || lease.Fence() <= last {
			t.Errorf("%+v: fence %d, want at least %d and more than %d", o, lease.Fence(), floor, last)
		}
		last = lease.Fence()
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A fence counter that is not a decimal string stops the acquisition and is
// left as it was: the script writes the clock into the counter before it
// has read it, and must put back what it found.
func TestFenceCounterOfAnotherKindIsLeftAlone(t *testing.T) {
	l, c := newLocker(t, nil)
	for _, tc := range []struct {
		name string
		set  []any
		get  []any
		want any
	}{
		{"junk", []any{"SET", "", "x"}, []any{"GET", ""}, "x"},
		{"hash", []any{"HSET", "", "f", "v"}, []any{"HGET", "", "f"}, "v"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := uniqueName(t)
			counter := lock.AuxKey(lock.KindFence, l.Key(name))
			tc.set[1], tc.get[1] = counter, counter
			redisDo(t, c, tc.set...)
			if _, err := l.Acquire(ctx, name, 10*time.Second, nil); err == nil {
				t.Fatal("acquired with a counter that issues no fence")
			}
			if got := redisDo(t, c, tc.get...); got != tc.want {
				t.Errorf("counter now %v, want %v", got, tc.want)
			}
			if n := redisDo(t, c, "EXISTS", l.Key(name)).(int64); n != 0 {
				t.Error("the lock key was written")
			}
		})
	}
}
