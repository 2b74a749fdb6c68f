package lock_test

import (
	"os"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// storedValue reads the value lease is stored under: its lock key, or its
// semaphore or shared slot.
func storedValue(t *testing.T, c *redis.Client, lease *lock.Lease, key string) lockwire.Value {
	t.Helper()
	var raw string
	if lease.Limit() > 0 || lease.Shared() {
		raw = redisDo(t, c, "HGET", lockwire.AuxKey(lockwire.KindSemVal, key), lease.Token()).(string)
	} else {
		raw = redisDo(t, c, "GET", key).(string)
	}
	return lockwire.ParseValue(raw)
}

// Every renewal records the server's time in the value, for lock, slot,
// shared hold and set alike, beside the holder's renewal period and its
// process's start time: inspect tells a holder that stopped renewing by it.
func TestRenewalRecorded(t *testing.T) {
	l, c := newLocker(t, nil)
	for _, tc := range []struct {
		name string
		o    lock.AcquireOptions
		set  bool
	}{
		{name: "lock"},
		{name: "semaphore", o: lock.AcquireOptions{Limit: 2}},
		{name: "shared", o: lock.AcquireOptions{Shared: true}},
		{name: "set", set: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := uniqueName(t)
			o := tc.o
			o.RenewEvery = 700 * time.Millisecond
			var lease *lock.Lease
			var err error
			if tc.set {
				lease, err = l.AcquireMulti(ctx, []string{name, name + "-b"}, 10*time.Second, &o)
			} else {
				lease, err = l.Acquire(ctx, name, 10*time.Second, &o)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = lease.Release(ctx) }()
			keys := []string{l.Key(name)}
			if tc.set {
				keys = append(keys, l.Key(name+"-b"))
			}
			for _, key := range keys {
				v := storedValue(t, c, lease, key)
				if !v.RenewedAt.Equal(v.AcquiredAt) || v.AcquiredAt.IsZero() {
					t.Errorf("%s: acquired %v, renewed %v: the acquisition is the first renewal", key, v.AcquiredAt, v.RenewedAt)
				}
				if v.RenewEvery != 700*time.Millisecond {
					t.Errorf("%s: renew every %v", key, v.RenewEvery)
				}
				if want := identity.StartTime(os.Getpid()); v.PIDStart != want || want == 0 {
					t.Errorf("%s: pid start %d, want this process's %d", key, v.PIDStart, want)
				}
			}
			time.Sleep(50 * time.Millisecond)
			before := serverMicros(t, c) / 1000
			if err := lease.Refresh(ctx, 0); err != nil {
				t.Fatal(err)
			}
			for _, key := range keys {
				v := storedValue(t, c, lease, key)
				if got := v.RenewedAt.UnixMilli(); got < before || !v.RenewedAt.After(v.AcquiredAt) {
					t.Errorf("%s: renewed at %d (acquired %v), the renewal was sent at %d", key, got, v.AcquiredAt, before)
				}
				if v.RenewEvery != 700*time.Millisecond || v.LeaseTTL != 10*time.Second {
					t.Errorf("%s: a renewal changed the other members: %+v", key, v)
				}
			}
		})
	}
}

// A lease taken without a period (renewed by hand) records none; an owner
// named by the caller records the start time it was given, not this
// process's.
func TestRenewalNoPeriod(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	lease, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Owner: "ci@build-3:4242", OwnerStart: 4711})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lease.Release(ctx) }()
	v := storedValue(t, c, lease, lease.Key())
	if v.RenewEvery != 0 || v.PIDStart != 4711 || v.RenewedAt.IsZero() {
		t.Errorf("value %+v", v)
	}
	h, err := l.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if h.RenewEvery != 0 || h.PIDStart != 4711 || !h.RenewedAt.Equal(v.RenewedAt) {
		t.Errorf("holder %+v", h)
	}
}

// A re-acquire by the token that holds the lock refreshes its TTL: a
// renewal too. One that names no owner keeps the stored owner, and the
// start time of that owner's process with it.
func TestRenewalReacquire(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	lease, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Owner: "ci@build-3:4242", OwnerStart: 4711, RenewEvery: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lease.Release(ctx) }()
	first := storedValue(t, c, lease, lease.Key())
	time.Sleep(20 * time.Millisecond)
	if _, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Token: lease.Token(), RenewEvery: 2 * time.Second}); err != nil {
		t.Fatal(err)
	}
	v := storedValue(t, c, lease, lease.Key())
	if !v.RenewedAt.After(first.RenewedAt) || !v.AcquiredAt.Equal(first.AcquiredAt) {
		t.Errorf("re-acquired: acquired %v renewed %v, first %v", v.AcquiredAt, v.RenewedAt, first.RenewedAt)
	}
	if v.Owner != "ci@build-3:4242" || v.PIDStart != 4711 || v.RenewEvery != 2*time.Second {
		t.Errorf("re-acquired without an owner: %+v", v)
	}
}

// A value that records no renewal yet gains one at its first renewal; a
// foreign plain lock renewed by its token (its whole value) is left as it
// is, its TTL extended.
func TestRenewalOldAndForeignValues(t *testing.T) {
	l, c := newLocker(t, nil)
	const tok = "0123456789abcdef0123456789abcdef"
	name := uniqueName(t)
	redisDo(t, c, "SET", l.Key(name), `{"token":"`+tok+`","fence":1,"owner":"o","ttl_ms":10000,"acquired_ms":1}`, "PX", "10000")
	if _, err := renewToken(ctx, l, name, tok, 0); err != nil {
		t.Fatal(err)
	}
	raw := redisDo(t, c, "GET", l.Key(name)).(string)
	v := lockwire.ParseValue(raw)
	if v.RenewedAt.UnixMilli() < 1e12 || v.AcquiredAt.UnixMilli() != 1 || v.Owner != "o" || v.Fence != 1 {
		t.Errorf("renewed value %s", raw)
	}
	foreign := uniqueName(t)
	redisDo(t, c, "SET", l.Key(foreign), tok, "PX", "1000")
	if _, err := renewToken(ctx, l, foreign, tok, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	if raw := redisDo(t, c, "GET", l.Key(foreign)).(string); raw != tok {
		t.Errorf("foreign lock rewritten: %q", raw)
	}
	if pttl := redisDo(t, c, "PTTL", l.Key(foreign)).(int64); pttl <= 1000 {
		t.Errorf("foreign lock not extended: pttl %d", pttl)
	}
}
