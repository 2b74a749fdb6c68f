package lock_test

import (
	"context"
	"errors"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/pkg/lock"
)

var ctx = context.Background()

func TestAcquireGetRelease(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	before := time.Now()
	floor := serverMicros(t, c)
	lease, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Owner: "ci@build-3:4242", Note: `deploy "#81"`})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Key() != "lock:"+name || lease.Name() != name || l.Key(name) != lease.Key() {
		t.Errorf("key %q name %q", lease.Key(), lease.Name())
	}
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(lease.Token()) {
		t.Errorf("token %q is not 32 hex digits", lease.Token())
	}
	if lease.Fence() < floor || lease.TTL() != 10*time.Second || lease.Owner() != "ci@build-3:4242" || lease.Note() != `deploy "#81"` {
		t.Errorf("lease %+v", lease)
	}
	if d := lease.AcquiredAt().Sub(before); d < -time.Second || d > 5*time.Second {
		t.Errorf("acquired at %v, started at %v", lease.AcquiredAt(), before)
	}
	if lease.ExpiresAt().Sub(lease.AcquiredAt()) != 10*time.Second {
		t.Errorf("expires %v acquired %v", lease.ExpiresAt(), lease.AcquiredAt())
	}
	raw := redisDo(t, c, "GET", lease.Key()).(string)
	if want := `{"token":"` + lease.Token() + `","fence":` + strconv.FormatInt(lease.Fence(), 10) + `,"owner":"ci@build-3:4242","note":"deploy \"#81\"","ttl_ms":10000,"acquired_ms":`; raw[:len(want)] != want {
		t.Errorf("stored value %s", raw)
	}
	h, err := l.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if h.Kind() != "lockctl" || h.Token != lease.Token() || h.Fence != lease.Fence() || h.Owner != lease.Owner() || h.Note != lease.Note() ||
		!h.AcquiredAt.Equal(lease.AcquiredAt()) || h.TTL <= 9*time.Second || h.TTL > 10*time.Second {
		t.Errorf("holder %+v", h)
	}
	if err := releaseToken(ctx, l, name, lease.Token()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ctx, name); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Get after release: %v", err)
	}
}

func TestDefaultOwner(t *testing.T) {
	l, _ := newLocker(t, nil)
	lease, err := l.Acquire(ctx, uniqueName(t), time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`^.+@.+:[0-9]+$`).MatchString(lease.Owner()) || lease.Owner() != identity.Owner() {
		t.Errorf("owner %q, identity.Owner %q", lease.Owner(), identity.Owner())
	}
}

func TestPrefixes(t *testing.T) {
	c := newClient(t)
	name := uniqueName(t)
	for _, tc := range []struct {
		opts *lock.Options
		key  string
	}{
		{nil, "lock:" + name},
		{&lock.Options{}, "lock:" + name},
		{&lock.Options{Prefix: "app/"}, "app/" + name},
		{&lock.Options{RawKeys: true}, name},
	} {
		l := lock.New(c, tc.opts)
		if got := l.Key(name); got != tc.key {
			t.Errorf("%+v: Key = %q, want %q", tc.opts, got, tc.key)
		}
		lease, err := l.Acquire(ctx, name, time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		if lease.Key() != tc.key || redisDo(t, c, "EXISTS", tc.key).(int64) != 1 {
			t.Errorf("lease key %q, want %q stored", lease.Key(), tc.key)
		}
		if err := releaseToken(ctx, l, name, lease.Token()); err != nil {
			t.Fatal(err)
		}
	}
}

func TestInvalidArguments(t *testing.T) {
	l, _ := newLocker(t, nil)
	name := uniqueName(t)
	for what, err := range map[string]error{
		"empty name": func() error { _, err := l.Acquire(ctx, "", time.Second, nil); return err }(),
		"zero ttl":   func() error { _, err := l.Acquire(ctx, name, 0, nil); return err }(),
		"sub-ms ttl": func() error { _, err := l.Acquire(ctx, name, time.Microsecond, nil); return err }(),
		"bad token": func() error {
			_, err := l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Token: `a"b`})
			return err
		}(),
		"renew ttl": func() error {
			lease, err := l.Acquire(ctx, name+".renew", time.Second, nil)
			if err != nil {
				return err
			}
			defer func() { _ = lease.Release(ctx) }()
			return lease.Refresh(ctx, -time.Second)
		}(),
		"renew tok": func() error { _, err := renewToken(ctx, l, name, "", time.Second); return err }(),
		"release":   releaseToken(ctx, l, name, ""),
		"check 0":   l.Fences().Check(ctx, name, 0, ""),
		"check res": l.Fences().Check(ctx, "", 1, ""),
	} {
		if !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", what, err)
		}
	}
}

