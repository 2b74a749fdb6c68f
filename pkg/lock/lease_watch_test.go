package lock_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/pkg/lock"
)

// The watchdog is the Lease's: OnRenew tells each renewal that counts and
// the new local deadline, RenewNow renews off the schedule, Err is nil
// while the lease is held and after its context stopped the watchdog, and
// once the lease is lost Done closes and Err is the *LostError.
func TestLeaseWatchErrOnRenewRenewNow(t *testing.T) {
	l, c := newLocker(t, nil)
	const ttl = 3 * time.Second // RenewEvery 500ms: a renewal sooner is RenewNow's
	lease, err := l.Acquire(ctx, uniqueName(t), ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var deadlines []time.Time
	watch, stop := context.WithCancel(ctx)
	defer stop()
	err = lease.Watch(watch, &lock.WatchdogOptions{RenewEvery: 500 * time.Millisecond, Observer: func(e lock.WatchEvent) {
		if !e.Renewed {
			return
		}
		mu.Lock()
		deadlines = append(deadlines, e.Deadline)
		mu.Unlock()
	}})
	if err != nil {
		t.Fatal(err)
	}
	renewals := func() []time.Time {
		mu.Lock()
		defer mu.Unlock()
		return append([]time.Time(nil), deadlines...)
	}
	before := time.Now()
	lease.RenewNow()
	for len(renewals()) == 0 && time.Since(before) < 400*time.Millisecond {
		time.Sleep(5 * time.Millisecond)
	}
	got := renewals()
	if len(got) == 0 {
		t.Fatal("RenewNow did not renew before the period")
	}
	if d := got[0]; d.Before(leasetime.Deadline(before, ttl, 0)) || d.After(leasetime.Deadline(time.Now(), ttl, 0)) {
		t.Errorf("the Observer's deadline %v is not the renewal's send time plus ttl minus the margin", d)
	}
	if err := lease.Err(); err != nil {
		t.Fatalf("Err while held: %v", err)
	}

	// Stopped by its context: no loss, no more renewals.
	stop()
	if err := lease.Err(); err != nil {
		t.Fatalf("Err after the watchdog was stopped: %v", err)
	}
	n := len(renewals())
	time.Sleep(700 * time.Millisecond)
	if len(renewals()) != n {
		t.Error("the watchdog renewed after its context ended")
	}
	if closed(lease.Done(), 0) {
		t.Error("Done closed by stopping the watchdog")
	}

	// Watched again, and the lock deleted under it: lost.
	if err := lease.Watch(ctx, &lock.WatchdogOptions{RenewEvery: 100 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	c.Del(ctx, lease.Key())
	if !closed(lease.Done(), 5*time.Second) {
		t.Fatal("Done not closed after the lease was lost")
	}
	var lost *lock.LostError
	if err := lease.Err(); !errors.As(err, &lost) || !errors.Is(err, lock.ErrLost) || !errors.Is(err, lock.ErrNotHeld) || lost.Name != lease.Name() {
		t.Errorf("Err after the loss: %v, want a *LostError matching ErrLost and ErrNotHeld", err)
	}
}
