package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

func shared(wait time.Duration) *lock.AcquireOptions {
	return &lock.AcquireOptions{Shared: true, Wait: wait}
}

// waitListed waits until n exclusive acquirers are listed as waiting.
func waitListed(t *testing.T, c *redis.Client, key string, n int64) {
	t.Helper()
	w := lock.AuxKey(lock.KindWriters, key)
	for end := time.Now().Add(5 * time.Second); ; {
		if got := redisDo(t, c, "ZCARD", w).(int64); got == n {
			return
		}
		if time.Now().After(end) {
			t.Fatalf("%s: %d exclusive acquirers listed, want %d", w, redisDo(t, c, "ZCARD", w), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

type result struct {
	lease *lock.Lease
	err   error
	at    time.Time
}

func acquireAsync(l *lock.Locker, name string, o *lock.AcquireOptions) <-chan result {
	ch := make(chan result, 1)
	go func() {
		lease, err := l.Acquire(ctx, name, 10*time.Second, o)
		ch <- result{lease, err, time.Now()}
	}()
	return ch
}

func notYet(t *testing.T, ch <-chan result, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s got in too early: %+v, %v", what, r.lease, r.err)
	case <-time.After(150 * time.Millisecond):
	}
}

func got(t *testing.T, ch <-chan result, what string) *lock.Lease {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s: %v", what, r.err)
		}
		return r.lease
	case <-time.After(5 * time.Second):
		t.Fatalf("%s did not get in", what)
	}
	return nil
}

func TestSharedHoldersOverlapAndAWaitingWriterGoesFirst(t *testing.T) {
	// A long poll: a prompt hand-off can only come from a wake-up.
	l, c := newLocker(t, &lock.Options{PollInterval: 20 * time.Second})
	name := uniqueName(t)
	key := l.Key(name)
	var readers []*lock.Lease
	for i := 0; i < 5; i++ {
		lease, err := l.Acquire(ctx, name, 10*time.Second, shared(0))
		if err != nil {
			t.Fatalf("shared holder %d: %v", i+1, err)
		}
		if !lease.Shared() {
			t.Fatalf("lease %d is not marked shared", i+1)
		}
		readers = append(readers, lease)
	}
	if n := redisDo(t, c, "ZCARD", lock.AuxKey(lock.KindSem, key)).(int64); n != 5 {
		t.Fatalf("%d shared slots, want 5", n)
	}
	// An exclusive acquire that does not wait is refused by the readers.
	_, err := l.Acquire(ctx, name, time.Second, nil)
	var held *lock.HeldError
	if !errors.As(err, &held) || held.Holder.Kind() != "shared" || held.Holder.Holders != 5 || !held.Holder.Shared {
		t.Fatalf("exclusive -n among 5 readers: %v (%+v)", err, held)
	}
	// It did not list itself: it does not wait.
	if n := redisDo(t, c, "EXISTS", lock.AuxKey(lock.KindWriters, key)).(int64); n != 0 {
		t.Fatal("a non-waiting exclusive acquire listed itself as waiting")
	}

	writer := acquireAsync(l, name, &lock.AcquireOptions{Wait: 20 * time.Second})
	waitListed(t, c, key, 1)

	// A sixth reader is refused while the writer waits...
	_, err = l.Acquire(ctx, name, time.Second, shared(0))
	if !errors.As(err, &held) || held.Holder.Kind() != "writers" || held.Holder.Queue != 1 || held.Holder.Holders != 5 {
		t.Fatalf("sixth reader while a writer waits: %v (%+v)", err, held)
	}
	// ... and waits behind it.
	sixth := acquireAsync(l, name, shared(20*time.Second))

	for i, r := range readers {
		notYet(t, writer, "the writer")
		if err := r.Release(ctx); err != nil {
			t.Fatalf("release reader %d: %v", i+1, err)
		}
	}
	released := time.Now()
	w := got(t, writer, "the writer")
	if d := time.Since(released); d > 5*time.Second {
		t.Errorf("the writer got in %s after the last reader left: woken by the poll, not the release", d)
	}
	if w.Fence() <= readers[0].Fence() {
		t.Errorf("writer's fence %d is not above the readers' %d", w.Fence(), readers[0].Fence())
	}
	if n := redisDo(t, c, "EXISTS", lock.AuxKey(lock.KindWriters, key)).(int64); n != 0 {
		t.Error("the writer is still listed as waiting after it got the lock")
	}
	notYet(t, sixth, "the sixth reader (the writer holds the lock)")
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	s := got(t, sixth, "the sixth reader")
	if s.Fence() != w.Fence() {
		t.Errorf("a reader after the writer holds fence %d, want the writer's %d (the current fence)", s.Fence(), w.Fence())
	}
	if err := s.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := redisDo(t, c, "EXISTS", key, lock.AuxKey(lock.KindSem, key), lock.AuxKey(lock.KindSemVal, key),
		lock.AuxKey(lock.KindWriters, key)).(int64); n != 0 {
		t.Errorf("%d keys left after the last release", n)
	}
}

func TestSharedFencesAreTheCurrentOne(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	key := l.Key(name)
	floor := serverMicros(t, c)
	// No counter yet: the first shared holder starts it from the clock.
	a, err := l.Acquire(ctx, name, 10*time.Second, shared(0))
	if err != nil {
		t.Fatal(err)
	}
	if a.Fence() < floor {
		t.Errorf("first fence %d is below the clock floor %d", a.Fence(), floor)
	}
	b, err := l.Acquire(ctx, name, 10*time.Second, shared(0))
	if err != nil {
		t.Fatal(err)
	}
	if b.Fence() != a.Fence() {
		t.Errorf("two readers hold fences %d and %d, want the same", a.Fence(), b.Fence())
	}
	if n, _ := c.Get(ctx, lock.AuxKey(lock.KindFence, key)).Int64(); n != a.Fence() {
		t.Errorf("counter %d after shared acquisitions, want %d", n, a.Fence())
	}
	for _, x := range []*lock.Lease{a, b} {
		if err := x.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	w, err := l.Acquire(ctx, name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if w.Fence() <= a.Fence() {
		t.Errorf("exclusive fence %d not above the readers' %d", w.Fence(), a.Fence())
	}
	_ = w.Release(ctx)
}

func TestSharedAndSemaphoreExcludeEachOther(t *testing.T) {
	l, _ := newLocker(t, nil)
	name := uniqueName(t)
	s, err := l.Acquire(ctx, name, 10*time.Second, shared(0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Limit: 3})
	var le *lock.DataError
	if !errors.As(err, &le) || le.Err != lock.ErrInvalid || le.Limit != 0 || le.WantLimit != 3 || !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("semaphore among shared holders: %v", err)
	}
	_ = s.Release(ctx)
	m, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire(ctx, name, time.Second, shared(0))
	if !errors.As(err, &le) || le.Err != lock.ErrInvalid || le.Limit != 3 || le.WantLimit != 0 {
		t.Fatalf("shared among semaphore holders: %v", err)
	}
	_ = m.Release(ctx)
	if _, err := l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Shared: true, Limit: 2}); !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("Shared with Limit: %v, want ErrInvalid", err)
	}
	// An exclusive holder keeps shared ones out.
	x, err := l.Acquire(ctx, name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire(ctx, name, time.Second, shared(0))
	var held *lock.HeldError
	if !errors.As(err, &held) || held.Holder.Token != x.Token() {
		t.Fatalf("shared while an exclusive holder holds: %v", err)
	}
	_ = x.Release(ctx)
}