func TestHeldNonBlocking(t *testing.T) {
	l, _ := newLocker(t, nil)
	name := uniqueName(t)
	a, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Owner: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	busy := 0
	observe := func(ev lock.AcquireEvent) {
		if ev.Late == nil && ev.Holder.Owner == "alice" {
			busy++
		}
	}
	_, err = l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Owner: "bob", Observer: observe})
	var held *lock.HeldError
	if !errors.Is(err, lock.ErrNotObtained) || !errors.As(err, &held) || errors.Is(err, lock.ErrNotOwner) {
		t.Fatalf("second acquire: %v", err)
	}
	if h := held.Holder; h.Owner != "alice" || h.Token != a.Token() || h.Fence != a.Fence() || h.TTL <= 0 || h.TTL > 10*time.Second {
		t.Errorf("holder %+v", h)
	}
	if busy != 1 {
		t.Errorf("Observer told of alice's hold %d times", busy)
	}
}

// The stale-DEL race: A's lease expires while A is paused, B acquires, and
// A then tries to release and renew. Both must be refused and B keep the lock.
func TestStaleReleaseAndRenewAreRefused(t *testing.T) {
	l, _ := newLocker(t, nil)
	name := uniqueName(t)
	a, err := l.Acquire(ctx, name, 50*time.Millisecond, &lock.AcquireOptions{Owner: "A"})
	if err != nil {
		t.Fatal(err)
	}
	var b *lock.Lease
	for deadline := time.Now().Add(5 * time.Second); b == nil; {
		b, err = l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Owner: "B"})
		if err != nil && (!errors.Is(err, lock.ErrNotObtained) || time.Now().After(deadline)) {
			t.Fatal(err)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if b.Fence() <= a.Fence() {
		t.Errorf("B's fence %d not above A's %d", b.Fence(), a.Fence())
	}
	var held *lock.HeldError
	err = releaseToken(ctx, l, name, a.Token())
	if !errors.Is(err, lock.ErrNotOwner) || !errors.As(err, &held) || held.Holder.Owner != "B" || held.Holder.Token != b.Token() {
		t.Errorf("A's release: %v", err)
	}
	if _, err := renewToken(ctx, l, name, a.Token(), time.Minute); !errors.Is(err, lock.ErrNotOwner) || !errors.As(err, &held) || held.Holder.Owner != "B" {
		t.Errorf("A's renew: %v", err)
	}
	h, err := l.Get(ctx, name)
	if err != nil || h.Token != b.Token() || h.TTL > 10*time.Second {
		t.Fatalf("after A's attempts: %+v, %v", h, err)
	}
	if _, err := renewToken(ctx, l, name, b.Token(), 20*time.Second); err != nil {
		t.Errorf("B's renew: %v", err)
	}
	if err := releaseToken(ctx, l, name, b.Token()); err != nil {
		t.Errorf("B's release: %v", err)
	}
}

func TestRenew(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	lease, err := l.Acquire(ctx, name, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	ttl, err := renewToken(ctx, l, name, lease.Token(), 30*time.Second)
	if err != nil || ttl != 30*time.Second {
		t.Fatalf("renew: %v %v", ttl, err)
	}
	if p := redisDo(t, c, "PTTL", lease.Key()).(int64); p <= 29000 || p > 30000 {
		t.Errorf("PTTL after renew %d", p)
	}
	// A renewal after expiry must not bring the lock back.
	if _, err := renewToken(ctx, l, name, lease.Token(), 30*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	if _, err := renewToken(ctx, l, name, lease.Token(), time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("renew after expiry: %v", err)
	}
	if n := redisDo(t, c, "EXISTS", lease.Key()).(int64); n != 0 {
		t.Errorf("renew re-created the expired lock")
	}
}

func TestReleaseOutcomes(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	a, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Owner: "alice@h:1"})
	if err != nil {
		t.Fatal(err)
	}
	// Someone else's token: refused with the holder's owner and TTL.
	err = releaseToken(ctx, l, name, "0123456789abcdef0123456789abcdef")
	var held *lock.HeldError
	if !errors.Is(err, lock.ErrNotOwner) || !errors.As(err, &held) {
		t.Fatalf("wrong token: %v", err)
	}
	if held.Holder.Owner != "alice@h:1" || held.Holder.TTL <= 5*time.Second || held.Holder.TTL > 10*time.Second {
		t.Errorf("holder %+v", held.Holder)
	}
	if redisDo(t, c, "EXISTS", a.Key()).(int64) != 1 {
		t.Fatal("refused release deleted the lock")
	}
	// Ours: released.
	if err := releaseToken(ctx, l, name, a.Token()); err != nil {
		t.Fatalf("release: %v", err)
	}
	// Gone: not held.
	if err := releaseToken(ctx, l, name, a.Token()); !errors.Is(err, lock.ErrNotHeld) || errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("second release: %v", err)
	}
	// A Locker with RawKeys does the same compare-and-delete on a raw key.
	b, err := l.Acquire(ctx, name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	raw := lock.New(c, &lock.Options{RawKeys: true})
	if err := releaseToken(ctx, raw, b.Key(), a.Token()); !errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("raw key release with a stale token: %v", err)
	}
	if err := releaseToken(ctx, raw, b.Key(), b.Token()); err != nil {
		t.Errorf("raw key release: %v", err)
	}
}

