package lock_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

// A lease's accessors tell the current truth, from any goroutine, while its
// watchdog renews it: Deadline moves forward with each renewal and
// Renewals counts them (run with -race).
func TestLeaseStateFollowsTheWatchdog(t *testing.T) {
	l, _ := newLocker(t, nil)
	const ttl = 600 * time.Millisecond
	lease, err := l.Acquire(ctx, uniqueName(t), ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lease.Release(ctx) }()
	first := lease.Deadline()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if err := lease.Watch(wctx, &lock.WatchdogOptions{RenewEvery: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, _, _, _ = lease.Deadline(), lease.Renewals(), lease.TTL(), lease.Holds()
			}
		}()
	}
	// Wait for a few renewals, longer than the lease itself lives
	// unrenewed, reading the state meanwhile.
	deadline := time.Now().Add(10 * time.Second)
	for lease.Renewals() < 3 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	close(stop)
	wg.Wait()
	n := lease.Renewals()
	if n < 3 {
		t.Fatalf("%d renewals in 10s with a period of 100ms", n)
	}
	if d := lease.Deadline(); !d.After(first) {
		t.Errorf("after %d renewals the deadline is %v, not later than the acquire's %v: it ignores the watchdog", n, d, first)
	}
	if err := lease.Err(); err != nil {
		t.Fatalf("lost while renewed: %v", err)
	}
}
