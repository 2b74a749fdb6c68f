package lock_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

func TestSemaphoreBoundsHoldersUnderConcurrency(t *testing.T) {
	l, c := newLocker(t, &lock.Options{PollInterval: 50 * time.Millisecond})
	name := uniqueName(t)
	const limit, workers = 3, 12
	var inside, most atomic.Int64
	fences := make(chan int64, workers)
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Limit: limit, Wait: 30 * time.Second})
			if err != nil {
				t.Error(err)
				return
			}
			n := inside.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			time.Sleep(50 * time.Millisecond)
			inside.Add(-1)
			fences <- lease.Fence()
			if err := lease.Release(ctx); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	close(fences)
	if m := most.Load(); m != limit {
		t.Errorf("at most %d holders at once, want exactly %d", m, limit)
	}
	seen := map[int64]bool{}
	for f := range fences {
		if seen[f] {
			t.Errorf("fence %d issued twice", f)
		}
		seen[f] = true
	}
	if len(seen) != workers {
		t.Errorf("%d fences for %d acquisitions", len(seen), workers)
	}
	key := l.Key(name)
	if n := redisDo(t, c, "EXISTS", lock.AuxKey(lock.KindSem, key), lock.AuxKey(lock.KindSemVal, key), key).(int64); n != 0 {
		t.Errorf("%d semaphore keys left after the last release", n)
	}
}

func TestSemaphoreSlotsExpireAndCarryTTLs(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	key := l.Key(name)
	a, err := l.Acquire(ctx, name, 300*time.Millisecond, &lock.AcquireOptions{Limit: 1, Owner: "dies"})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{lock.AuxKey(lock.KindSem, key), lock.AuxKey(lock.KindSemVal, key)} {
		if p := redisDo(t, c, "PTTL", k).(int64); p <= 0 || p > 300 {
			t.Errorf("PTTL %s = %d", k, p)
		}
	}
	raw := redisDo(t, c, "HGET", lock.AuxKey(lock.KindSemVal, key), a.Token()).(string)
	if h := lock.ParseValue(key, raw, -1); h.Owner != "dies" || h.Limit != 1 || h.Fence != a.Fence() {
		t.Errorf("stored holder %+v from %s", h, raw)
	}
	_, err = l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Limit: 1})
	var held *lock.HeldError
	if !errors.As(err, &held) || !errors.Is(err, lock.ErrNotObtained) || held.Holder.Kind() != "semaphore" || held.Holder.Owner != "dies" || held.Holder.Holders != 1 {
		t.Fatalf("full semaphore: %v (%+v)", err, held)
	}
	// The holder never releases: its slot frees by its TTL.
	b, err := l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Limit: 1, Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := renewToken(ctx, l, name, a.Token(), time.Second); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("renewing an expired slot: %v", err)
	}
	if _, err := renewToken(ctx, l, name, b.Token(), 5*time.Second); err != nil {
		t.Errorf("renew by token: %v", err)
	}
	if err := releaseToken(ctx, l, name, b.Token()); err != nil {
		t.Errorf("release by token: %v", err)
	}
	if err := releaseToken(ctx, l, name, b.Token()); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second release: %v", err)
	}
}
