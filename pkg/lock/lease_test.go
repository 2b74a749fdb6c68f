package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// The lease-centric API: Lease.Release, Refresh, Watch and Done, against a
// real redis-server.

// closed reports whether Done is closed, waiting up to d for it.
func closed(done <-chan struct{}, d time.Duration) bool {
	select {
	case <-done:
		return true
	default:
	}
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

func TestLeaseReleaseFreesTheLock(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	lease, err := l.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if closed(lease.Done(), 0) {
		t.Fatal("Done closed while the lease is held")
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if n := c.Exists(ctx, lease.Key()).Val(); n != 0 {
		t.Errorf("the lock key is still there after Release")
	}
	if !closed(lease.Done(), 0) {
		t.Error("Done not closed after Release")
	}
	if err := lease.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second release: %v, want ErrNotHeld", err)
	}
	// The lock is free for the next holder.
	next, err := l.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatalf("acquire after release: %v", err)
	}
	if err := next.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// A lease whose lock someone else holds now releases nothing, says so, and
// counts as lost.
func TestLeaseReleaseRefusedForAnotherToken(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	lease, err := l.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Del(ctx, lease.Key())
	other, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Owner: "other"})
	if err != nil {
		t.Fatal(err)
	}
	err = lease.Release(ctx)
	var held *lock.HeldError
	if !errors.Is(err, lock.ErrNotOwner) || !errors.As(err, &held) || held.Holder.Owner != "other" {
		t.Fatalf("release of a lease another token holds: %v, want ErrNotOwner naming other", err)
	}
	if h, err := l.Get(ctx, name); err != nil || h.Token != other.Token() {
		t.Errorf("the other holder's lock after the refused release: %+v, %v", h, err)
	}
	if !closed(lease.Done(), 0) {
		t.Error("Done not closed for a lease found held by another token")
	}
	if closed(other.Done(), 0) {
		t.Error("Done closed for the holder's own lease")
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Release gives back one hold of a re-entered lease, and a semaphore or
// shared slot by its token, as Locker.Release does.
func TestLeaseReleaseHoldsAndSlots(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	outer, err := l.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := l.Reenter(ctx, name, outer.Token())
	if err != nil {
		t.Fatal(err)
	}
	if err := inner.Release(ctx); err != nil {
		t.Fatalf("inner release: %v", err)
	}
	if h, err := l.Get(ctx, name); err != nil || h.Token != outer.Token() {
		t.Fatalf("after the inner hold's release the lock is %+v, %v; want still held by the outer holder", h, err)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatalf("outer release: %v", err)
	}
	if c.Exists(ctx, outer.Key()).Val() != 0 {
		t.Error("the lock stays after the last hold's release")
	}

	for _, o := range []*lock.AcquireOptions{{Limit: 1}, {Shared: true}} {
		slot, err := l.Acquire(ctx, name, time.Minute, o)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Acquire(ctx, name, time.Minute, nil); !errors.Is(err, lock.ErrNotObtained) {
			t.Fatalf("exclusive acquire beside a slot (%+v): %v", *o, err)
		}
		if err := slot.Release(ctx); err != nil {
			t.Fatalf("slot release (%+v): %v", *o, err)
		}
		free, err := l.Acquire(ctx, name, time.Minute, nil)
		if err != nil {
			t.Fatalf("acquire after the slot's release (%+v): %v", *o, err)
		}
		if err := free.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

func TestLeaseRefreshMovesTheDeadline(t *testing.T) {
	l, c := newLocker(t, nil)
	for _, o := range []*lock.AcquireOptions{nil, {Limit: 2}, {Shared: true}} {
		name := uniqueName(t)
		lease, err := l.Acquire(ctx, name, 2*time.Second, o)
		if err != nil {
			t.Fatal(err)
		}
		before := lease.Deadline()
		if err := lease.Refresh(ctx, time.Minute); err != nil {
			t.Fatalf("refresh (%+v): %v", o, err)
		}
		if lease.TTL() != time.Minute || !lease.Deadline().After(before.Add(40*time.Second)) {
			t.Errorf("after a refresh for a minute (%+v): TTL %s, deadline moved by %s", o, lease.TTL(), lease.Deadline().Sub(before))
		}
		if o == nil {
			if pttl := c.PTTL(ctx, lease.Key()).Val(); pttl < 50*time.Second {
				t.Errorf("PTTL %s after a refresh for a minute", pttl)
			}
		}
		// 0 is the TTL the lease was taken with.
		if err := lease.Refresh(ctx, 0); err != nil {
			t.Fatalf("refresh with the lease's own TTL (%+v): %v", o, err)
		}
		if lease.TTL() != 2*time.Second {
			t.Errorf("refresh with ttl 0 (%+v): TTL %s, want the 2s it was taken with", o, lease.TTL())
		}
		if closed(lease.Done(), 0) {
			t.Errorf("Done closed by a refresh (%+v)", o)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A refresh that finds the lease gone (deleted, or taken by another token)
// fails, never re-creates the lock, and closes Done.
func TestLeaseRefreshOfALostLease(t *testing.T) {
	for _, steal := range []struct {
		name string
		do   func(c *redis.Client, key string) error
		want error
	}{
		{"deleted", func(c *redis.Client, key string) error { return c.Del(ctx, key).Err() }, lock.ErrNotHeld},
		{"taken", func(c *redis.Client, key string) error { return c.Set(ctx, key, "someone-else", time.Minute).Err() }, lock.ErrNotOwner},
	} {
		t.Run(steal.name, func(t *testing.T) {
			l, c := newLocker(t, nil)
			lease, err := l.Acquire(ctx, uniqueName(t), time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			if err := steal.do(c, lease.Key()); err != nil {
				t.Fatal(err)
			}
			deadline := lease.Deadline()
			if err := lease.Refresh(ctx, time.Minute); !errors.Is(err, steal.want) {
				t.Fatalf("refresh: %v, want %v", err, steal.want)
			}
			if !lease.Deadline().Equal(deadline) {
				t.Error("a refused refresh moved the lease's deadline")
			}
			if !closed(lease.Done(), 0) {
				t.Error("Done not closed by a refused refresh")
			}
			if steal.want == lock.ErrNotHeld && c.Exists(ctx, lease.Key()).Val() != 0 {
				t.Error("refresh re-created the lock")
			}
		})
	}
}

// slowHook delays every script call (EVALSHA) by d, as a slow link does.
type slowHook struct{ d time.Duration }

func (h slowHook) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h slowHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if cmd.Name() == "evalsha" {
			time.Sleep(h.d)
		}
		return err
	}
}
func (h slowHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A refresh answered after its own deadline does not count: the same
// lease-validity rule as Locker.Renew (leasetime.Deadline).
func TestLeaseRefreshLate(t *testing.T) {
	l, _ := newLocker(t, nil)
	lease, err := l.Acquire(ctx, uniqueName(t), time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	slow := newClient(t)
	slow.AddHook(slowHook{d: 300 * time.Millisecond})
	sl := lock.New(slow, nil)
	// The same lease, renewed through the slow link: a 150ms renewal
	// counts for 50ms after it is sent (ttl - the 100ms minimum margin).
	slowLease, err := sl.Reenter(ctx, lease.Name(), lease.Token())
	if err != nil {
		t.Fatal(err)
	}
	if err := slowLease.Refresh(ctx, 150*time.Millisecond); !errors.As(err, new(*lock.LateError)) || !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("late refresh: %v, want a *LateError", err)
	}
	if slowLease.TTL() == 150*time.Millisecond {
		t.Error("a late refresh set the lease's TTL")
	}
	if !closed(slowLease.Done(), 0) {
		t.Error("Done not closed by a late refresh")
	}
}

// Watch keeps the lease renewed past its TTL, and Done stays open while it
// does; Release stops the watchdog before releasing.
func TestLeaseWatchRenewsAndReleaseStopsIt(t *testing.T) {
	l, c := newLocker(t, nil)
	lease, err := l.Acquire(ctx, uniqueName(t), 600*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := lease.StartWatch(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	if closed(lease.Done(), 2*time.Second) { // more than three TTLs
		t.Fatalf("Done closed while the watchdog renews: %v", w.Err())
	}
	if n := w.Renewals(); n < 3 {
		t.Errorf("only %d renewals in three TTLs", n)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatalf("release: %v", err)
	}
	if c.Exists(ctx, lease.Key()).Val() != 0 {
		t.Error("the lock stays after Release")
	}
	n := w.Renewals()
	time.Sleep(500 * time.Millisecond) // more than a renewal period
	if w.Renewals() != n {
		t.Error("the watchdog renewed after Release")
	}
	select {
	case err := <-w.Lost():
		t.Errorf("a released lease reported lost: %v", err)
	default:
	}
	if !closed(lease.Done(), 0) {
		t.Error("Done not closed after Release")
	}
}

// Done closes when the watchdog loses the lease: the lock deleted, or taken
// by another token. Lease.Watch arms it, on a lease acquired or resumed.
func TestLeaseDoneClosesOnLoss(t *testing.T) {
	for _, steal := range []struct {
		name string
		do   func(l *lock.Locker, c *redis.Client, lease *lock.Lease) error
		want error
	}{
		{"deleted", func(_ *lock.Locker, c *redis.Client, lease *lock.Lease) error { return c.Del(ctx, lease.Key()).Err() }, lock.ErrNotHeld},
		{"taken", func(l *lock.Locker, c *redis.Client, lease *lock.Lease) error {
			if err := c.Del(ctx, lease.Key()).Err(); err != nil {
				return err
			}
			_, err := l.Acquire(ctx, lease.Name(), time.Minute, &lock.AcquireOptions{Owner: "thief"})
			return err
		}, lock.ErrNotOwner},
	} {
		for _, via := range []string{"Acquire", "Resume"} {
			t.Run(steal.name+"/"+via, func(t *testing.T) {
				l, c := newLocker(t, nil)
				lease, err := l.Acquire(ctx, uniqueName(t), 3*time.Second, nil)
				if err != nil {
					t.Fatal(err)
				}
				if via == "Resume" {
					if lease, err = l.Resume(ctx, lease.Name(), lease.Token()); err != nil {
						t.Fatal(err)
					}
				}
				w, err := lease.StartWatch(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(w.Stop)
				if closed(lease.Done(), 0) {
					t.Fatal("Done closed before the loss")
				}
				if err := steal.do(l, c, lease); err != nil {
					t.Fatal(err)
				}
				if !closed(lease.Done(), 20*time.Second) {
					t.Fatal("Done not closed after the lease was lost")
				}
				var le *lock.LostError
				if err := w.Err(); !errors.As(err, &le) || !errors.Is(err, steal.want) {
					t.Errorf("watchdog's loss %v, want a refused renewal matching %v", err, steal.want)
				}
				// The loss is still delivered on Lost, as before.
				select {
				case err := <-w.Lost():
					if !errors.Is(err, lock.ErrLost) {
						t.Errorf("Lost delivered %v", err)
					}
				default:
					t.Error("nothing on Lost after the loss")
				}
			})
		}
	}
}

// A lease not granted by a Locker cannot be released, refreshed or watched.
func TestLeaseBuiltByHand(t *testing.T) {
	lease := &lock.Lease{}
	if err := lease.Release(ctx); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("release: %v", err)
	}
	if err := lease.Refresh(ctx, time.Minute); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("refresh: %v", err)
	}
	if err := lease.Watch(ctx, nil); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("watch: %v", err)
	}
}
