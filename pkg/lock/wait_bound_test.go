package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

// A bounded wait ends at its bound: a holder whose lease outlives the wait
// is still holding when the waiter gives up, and the waiter returns
// ErrNotObtained, not a lock it took after its bound (the holder's 50 ms
// are the margin: on a loaded machine the test cannot time the wait more
// closely than that without flaking). The server's own
// timer for a blocked read (XREAD BLOCK) fires at its next cron tick, up to
// 100 ms late, so the waiter cannot lean on it alone.
func TestWaitEndsAtItsBound(t *testing.T) {
	l, _ := newLocker(t, nil)
	const held = 50 * time.Millisecond
	counted := 0
	for round := 0; counted < 5 && round < 50; round++ {
		name := uniqueName(t)
		sent := time.Now()
		holder, err := l.Acquire(ctx, name, held, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		lease, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Wait: 10 * time.Millisecond})
		elapsed := time.Since(start)
		_ = holder.Release(ctx)
		if start.Sub(sent) > 15*time.Millisecond {
			// A loaded machine stalled between the two calls: the holder
			// may have had too little left for the waiter's first attempt
			// (which may take a lock that came free before its bound).
			if lease != nil {
				_ = lease.Release(ctx)
			}
			continue
		}
		counted++
		// The holder had 35 ms or more when the wait began: a lease
		// returned after 30 ms came from an attempt past the 10 ms bound.
		if lease != nil {
			_ = lease.Release(ctx)
			if elapsed > 30*time.Millisecond {
				t.Fatalf("round %d: a 10ms wait returned holding the lock after %v (the holder had %v)", round, elapsed, held)
			}
			continue
		}
		if !errors.Is(err, lock.ErrNotObtained) {
			t.Fatalf("round %d: a 10ms wait on a held lock: %v, want ErrNotObtained", round, err)
		}
		if elapsed > 5*time.Second {
			t.Errorf("round %d: a 10ms wait returned after %v", round, elapsed)
		}
	}
	if counted < 5 {
		t.Fatalf("only %d of 50 rounds began with the holder's lease whole: the machine is too loaded to tell", counted)
	}
}
