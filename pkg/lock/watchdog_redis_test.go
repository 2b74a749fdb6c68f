package lock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// Real-time tests against redis-server: the Locker's lock renewer is the
// Renewer.

// partitionHook fails every command while cut is set, as a network
// partition between lockctl and Redis would.
type partitionHook struct{ cut atomic.Bool }

var errPartition = errors.New("dial tcp: i/o timeout")

func (h *partitionHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *partitionHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.cut.Load() {
			cmd.SetErr(errPartition)
			return errPartition
		}
		return next(ctx, cmd)
	}
}
func (h *partitionHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func acquireWatched(t *testing.T, l *lock.Locker, ttl time.Duration) (*lock.Lease, *lock.Watchdog) {
	t.Helper()
	name := uniqueName(t)
	sent := time.Now()
	lease, err := l.Acquire(ctx, name, ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := lock.StartWatchdog(ctx, l.Renewer(lease).Renew, name, lease.Token(), ttl, sent, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return lease, w
}

func awaitLoss(t *testing.T, w *lock.Watchdog) error {
	t.Helper()
	select {
	case err := <-w.Lost():
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("no loss reported")
	}
	return nil
}

func TestWatchdogKeepsRealLeaseAlive(t *testing.T) {
	l, c := newLocker(t, nil)
	lease, w := acquireWatched(t, l, 600*time.Millisecond)
	time.Sleep(2 * time.Second) // more than three TTLs
	select {
	case err := <-w.Lost():
		t.Fatalf("lost: %v", err)
	default:
	}
	if pttl := redisDo(t, c, "PTTL", lease.Key()).(int64); pttl <= 0 {
		t.Fatalf("PTTL %d after three TTLs of renewals", pttl)
	}
	if n := w.Renewals(); n < 3 {
		t.Errorf("only %d renewals in three TTLs", n)
	}
	w.Stop()
	if err := releaseToken(ctx, l, lease.Name(), lease.Token()); err != nil {
		t.Errorf("release after Stop: %v", err)
	}
}

func TestWatchdogReportsStolenLease(t *testing.T) {
	for _, steal := range []struct {
		name string
		do   func(c *redis.Client, key string) error
		want error
	}{
		{"overwritten", func(c *redis.Client, key string) error { return c.Set(ctx, key, "someone-else", time.Minute).Err() }, lock.ErrNotOwner},
		{"deleted", func(c *redis.Client, key string) error { return c.Del(ctx, key).Err() }, lock.ErrNotHeld},
	} {
		t.Run(steal.name, func(t *testing.T) {
			l, c := newLocker(t, nil)
			lease, w := acquireWatched(t, l, 3*time.Second)
			if err := steal.do(c, lease.Key()); err != nil {
				t.Fatal(err)
			}
			err := awaitLoss(t, w)
			var le *lock.LostError
			if !errors.As(err, &le) || le.Expired || !errors.Is(err, steal.want) {
				t.Fatalf("loss %v, want a refused renewal matching %v", err, steal.want)
			}
		})
	}
}

// Cut off from Redis, the watchdog decides the loss on its own, before the
// server's copy of the lease expires.
func TestWatchdogLosesWhenRedisUnreachable(t *testing.T) {
	hook := &partitionHook{}
	c := newClient(t)
	c.AddHook(hook)
	l := lock.New(c, nil)
	check := newClient(t)
	lease, w := acquireWatched(t, l, 3*time.Second)
	hook.cut.Store(true)
	err := awaitLoss(t, w)
	var le *lock.LostError
	if !errors.As(err, &le) || !le.Expired || !errors.Is(err, errPartition) {
		t.Fatalf("loss %v, want expired with the partition error", err)
	}
	if pttl := redisDo(t, check, "PTTL", lease.Key()).(int64); pttl <= 0 {
		t.Errorf("the server's lease had already expired (PTTL %d) when the loss was reported", pttl)
	}
}
