package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
)

// A Redisson fair lock's waiter sleeps on its own channel until Redisson
// wakes it there; force-release must, as Redisson's forceUnlock does, or
// the waiter sleeps up to the lease.
func TestForceReleaseWakesRedissonFairHead(t *testing.T) {
	ctx := context.Background()
	c := clientFor(t, srv.URL)
	runs++
	prefix := fmt.Sprintf("fair%d:", runs)
	in := inspect.New(c, &inspect.Options{Prefix: prefix})
	key := prefix + "job"
	queue, timeouts := "redisson_lock_queue:{"+key+"}", "redisson_lock_timeout:{"+key+"}"
	const dead, head, next = "5d1c7a4e-1b2a-4c3d-9e8f-0a1b2c3d4e5f:10", "5d1c7a4e-1b2a-4c3d-9e8f-0a1b2c3d4e5f:11", foreignUUID + ":12"
	do(t, c, "HSET", key, redissonField, 1)
	do(t, c, "PEXPIRE", key, 60000)
	// The dead waiter's place timed out; the others keep theirs for 5 min
	// and 10 min, as Redisson's threadWaitTime gives them.
	now := time.Now().UnixMilli()
	do(t, c, "RPUSH", queue, dead, head, next)
	do(t, c, "ZADD", timeouts, now-1000, dead, now+300000, head, now+600000, next)

	d, err := in.Lock(ctx, "job")
	if err != nil {
		t.Fatal(err)
	}
	if d.RedissonQueued != 2 || d.Lock == nil || d.Lock.Waiters() != 2 {
		t.Fatalf("fair queue counted %d, waiters %d; want 2 (the live waiters)", d.RedissonQueued, d.Lock.Waiters())
	}

	// The head's channel, as Redisson's fair lock subscribes it.
	sub := c.Subscribe(ctx, inspect.RedissonChannel(key)+":"+head, inspect.RedissonChannel(key)+":"+next)
	defer sub.Close()
	for range 2 {
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := in.ForceRelease(ctx, "job", redissonField, nil); err != nil {
		t.Fatal(err)
	}
	// Published by the same script: it is there at once. (The bound only
	// keeps a broken build from hanging; Redisson's own wait would be the
	// lease, a minute here.)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := sub.ReceiveMessage(rctx)
	if err != nil {
		t.Fatalf("no wake-up for the head of the fair queue: %v", err)
	}
	if m.Channel != "redisson_lock__channel:{"+key+"}:"+head || m.Payload != inspect.RedissonUnlockMessage {
		t.Fatalf("woke %s with %q; want the head %s with Redisson's unlock message", m.Channel, m.Payload, head)
	}
	// The queue as Redisson's forceUnlock leaves it: timed-out heads gone,
	// the woken head first until its own attempt takes the lock.
	if got := fmt.Sprint(do(t, c, "LRANGE", queue, 0, -1)); got != fmt.Sprint([]any{head, next}) {
		t.Fatalf("queue %s", got)
	}
	if got := fmt.Sprint(do(t, c, "ZRANGE", timeouts, 0, -1)); got != fmt.Sprint([]any{head, next}) {
		t.Fatalf("timeouts %s", got)
	}
	// Only the head is woken: the next waiter's channel stays quiet.
	do(t, c, "PUBLISH", inspect.RedissonChannel(key)+":"+next, "marker")
	if m, err := sub.ReceiveMessage(rctx); err != nil || m.Payload != "marker" {
		t.Fatalf("next waiter got %v, %v before the marker", m, err)
	}
}

// A Redisson read-write lock is a held lock: listed per hold with its mode,
// and refused as held (not "not a lock"); its rwlock_timeout keys are not
// locks.
func TestRedissonReadWriteLock(t *testing.T) {
	ctx := context.Background()
	c := clientFor(t, srv.URL)
	runs++
	prefix := fmt.Sprintf("rw%d:", runs)
	in := inspect.New(c, &inspect.Options{Prefix: prefix})
	key := prefix + "{doc}"
	do(t, c, "HSET", key, "mode", "read", redissonField, 2, foreignUUID+":3", 1)
	do(t, c, "PEXPIRE", key, 60000)
	for _, k := range []string{redissonField + ":rwlock_timeout:1", redissonField + ":rwlock_timeout:2", foreignUUID + ":3:rwlock_timeout:1"} {
		do(t, c, "SET", key+":"+k, 1)
	}
	var rows []inspect.Lock
	if err := in.Locks(ctx, "", nil, func(l inspect.Lock) error { rows = append(rows, l); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 {
		t.Fatalf("%d rows, want one per hold: %+v", len(rows), rows)
	}
	for _, l := range rows {
		if l.Name != "{doc}" || l.Kind() != "redisson" || l.Mode() != inspect.ModeRead || l.Holders != 2 {
			t.Errorf("row %+v", l)
		}
		if want := map[string]int64{redissonField: 2, foreignUUID + ":3": 1}[l.Owner]; l.Reentry != want {
			t.Errorf("%s: reentry %d, want %d", l.Owner, l.Reentry, want)
		}
	}
	var orphans []inspect.Orphan
	if err := in.Orphans(ctx, "", nil, func(o inspect.Orphan) error { orphans = append(orphans, o); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(orphans) != 0 {
		t.Fatalf("orphans %+v: Redisson's timeout keys are not locks", orphans)
	}
	d, err := in.Lock(ctx, "{doc}")
	if err != nil {
		t.Fatal(err)
	}
	if d.Mode() != inspect.ModeRead || len(d.RWHolds) != 2 {
		t.Fatalf("detail mode %q, holds %+v", d.Mode(), d.RWHolds)
	}

	do(t, c, "HSET", prefix+"w", "mode", "write", foreignUUID+":4:write", 1)
	do(t, c, "PEXPIRE", prefix+"w", 60000)
	l := lock.New(c, &lock.Options{Prefix: prefix})
	for _, name := range []string{"{doc}", "w"} {
		_, err := l.Acquire(ctx, name, time.Minute, nil)
		var held *lock.HeldError
		if !errors.As(err, &held) || !errors.Is(err, lock.ErrNotObtained) {
			t.Fatalf("acquire %s: %v; want held", name, err)
		}
		if held.Holder.Kind() != "redisson" || held.Holder.RWMode == "" {
			t.Fatalf("acquire %s: holder %+v", name, held.Holder)
		}
	}
}
