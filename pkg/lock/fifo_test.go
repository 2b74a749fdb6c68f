package lock_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

func TestFIFOServesArrivalOrder(t *testing.T) {
	l, c := newLocker(t, &lock.Options{PollInterval: 100 * time.Millisecond})
	name := uniqueName(t)
	holder, err := l.Acquire(ctx, name, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var order []int
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			lease, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{FIFO: true, Wait: 30 * time.Second})
			if err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, i)
			mu.Unlock()
			time.Sleep(20 * time.Millisecond)
			if err := lease.Release(ctx); err != nil {
				t.Error(err)
			}
		}(i)
		// Each waiter is queued before the next arrives.
		time.Sleep(150 * time.Millisecond)
	}
	q := lock.AuxKey(lock.KindQueue, l.Key(name))
	if n := redisDo(t, c, "ZCARD", q).(int64); n != 6 {
		t.Errorf("%d queued, want 6", n)
	}
	for _, k := range []string{q, lock.AuxKey(lock.KindQueueHB, l.Key(name))} {
		if p := redisDo(t, c, "PTTL", k).(int64); p <= 0 {
			t.Errorf("PTTL %s = %d: a queue key must expire", k, p)
		}
	}
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	for i, got := range order {
		if got != i {
			t.Fatalf("served in order %v, want arrival order", order)
		}
	}
	if n := redisDo(t, c, "EXISTS", q).(int64); n != 0 {
		t.Errorf("queue left behind")
	}
}

func TestFIFODeadWaiterIsSkipped(t *testing.T) {
	l, _ := newLocker(t, &lock.Options{PollInterval: 100 * time.Millisecond})
	name := uniqueName(t)
	holder, err := l.Acquire(ctx, name, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	// A waiter that joins and then stops trying, as a killed process
	// would: its queue entry stays until its heartbeat runs out. Its
	// context ends without the leave a live waiter sends, because the
	// client is closed first.
	dl, dc := newLocker(t, nil)
	dctx, cancel := contextWithTimeout(200 * time.Millisecond)
	defer cancel()
	closed := make(chan error, 1)
	go func() {
		time.Sleep(100 * time.Millisecond)
		closed <- dc.Close()
	}()
	_, err = dl.Acquire(dctx, name, time.Second, &lock.AcquireOptions{FIFO: true, Wait: -1})
	if cerr := <-closed; cerr != nil {
		t.Fatal(cerr)
	}
	if err == nil {
		t.Fatal("the dead waiter acquired")
	}
	var lease *lock.Lease
	done := make(chan error, 1)
	go func() {
		var err error
		lease, err = l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{FIFO: true, Wait: 20 * time.Second})
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	start := time.Now()
	if err := holder.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("second waiter: %v", err)
	}
	// Queue TTL is 3s; generous bound.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("second waiter served after %v", d)
	}
	_ = lease.Release(ctx)
	_, err = l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{FIFO: true, Limit: 2})
	if !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("FIFO with a limit: %v", err)
	}
}

// fifoRounds runs goroutines on each Locker that take the lock rounds times
// each with FIFO, hold it for a millisecond and release it, every acquire
// bounded by wait. It returns the first error.
func fifoRounds(t *testing.T, lockers []*lock.Locker, name string, goroutines, rounds int, wait time.Duration) error {
	t.Helper()
	errs := make(chan error, len(lockers)*goroutines)
	var wg sync.WaitGroup
	for _, l := range lockers {
		for i := 0; i < goroutines; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for r := 0; r < rounds; r++ {
					lease, err := l.Acquire(ctx, name, 30*time.Second, &lock.AcquireOptions{FIFO: true, Wait: wait})
					if err != nil {
						errs <- err
						return
					}
					time.Sleep(time.Millisecond)
					if err := lease.Release(ctx); err != nil {
						errs <- err
						return
					}
				}
			}()
		}
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// A release must wake the waiter at the head of the queue, wherever it
// waits: a wake-up that reaches another waiter leaves the head asleep until
// its polling timer, and the queue stalls behind it. The polling interval
// is far longer than the whole run needs, so every acquire is bounded by
// one interval: waiting for a timer even once fails the test.
func TestFIFONeverWaitsForThePollTimer(t *testing.T) {
	const poll = 15 * time.Second
	t.Run("one process", func(t *testing.T) {
		l, _ := newLocker(t, &lock.Options{PollInterval: poll})
		if err := fifoRounds(t, []*lock.Locker{l}, uniqueName(t), 16, 5, poll); err != nil {
			t.Fatalf("a FIFO waiter was not woken: %v", err)
		}
	})
	t.Run("several processes", func(t *testing.T) {
		// Each Locker has its own client and pub/sub connection, as
		// separate processes do.
		var ls []*lock.Locker
		for i := 0; i < 3; i++ {
			l, _ := newLocker(t, &lock.Options{PollInterval: poll})
			ls = append(ls, l)
		}
		if err := fifoRounds(t, ls, uniqueName(t), 6, 4, poll); err != nil {
			t.Fatalf("a FIFO waiter was not woken: %v", err)
		}
	})
}