func TestSameTokenRetryIsSuccess(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	o := &lock.AcquireOptions{Token: "retry-token-1", Owner: "o", Note: "n"}
	first, err := l.Acquire(ctx, name, time.Second, o)
	if err != nil {
		t.Fatal(err)
	}
	// Another acquisition in between would show up as a fence gap.
	if _, err := l.Acquire(ctx, name, time.Second, nil); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatal(err)
	}
	again, err := l.Acquire(ctx, name, 20*time.Second, o)
	if err != nil {
		t.Fatalf("retry with the same token: %v", err)
	}
	if again.Fence() != first.Fence() || again.Token() != first.Token() || !again.AcquiredAt().Equal(first.AcquiredAt()) || again.Owner() != "o" || again.Note() != "n" {
		t.Errorf("retry lease %+v, first %+v", again, first)
	}
	if p := redisDo(t, c, "PTTL", first.Key()).(int64); p <= 19000 {
		t.Errorf("retry did not refresh the TTL: PTTL %d", p)
	}
	if n, _ := l.Fences().Peek(ctx, name); n != first.Fence() {
		t.Errorf("fence counter %d after retry, want %d", n, first.Fence())
	}
}

func TestForeignStringLock(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	key := l.Key(name)
	redisDo(t, c, "SET", key, "5f0c6a3e-other-client", "PX", 10000)
	_, err := l.Acquire(ctx, name, time.Second, nil)
	var held *lock.HeldError
	if !errors.As(err, &held) || !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("acquire over a foreign lock: %v", err)
	}
	if h := held.Holder; h.Kind() != "string" || h.Owner != "5f0c6a3e-other-client" || h.Fence != 0 || h.TTL <= 0 {
		t.Errorf("holder %+v", h)
	}
	// The foreign value is that client's token: renew and release accept it.
	if _, err := renewToken(ctx, l, name, "5f0c6a3e-other-client", time.Minute); err != nil {
		t.Errorf("renew with the foreign token: %v", err)
	}
	if err := releaseToken(ctx, l, name, "5f0c6a3e-other"); !errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("release with a prefix of the foreign token: %v", err)
	}
	if err := releaseToken(ctx, l, name, "5f0c6a3e-other-client"); err != nil {
		t.Errorf("release with the foreign token: %v", err)
	}
}

func TestWrongTypeKeys(t *testing.T) {
	l, c := newLocker(t, nil)
	for typ, setup := range map[string][]any{
		"list": {"RPUSH", "", "a"},
		"set":  {"SADD", "", "a"},
		"hash": {"HSET", "", "field", "value"},
		"zset": {"ZADD", "", 1, "a"},
	} {
		name := uniqueName(t) + typ
		setup[1] = l.Key(name)
		redisDo(t, c, setup...)
		check := func(what string, err error) {
			t.Helper()
			var wt *lock.DataError
			if !errors.Is(err, lock.ErrWrongType) || !errors.As(err, &wt) || wt.Err != lock.ErrWrongType || wt.Type != typ || wt.Key != l.Key(name) {
				t.Errorf("%s on a %s: %v", what, typ, err)
			}
		}
		_, err := l.Acquire(ctx, name, time.Second, nil)
		check("acquire", err)
		start := time.Now()
		_, err = l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Wait: time.Minute})
		check("waiting acquire", err)
		if time.Since(start) > 10*time.Second {
			t.Errorf("waiting acquire on a %s took %v", typ, time.Since(start))
		}
		_, err = renewToken(ctx, l, name, "t", time.Second)
		check("renew", err)
		check("release", releaseToken(ctx, l, name, "t"))
		_, err = l.Get(ctx, name)
		check("get", err)
		if n, _ := l.Fences().Peek(ctx, name); n != 0 {
			t.Errorf("refused acquire on a %s burned fence %d", typ, n)
		}
	}
}