func TestSharedRenewReleaseAndReentry(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	key := l.Key(name)
	s, err := l.Acquire(ctx, name, 2*time.Second, shared(0))
	if err != nil {
		t.Fatal(err)
	}
	// Renew by name and token, with the lease's own TTL.
	ttl, err := renewToken(ctx, l, name, s.Token(), 0)
	if err != nil || ttl != 2*time.Second {
		t.Fatalf("renew: %s, %v", ttl, err)
	}
	in, err := l.Reenter(ctx, name, s.Token())
	if err != nil {
		t.Fatal(err)
	}
	if !in.Shared() || in.Holds() != 2 || in.Fence() != s.Fence() {
		t.Fatalf("re-entered lease %+v", in)
	}
	if left, err := releaseHold(ctx, in); err != nil || left != 1 {
		t.Fatalf("inner release: %d left, %v", left, err)
	}
	// Another token cannot release it.
	if err := releaseToken(ctx, l, name, "not-the-token"); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("release by a stranger: %v", err)
	}
	if err := releaseToken(ctx, l, name, s.Token()); err != nil {
		t.Fatal(err)
	}
	if n := redisDo(t, c, "EXISTS", lock.AuxKey(lock.KindSem, key)).(int64); n != 0 {
		t.Fatal("slot left after the last hold")
	}
	// Get describes shared holders.
	s2, _ := l.Acquire(ctx, name, 2*time.Second, shared(0))
	h, err := l.Get(ctx, name)
	if err != nil || h.Kind() != "shared" || !h.Shared || h.Holders != 1 {
		t.Fatalf("Get: %+v, %v", h, err)
	}
	_ = s2.Release(ctx)
}

