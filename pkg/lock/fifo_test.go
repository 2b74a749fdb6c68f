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
			if err := l.ReleaseLease(ctx, lease); err != nil {
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
	if err := l.ReleaseLease(ctx, holder); err != nil {
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
	go func() {
		time.Sleep(100 * time.Millisecond)
		dc.Close()
	}()
	_, err = dl.Acquire(dctx, name, time.Second, &lock.AcquireOptions{FIFO: true, Wait: -1})
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
	if err := l.ReleaseLease(ctx, holder); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatalf("second waiter: %v", err)
	}
	// Queue TTL is 3s; generous bound.
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("second waiter served after %v", d)
	}
	_ = l.ReleaseLease(ctx, lease)
	_, err = l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{FIFO: true, Limit: 2})
	if !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("FIFO with a limit: %v", err)
	}
}