func TestRedissonHashLock(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	key := l.Key(name)
	const holder = "8743c9c0-0795-4907-87fd-6c719a6b4586:1"
	redisDo(t, c, "HSET", key, holder, 1)
	redisDo(t, c, "PEXPIRE", key, 30000)
	check := func(what string, err error, kind error) {
		t.Helper()
		var held *lock.HeldError
		if !errors.Is(err, kind) || !errors.As(err, &held) {
			t.Fatalf("%s: %v", what, err)
		}
		if h := held.Holder; h.Kind() != "redisson" || h.Owner != holder || h.Reentry != 1 || h.TTL <= 0 || h.TTL > 30*time.Second {
			t.Errorf("%s: holder %+v", what, h)
		}
	}
	_, err := l.Acquire(ctx, name, time.Second, nil)
	check("acquire", err, lock.ErrNotObtained)
	_, err = renewToken(ctx, l, name, "t", time.Second)
	check("renew", err, lock.ErrNotOwner)
	check("release", releaseToken(ctx, l, name, "t"), lock.ErrNotOwner)
	h, err := l.Get(ctx, name)
	if err != nil || h.Kind() != "redisson" || h.Owner != holder {
		t.Errorf("get: %+v %v", h, err)
	}
	if redisDo(t, c, "EXISTS", key).(int64) != 1 {
		t.Error("the Redisson lock was deleted")
	}
}

func TestScriptFlush(t *testing.T) {
	l, c := newLocker(t, nil)
	name := uniqueName(t)
	lease, err := l.Acquire(ctx, name, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := releaseToken(ctx, l, name, lease.Token()); err != nil {
		t.Fatal(err)
	}
	for i, step := range []func() error{
		func() (err error) { lease, err = l.Acquire(ctx, name, time.Second, nil); return err },
		func() error { _, err := renewToken(ctx, l, name, lease.Token(), time.Second); return err },
		func() error { _, err := l.Get(ctx, name); return err },
		func() error { return l.Fences().Check(ctx, name, lease.Fence(), lease.Token()) },
		func() error { return releaseToken(ctx, l, name, lease.Token()) },
	} {
		redisDo(t, c, "SCRIPT", "FLUSH")
		if err := step(); err != nil {
			t.Fatalf("step %d after SCRIPT FLUSH: %v", i, err)
		}
	}
}

func TestOneCommandEach(t *testing.T) {
	c := newClient(t)
	hook := &countingHook{}
	c.AddHook(hook)
	l := lock.New(c, nil)
	name := uniqueName(t)
	warm, err := l.Acquire(ctx, name, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := warm.Refresh(ctx, time.Second); err != nil {
		t.Fatal(err)
	}
	if err := warm.Release(ctx); err != nil {
		t.Fatal(err)
	}
	count := func(what string, f func() error) {
		t.Helper()
		before := hook.n.Load()
		if err := f(); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n := hook.n.Load() - before; n != 1 {
			t.Errorf("%s sent %d commands, want 1", what, n)
		}
	}
	var lease *lock.Lease
	count("acquire", func() (err error) { lease, err = l.Acquire(ctx, name, time.Second, nil); return err })
	count("renew", func() error { return lease.Refresh(ctx, time.Second) })
	count("release", func() error { return lease.Release(ctx) })
	// A refused call also builds its error from that one reply.
	other, err := l.Acquire(ctx, name, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	count("refused acquire", func() error {
		if _, err := l.Acquire(ctx, name, time.Second, nil); !errors.Is(err, lock.ErrNotObtained) {
			return err
		}
		return nil
	})
	count("refused release", func() error {
		if err := lease.Release(ctx); !errors.Is(err, lock.ErrNotOwner) {
			return err
		}
		return nil
	})
	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// "Not held" is answered by the same one command, semaphore check included.
	count("release of a free lock", func() error {
		if err := lease.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
			return err
		}
		return nil
	})
	count("renew of a free lock", func() error {
		if err := lease.Refresh(ctx, time.Second); !errors.Is(err, lock.ErrNotHeld) {
			return err
		}
		return nil
	})
}

func TestWaitReplicasWithoutReplicasFails(t *testing.T) {
	c := newClient(t)
	l := lock.New(c, &lock.Options{WaitReplicas: 1, WaitReplicasTimeout: 100 * time.Millisecond})
	plain := lock.New(c, nil)
	name := uniqueName(t)
	_, err := l.Acquire(ctx, name, 10*time.Second, nil)
	var re *lock.ReplicationError
	if !errors.Is(err, lock.ErrUnavailable) || !errors.As(err, &re) || re.Want != 1 || re.Acked != 0 {
		t.Fatalf("acquire with 0 replicas: %v", err)
	}
	if _, err := plain.Get(ctx, name); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("the unreplicated lock was kept: %v", err)
	}
	lease, err := plain.Acquire(ctx, name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := renewToken(ctx, l, name, lease.Token(), 10*time.Second); !errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("renew with 0 replicas: %v", err)
	}
	// Zero replicas asked for is always satisfied.
	zero := lock.New(c, &lock.Options{WaitReplicas: 0})
	if _, err := renewToken(ctx, zero, name, lease.Token(), 10*time.Second); err != nil {
		t.Error(err)
	}
}