func TestAWriterThatGivesUpLetsReadersIn(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	key := l.Key(name)
	s, err := l.Acquire(ctx, name, 10*time.Second, shared(0))
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Wait: 300 * time.Millisecond})
	if !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("writer's wait: %v", err)
	}
	if n := redisDo(t, c, "EXISTS", lock.AuxKey(lock.KindWriters, key)).(int64); n != 0 {
		t.Fatal("a writer that gave up is still listed")
	}
	r, err := l.Acquire(ctx, name, time.Second, shared(0))
	if err != nil {
		t.Fatalf("reader after the writer gave up: %v", err)
	}
	_ = r.Release(ctx)
	_ = s.Release(ctx)

	// A writer that died (no leave, no more attempts) is dropped once its
	// listing expires.
	s, _ = l.Acquire(ctx, name, 10*time.Second, shared(0))
	w := lock.AuxKey(lock.KindWriters, key)
	ms := serverMicros(t, c) / 1000
	redisDo(t, c, "ZADD", w, ms+2000, "dead-writer")
	if _, err := l.Acquire(ctx, name, time.Second, shared(0)); err == nil {
		t.Fatal("a reader got in past a listed writer")
	}
	time.Sleep(2100 * time.Millisecond)
	r, err = l.Acquire(ctx, name, time.Second, shared(0))
	if err != nil {
		t.Fatalf("reader after the dead writer's listing expired: %v", err)
	}
	_ = r.Release(ctx)
	_ = s.Release(ctx)
}

