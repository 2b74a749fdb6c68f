package inspect_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
)

// On a Cluster the audit stream lives in another slot than the lock, so a
// force-release checks, writes the record, then releases the hold the
// check found. A Redisson read-write lock's holds go one by one there too:
// the first reader's hold and its timeout keys (in the lock's slot, as
// Redisson puts them), then the last reader's, which deletes the hash and
// wakes Redisson's waiters on its read-write channel with its unlock
// message.
func TestForceReleaseRWLockOnCluster(t *testing.T) {
	cl := redistest.StartClusterTest(t)
	ctx := context.Background()
	c := cl.Client(t)
	in := inspect.New(c, nil)
	key := "lock:rw"
	const a, b = foreignUUID + ":1", foreignUUID + ":2"
	ta1, ta2, tb1 := inspect.RedissonRWTimeout(key, a, 1), inspect.RedissonRWTimeout(key, a, 2), inspect.RedissonRWTimeout(key, b, 1)
	if ta1 != "{lock:rw}:"+a+":rwlock_timeout:1" {
		t.Fatalf("timeout key %q", ta1)
	}
	do(t, c, "HSET", key, "mode", "read", a, 2, b, 1)
	do(t, c, "PEXPIRE", key, 60000)
	for _, k := range []string{ta1, ta2, tb1} {
		do(t, c, "SET", k, 1, "PX", 60000)
	}
	sub := c.Subscribe(ctx, inspect.RedissonRWChannel(key))
	t.Cleanup(func() { _ = sub.Close() })
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}

	r, err := in.ForceRelease(ctx, "rw", a, &inspect.ReleaseOptions{Reason: "reader died"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Holder.RWMode != inspect.ModeRead || r.Holder.Owner != a || r.Holder.Reentry != 2 || r.HoldersLeft != 1 || r.AuditID == "" {
		t.Fatalf("released %+v", r)
	}
	if f := c.HGetAll(ctx, key).Val(); len(f) != 2 || f["mode"] != "read" || f[b] != "1" {
		t.Fatalf("left %v, want the other reader", f)
	}
	if n := c.Exists(ctx, ta1).Val() + c.Exists(ctx, ta2).Val(); n != 0 {
		t.Errorf("%d timeout key(s) of the released reader left", n)
	}
	if c.Exists(ctx, tb1).Val() != 1 {
		t.Error("the other reader's timeout key is gone")
	}
	audit, err := in.Audit(ctx, 1)
	if err != nil || len(audit) != 1 || audit[0].ID != r.AuditID || audit[0].Owner != a || audit[0].Reason != "reader died" {
		t.Fatalf("audit %+v %v", audit, err)
	}

	// A token that holds nothing: refused, nothing changed, nothing audited.
	_, err = in.ForceRelease(ctx, "rw", a, nil)
	var held *lock.HeldError
	if !errors.As(err, &held) || !errors.Is(err, lock.ErrNotOwner) || held.Holder.RWMode != inspect.ModeRead || held.Holder.Owner != b {
		t.Fatalf("stale token: %v", err)
	}
	if n := c.XLen(ctx, inspect.AuditKey).Val(); n != 1 {
		t.Errorf("%d audit records, want 1", n)
	}

	if _, err := in.ForceRelease(ctx, "rw", b, nil); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, key).Val() + c.Exists(ctx, tb1).Val(); n != 0 {
		t.Errorf("%d of the lock and its last timeout key left", n)
	}
	// Published by the release script itself. (The bound only keeps a
	// broken build from hanging.)
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	m, err := sub.ReceiveMessage(rctx)
	if err != nil || m.Channel != "redisson_rwlock:{lock:rw}" || m.Payload != inspect.RedissonUnlockMessage {
		t.Fatalf("wake-up %+v %v, want %s on redisson_rwlock:{lock:rw}", m, err, inspect.RedissonUnlockMessage)
	}
}
