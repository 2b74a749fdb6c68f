package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

func TestPlainLockAndSemaphoreExcludeEachOther(t *testing.T) {
	l, _ := newLocker(t, nil)
	name := uniqueName(t)
	slot, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	// a plain and a FIFO acquire see the live slot as "held"
	for _, o := range []*lock.AcquireOptions{{}, {FIFO: true}} {
		_, err = l.Acquire(ctx, name, 10*time.Second, o)
		var held *lock.HeldError
		if !errors.As(err, &held) || !errors.Is(err, lock.ErrNotObtained) || held.Holder.Kind() != "semaphore" || held.Holder.Holders != 1 {
			t.Fatalf("plain acquire (fifo %v) beside a semaphore slot: %v, want held by the semaphore", o.FIFO, err)
		}
	}
	// a waiting plain acquire gets in once the slot is released
	done := make(chan error, 1)
	go func() {
		lease, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Wait: 20 * time.Second})
		if err == nil {
			// the other direction: a semaphore acquire sees the plain lock
			_, err = l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Limit: 5})
			var held *lock.HeldError
			if !errors.As(err, &held) || held.Holder.Kind() != "lockctl" || held.Holder.Token != lease.Token() {
				err = errors.New("semaphore acquire beside a plain lock: " + errString(err))
			} else {
				err = lease.Release(ctx)
			}
		}
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	if err := slot.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

func TestSemaphoreRefusesAnotherLimit(t *testing.T) {
	l, _ := newLocker(t, nil)
	name := uniqueName(t)
	for i := 0; i < 2; i++ {
		if _, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Limit: 2}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Limit: 3, Wait: 5 * time.Second})
	var le *lock.DataError
	if !errors.As(err, &le) || le.Err != lock.ErrInvalid || le.Limit != 2 || le.WantLimit != 3 || !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("--limit 3 beside two --limit 2 holders: %v, want a limit mismatch {2, 3}", err)
	}
	_, err = l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Limit: 1})
	if !errors.As(err, &le) || le.Err != lock.ErrInvalid || le.Limit != 2 {
		t.Fatalf("--limit 1 beside --limit 2 holders: %v, want a limit mismatch", err)
	}
	// the same limit is simply full
	if _, err = l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Limit: 2}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("third --limit 2: %v, want not obtained", err)
	}
}