func TestSharedFIFOOrdersReadersAndWriters(t *testing.T) {
	l, c := newLocker(t, &lock.Options{PollInterval: 2 * time.Second})
	name := uniqueName(t)
	key := l.Key(name)
	fifo := func(sh bool) *lock.AcquireOptions {
		return &lock.AcquireOptions{FIFO: true, Shared: sh, Wait: 20 * time.Second}
	}
	x, err := l.Acquire(ctx, name, 10*time.Second, fifo(false))
	if err != nil {
		t.Fatal(err)
	}
	q := lock.AuxKey(lock.KindQueue, key)
	queued := func(n int64) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); redisDo(t, c, "ZCARD", q).(int64) != n; {
			if time.Now().After(end) {
				t.Fatalf("queue has %d waiters, want %d", redisDo(t, c, "ZCARD", q), n)
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	a := acquireAsync(l, name, fifo(true))
	queued(1)
	b := acquireAsync(l, name, fifo(false))
	queued(2)
	cc := acquireAsync(l, name, fifo(true))
	queued(3)
	if err := x.Release(ctx); err != nil {
		t.Fatal(err)
	}
	ra := got(t, a, "reader A (first in the queue)")
	notYet(t, b, "writer B (reader A holds)")
	notYet(t, cc, "reader C (writer B arrived before it)")
	if err := ra.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wb := got(t, b, "writer B")
	notYet(t, cc, "reader C (writer B holds)")
	if err := wb.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rc := got(t, cc, "reader C")
	_ = rc.Release(ctx)
}

func TestCheckSharedAcceptsTheCurrentFenceFromEveryReader(t *testing.T) {
	l, _ := newLocker(t, nil)
	f := l.Fences()
	res := uniqueName(t)
	// The writer with fence 10 writes.
	if err := f.Check(ctx, res, 10, "writer"); err != nil {
		t.Fatal(err)
	}
	// Readers holding 10 all pass.
	for i := 0; i < 3; i++ {
		if err := f.CheckShared(ctx, res, 10); err != nil {
			t.Fatalf("reader %d: %v", i, err)
		}
	}
	// The writer, whose lease readers could only follow once it was gone,
	// may not repeat its fence now.
	if err := f.Check(ctx, res, 10, "writer"); !errors.Is(err, lock.ErrStaleFence) {
		t.Fatalf("the old writer after readers: %v, want stale", err)
	}
	// A newer writer's fence shuts out readers of the old one.
	if err := f.Check(ctx, res, 11, "writer2"); err != nil {
		t.Fatal(err)
	}
	if err := f.CheckShared(ctx, res, 10); !errors.Is(err, lock.ErrStaleFence) {
		t.Fatalf("a reader of fence 10 after fence 11: %v, want stale", err)
	}
	if err := f.CheckShared(ctx, res, 12); err != nil {
		t.Fatal(err)
	}
	if err := f.Check(ctx, res, 11, "writer2"); !errors.Is(err, lock.ErrStaleFence) {
		t.Fatalf("writer 11 after a reader of 12: %v", err)
	}
}

func TestLocalSharedWaitersAllEnterWhenTheWriterLeaves(t *testing.T) {
	// A long poll: only wake-ups bring the waiters in quickly.
	l, _ := newLocker(t, &lock.Options{PollInterval: 20 * time.Second})
	name := uniqueName(t)
	w, err := l.Acquire(ctx, name, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var waiting []<-chan result
	for i := 0; i < 4; i++ {
		waiting = append(waiting, acquireAsync(l, name, shared(20*time.Second)))
	}
	time.Sleep(200 * time.Millisecond) // all four subscribed and refused
	if err := w.Release(ctx); err != nil {
		t.Fatal(err)
	}
	released := time.Now()
	for i, ch := range waiting {
		select {
		case r := <-ch:
			if r.err != nil {
				t.Fatalf("shared waiter %d: %v", i, r.err)
			}
			if d := r.at.Sub(released); d > 5*time.Second {
				t.Errorf("shared waiter %d got in %s after the release: woken by its poll, not by the one before it", i, d)
			}
			defer func() {
				if err := r.lease.Release(ctx); err != nil {
					t.Errorf("shared waiter %d's release: %v", i, err)
				}
			}()
		case <-time.After(10 * time.Second):
			t.Fatalf("shared waiter %d did not get in within 10s of the writer's release (poll 20s)", i)
		}
	}
}

func TestResumeFindsEachHoldersOwnAcquisition(t *testing.T) {
	l, _ := newLocker(t, nil)
	name := uniqueName(t)
	a, err := l.Acquire(ctx, name, 10*time.Second, shared(0))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(20 * time.Millisecond)
	b, err := l.Acquire(ctx, name, 20*time.Second, shared(0))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*lock.Lease{a, b} {
		r, err := l.Resume(ctx, name, x.Token())
		if err != nil || !r.AcquiredAt().Equal(x.AcquiredAt()) || !r.Shared() || r.Holds() != 1 {
			t.Errorf("Resume(%s): %+v %v; want acquired at %v", x.Token()[:8], r, err, x.AcquiredAt())
		}
	}
	if r, err := l.Resume(ctx, name, "stranger"); r != nil || !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("a stranger's token: %v, %v", r, err)
	}
	_ = a.Release(ctx)
	_ = b.Release(ctx)
	x, _ := l.Acquire(ctx, name, 10*time.Second, nil)
	if r, err := l.Resume(ctx, name, x.Token()); err != nil || !r.AcquiredAt().Equal(x.AcquiredAt()) || r.Shared() {
		t.Errorf("exclusive: %+v %v; want acquired at %v", r, err, x.AcquiredAt())
	}
	_ = x.Release(ctx)
}
