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
	for i := range 5 {
		name := uniqueName(t)
		const held = 50 * time.Millisecond
		holder, err := l.Acquire(ctx, name, held, nil)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		lease, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Wait: 10 * time.Millisecond})
		elapsed := time.Since(start)
		if lease != nil {
			_ = lease.Release(ctx)
			t.Fatalf("round %d: a 10ms wait returned holding the lock after %v (the holder had %v)", i, elapsed, held)
		}
		if !errors.Is(err, lock.ErrNotObtained) {
			t.Fatalf("round %d: a 10ms wait on a held lock: %v, want ErrNotObtained", i, err)
		}
		if elapsed > 5*time.Second {
			t.Errorf("round %d: a 10ms wait returned after %v", i, elapsed)
		}
		_ = holder.Release(ctx)
	}
}
