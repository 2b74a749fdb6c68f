package lock_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

type waitResult struct {
	lease *lock.Lease
	err   error
	at    time.Time
}

// startWaiter runs a waiting Acquire in the background. The returned
// channel is closed once the waiter has found the lock busy: the refusal
// listed it, and it sleeps on its wake-up stream, read from its start (or,
// in its Locker's hub, tries again once subscribed), so from then on a
// release cannot be missed.
func startWaiter(ctx context.Context, l *lock.Locker, name string, ttl time.Duration, o lock.AcquireOptions) (subscribed <-chan struct{}, done <-chan waitResult) {
	sub := make(chan struct{})
	res := make(chan waitResult, 1)
	var busy atomic.Int32
	o.Observer = func(lock.AcquireEvent) {
		if busy.Add(1) == 1 {
			close(sub)
		}
	}
	go func() {
		lease, err := l.Acquire(ctx, name, ttl, &o)
		res <- waitResult{lease, err, time.Now()}
	}()
	return sub, res
}

func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
	}
}

func TestWaiterWakesOnRelease(t *testing.T) {
	// Polling so rare that only the release message can wake the waiter
	// before the holder's TTL.
	l, _ := newLocker(t, &lock.Options{PollInterval: time.Hour})
	name := uniqueName(t)
	holder, err := l.Acquire(ctx, name, 20*time.Second, &lock.AcquireOptions{Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	subscribed, done := startWaiter(ctx, l, name, 10*time.Second, lock.AcquireOptions{Wait: time.Minute, Owner: "waiter"})
	await(t, subscribed, "the waiter to subscribe")
	released := time.Now()
	if err := releaseToken(ctx, l, name, holder.Token()); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.lease.Owner() != "waiter" || r.lease.Fence() <= holder.Fence() || r.lease.Waited() <= 0 {
			t.Errorf("waiter's lease %+v", r.lease)
		}
		t.Logf("hand-off took %v", r.at.Sub(released))
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter slept through the release")
	}
}

func TestWaiterRetriesWhenHolderExpires(t *testing.T) {
	l, _ := newLocker(t, &lock.Options{PollInterval: time.Hour})
	name := uniqueName(t)
	if _, err := l.Acquire(ctx, name, 300*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	_, done := startWaiter(ctx, l, name, time.Second, lock.AcquireOptions{Wait: time.Minute})
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the waiter did not notice the holder's expiry")
	}
}

func TestWaiterGivesUpAtDeadline(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	holder, err := l.Acquire(ctx, name, 20*time.Second, &lock.AcquireOptions{Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Wait: 300 * time.Millisecond})
	elapsed := time.Since(start)
	var held *lock.HeldError
	if !errors.Is(err, lock.ErrNotObtained) || !errors.As(err, &held) || held.Holder.Owner != "holder" {
		t.Fatalf("after the deadline: %v", err)
	}
	if elapsed < 300*time.Millisecond || elapsed > 5*time.Second {
		t.Errorf("gave up after %v, wait was 300ms", elapsed)
	}
	if h, err := l.Get(ctx, name); err != nil || h.Token != holder.Token() {
		t.Errorf("holder changed: %+v %v", h, err)
	}
	// The waiter's subscription ended with it.
	ch := lock.Channel(holder.Key())
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n := redisDo(t, c, "PUBSUB", "NUMSUB", ch).([]any)[1].(int64)
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers left on %s", n, ch)
		}
	}
}

func TestWaiterStopsOnContextCancel(t *testing.T) {
	l, _ := newLocker(t, nil)
	name := uniqueName(t)
	if _, err := l.Acquire(ctx, name, 20*time.Second, nil); err != nil {
		t.Fatal(err)
	}
	cause := errors.New("interrupted by SIGINT")
	cctx, cancel := context.WithCancelCause(ctx)
	subscribed, done := startWaiter(cctx, l, name, time.Second, lock.AcquireOptions{Wait: -1})
	await(t, subscribed, "the waiter to subscribe")
	cancel(cause)
	select {
	case r := <-done:
		if !errors.Is(r.err, context.Canceled) || !errors.Is(r.err, cause) || r.lease != nil {
			t.Errorf("after cancel: %v", r.err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the waiter ignored the cancelled context")
	}
	// A context deadline ends an unbounded wait the same way.
	dctx, dcancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer dcancel()
	if _, err := l.Acquire(dctx, name, time.Second, &lock.AcquireOptions{Wait: -1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("after the context deadline: %v", err)
	}
}

// Mutual exclusion under contention: workers take turns on one lock and
// check that nobody else is inside. With one Locker the workers queue in
// process; with one Locker each they compete as separate processes would.
func TestMutualExclusion(t *testing.T) {
	t.Run("shared-locker", func(t *testing.T) { testMutualExclusion(t, 1) })
	t.Run("locker-per-worker", func(t *testing.T) { testMutualExclusion(t, 8) })
}

func testMutualExclusion(t *testing.T, lockers int) {
	const workers, rounds = 8, 25
	ls := make([]*lock.Locker, lockers)
	for i := range ls {
		// Only release messages wake waiters in time: a lost wake-up
		// would stall the test until the holder's TTL or the timeout.
		ls[i], _ = newLocker(t, &lock.Options{PollInterval: time.Hour})
	}
	name := uniqueName(t)
	var (
		inside  atomic.Int32
		counter int // deliberately unsynchronised: the lock is its only guard
		fences  = make([]int64, 0, workers*rounds)
		wg      sync.WaitGroup
	)
	tctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	errs := make(chan error, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := ls[w%lockers]
			for i := 0; i < rounds; i++ {
				lease, err := l.Acquire(tctx, name, 10*time.Second, &lock.AcquireOptions{Wait: -1})
				if err != nil {
					errs <- err
					return
				}
				if n := inside.Add(1); n != 1 {
					errs <- errors.New("two holders at once")
				}
				c := counter
				time.Sleep(100 * time.Microsecond)
				counter = c + 1
				fences = append(fences, lease.Fence())
				inside.Add(-1)
				if err := releaseToken(tctx, l, name, lease.Token()); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if counter != workers*rounds {
		t.Errorf("counter %d, want %d: updates were lost", counter, workers*rounds)
	}
	for i := 1; i < len(fences); i++ {
		if fences[i] <= fences[i-1] {
			t.Fatalf("fences in holding order do not grow at %d: %v", i, fences)
		}
	}
}

// A waiter refused once sleeps on its wake-up stream until a release wakes
// it: the refusal listed it, and the stream keeps every wake-up since, so a
// second attempt at once would only be refused again (one more script per
// acquisition in a pile-up of processes).
func TestWaiterSleepsAfterItsFirstRefusal(t *testing.T) {
	t.Parallel()
	hl, _ := newLocker(t, nil)
	name := uniqueName(t)
	held, err := hl.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	wc := newClient(t)
	h := &countingHook{only: []string{"evalsha", "eval"}}
	wc.AddHook(h)
	refused, done := startWaiter(ctx, lock.New(wc, nil), name, time.Minute, lock.AcquireOptions{Wait: 30 * time.Second})
	await(t, refused, "the waiter's first refusal")
	time.Sleep(300 * time.Millisecond)
	if n := h.n.Load(); n != 1 {
		t.Errorf("the waiter ran %d scripts before the release, want 1 (its first attempt)", n)
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil {
		t.Fatalf("the waiter after the release: %v", r.err)
	}
	if err := r.lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
}