func TestRenewWithoutTTLUsesTheLeasesOwn(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	lease, err := l.Acquire(ctx, name, 10*time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	redisDo(t, c, "PEXPIRE", lease.Key(), 5000)
	got, err := renewToken(ctx, l, name, lease.Token(), 0)
	if err != nil || got != 10*time.Minute {
		t.Fatalf("renew with ttl 0: %v %v, want 10m", got, err)
	}
	if pttl := redisDo(t, c, "PTTL", lease.Key()).(int64); pttl < 9*60*1000 {
		t.Fatalf("pttl %d after renew with ttl 0, want about 10m", pttl)
	}
	// an explicit ttl still wins, and the recorded one stays
	if got, err := renewToken(ctx, l, name, lease.Token(), 2*time.Minute); err != nil || got != 2*time.Minute {
		t.Fatalf("renew 2m: %v %v", got, err)
	}
	if got, _ := renewToken(ctx, l, name, lease.Token(), 0); got != 10*time.Minute {
		t.Fatalf("renew with ttl 0 after an explicit one: %v, want 10m", got)
	}
	// semaphore slots too
	slot, err := l.Acquire(ctx, name+"s", 7*time.Minute, &lock.AcquireOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := renewToken(ctx, l, name+"s", slot.Token(), 0); err != nil || got != 7*time.Minute {
		t.Fatalf("semaphore renew with ttl 0: %v %v, want 7m", got, err)
	}
	// a foreign lock records no TTL: refused, nothing changed
	redisDo(t, c, "SET", lease.Key()+"f", "foreign-token", "PX", 5000)
	if _, err := renewToken(ctx, l, name+"f", "foreign-token", 0); !errors.Is(err, lock.ErrInvalid) {
		t.Fatalf("renew a foreign lock with ttl 0: %v, want ErrInvalid", err)
	}
}

func TestReenterCountsHolds(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	outer, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Owner: "outer", Note: "n"})
	if err != nil {
		t.Fatal(err)
	}
	// a retry of Acquire with the same token is idempotent: no hold added
	if _, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Token: outer.Token()}); err != nil {
		t.Fatal(err)
	}
	inner, err := l.Reenter(ctx, name, outer.Token())
	if err != nil {
		t.Fatal(err)
	}
	if inner.Token() != outer.Token() || inner.Fence() != outer.Fence() || inner.Owner() != "outer" || inner.TTL() != 10*time.Second ||
		inner.Holds() != 2 || !inner.AcquiredAt().Equal(outer.AcquiredAt()) {
		t.Fatalf("re-entered lease %+v, outer %+v", inner, outer)
	}
	if d := time.Until(sentOf(inner).Add(inner.TTL())); d > 10*time.Second || d < 5*time.Second {
		t.Fatalf("re-entered lease's Sent+TTL is %v from now", d)
	}
	deeper, err := l.Reenter(ctx, name, outer.Token())
	if err != nil || deeper.Holds() != 3 {
		t.Fatalf("second re-entry: %+v %v", deeper, err)
	}
	if h, _ := l.Get(ctx, name); h.Reentry != 3 {
		t.Fatalf("holder shows reentry %d, want 3", h.Reentry)
	}
	// inner releases give back one hold each; the key stays with its TTL
	for want := 2; want >= 1; want-- {
		n, err := releaseHold(ctx, inner)
		if err != nil || n != want {
			t.Fatalf("release: %d holds left, %v; want %d", n, err, want)
		}
		if redisDo(t, c, "EXISTS", outer.Key()).(int64) != 1 || redisDo(t, c, "PTTL", outer.Key()).(int64) < 1 {
			t.Fatal("an inner release deleted the lock or its TTL")
		}
	}
	if _, err := l.Acquire(ctx, name, time.Second, nil); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("another acquire while re-entered: %v", err)
	}
	if n, err := releaseHold(ctx, outer); err != nil || n != 0 {
		t.Fatalf("outermost release: %d %v", n, err)
	}
	if redisDo(t, c, "EXISTS", outer.Key()).(int64) != 0 {
		t.Fatal("the outermost release left the lock")
	}
	// nothing held, another's token: refused
	if _, err := l.Reenter(ctx, name, outer.Token()); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("re-enter a free lock: %v", err)
	}
	other, err := l.Acquire(ctx, name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reenter(ctx, name, outer.Token()); !errors.Is(err, lock.ErrNotOwner) {
		t.Fatalf("re-enter with a stale token: %v", err)
	}
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

func TestReenterSemaphoreSlot(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	slot, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	inner, err := l.Reenter(ctx, name, slot.Token())
	if err != nil || inner.Limit() != 2 || inner.Holds() != 2 || inner.Fence() != slot.Fence() {
		t.Fatalf("re-enter a slot: %+v %v", inner, err)
	}
	// still one slot taken: another holder fits
	other, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := releaseHold(ctx, inner); err != nil || n != 1 {
		t.Fatalf("inner release of a slot: %d %v", n, err)
	}
	if redisDo(t, c, "ZSCORE", lock.AuxKey(lock.KindSem, slot.Key()), slot.Token()) == nil {
		t.Fatal("the inner release freed the slot")
	}
	for _, s := range []*lock.Lease{slot, other} {
		if err := s.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if redisDo(t, c, "EXISTS", lock.AuxKey(lock.KindSem, slot.Key())).(int64) != 0 {
		t.Fatal("slots left after the last release")
	}
}

func TestRedlockStaleReleaseOnAMinorityIsRefused(t *testing.T) {
	t.Parallel()
	l, srvs := redlockNodes(t, nil)
	name := uniqueName(t)
	key := l.Key(name)
	const oldTok, newTok = "0123456789abcdef0123456789abcdef", "fedcba9876543210fedcba9876543210"
	// The old lease still lingers on one master; a majority belongs to the
	// new holder.
	if _, err := srvs[0].Do("SET", key, `{"token":"`+oldTok+`","fence":1,"owner":"old","acquired_ms":1}`, "PX", "10000"); err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs[1:] {
		if _, err := s.Do("SET", key, `{"token":"`+newTok+`","fence":2,"owner":"new","acquired_ms":2}`, "PX", "10000"); err != nil {
			t.Fatal(err)
		}
	}
	var he *lock.HeldError
	if err := releaseToken(ctx, l, name, oldTok); !errors.As(err, &he) || !errors.Is(err, lock.ErrNotOwner) || he.Holder.Owner != "new" {
		t.Fatalf("release by the old token beside a majority of the new one: %v, want held by new", err)
	}
	for _, s := range srvs[1:] {
		if v := get(t, s, key); v == "" {
			t.Fatalf("%s lost the new holder's lock", s.Addr)
		}
	}
}
