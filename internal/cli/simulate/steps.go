package simulate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/lock"
)

// The lock and the resource every lock scenario fights over.
const (
	lockName = "order:42"
	resource = "order:42"
)

// sec is a simulated time or duration in seconds.
func sec(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// token is actor's lock token: fixed, so timelines are reproducible, and
// starting with the actor's letter, so a shortened token shows whose it is.
func token(actor string) string {
	sum := sha256.Sum256([]byte("lockctl simulate " + actor))
	h := hex.EncodeToString(sum[:])
	p := strings.ToLower(actor)
	if len(p) == 1 && p[0] >= 'a' && p[0] <= 'f' {
		return strings.Repeat(p, 4) + h[:28]
	}
	return h[:32]
}

// lockNode is the server locks are taken on; failover switches it.
func (e *env) lockNode() *node {
	if e.lockOn == "" {
		e.lockOn = "redis"
	}
	return e.node(e.lockOn)
}

// store is the protected resource: a separate server, as a database or a
// file store would be, so that a lock server failover does not touch it.
func (e *env) store() *node { return e.node("store") }

func (e *env) lockKey() string { return e.lockNode().key("lock:" + lockName) }

func (e *env) resourceKey() string { return e.store().key("resource:" + resource) }

// locker is pkg/lock on node n, its scripts loaded beforehand so that the
// timeline shows the EVALSHA every later call sends, not a one-off
// NOSCRIPT retry.
func (e *env) locker(n *node) *lock.Locker {
	if l := e.lockers[n.name]; l != nil {
		return l
	}
	l := lock.New(n.rdb, &lock.Options{Prefix: n.prefix + "lock:"})
	if e.lockers == nil {
		e.lockers = map[string]*lock.Locker{}
	}
	e.lockers[n.name] = l
	e.warm(n, l)
	return l
}

// warm runs every lock script once, unrecorded, and deletes what it wrote.
func (e *env) warm(n *node, l *lock.Locker) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const name = "lockctl-simulate-warmup"
	tok := token("warmup")
	if _, err := l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Token: tok, Owner: "warmup"}); err != nil {
		e.fail(fmt.Errorf("simulate: loading lock scripts: %w", err))
		return
	}
	// Only the scripts' loading matters here, not what each call returns.
	if lease, err := l.Resume(ctx, name, tok); err == nil {
		_ = lease.Refresh(ctx, time.Second)
		_ = lease.Release(ctx)
	}
	if lease, err := l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Token: tok, Owner: "warmup", Shared: true}); err == nil {
		_ = lease.Release(ctx)
	}
	res := n.key("lockctl-simulate-warmup")
	_ = l.Fences().Check(ctx, res, 1, tok)
	key := l.Key(name)
	n.rdb.Del(ctx, key, lockwire.AuxKey(lockwire.KindFence, key), lockwire.AuxKey(lockwire.KindSem, key), lockwire.AuxKey(lockwire.KindSemVal, key),
		lockwire.AuxKey(lockwire.KindChecked, res))
}

// rawAcquire is the hand-written lock: SET key token NX PX ttl.
func (e *env) rawAcquire(ctx context.Context, actor string, ttl time.Duration) bool {
	n := e.lockNode()
	ok, _ := n.rdb.Do(ctx, "SET", e.lockKey(), token(actor), "NX", "PX", e.ms(ttl)).Result()
	if ok == "OK" {
		e.grant(actor, ttl)
		return true
	}
	return false
}

// rawDel is the hand-written release: DEL, whoever holds the key.
func (e *env) rawDel(ctx context.Context, actor string) {
	e.lockNode().rdb.Do(ctx, "DEL", e.lockKey())
	e.drop(actor)
}

// acquire takes the lock through pkg/lock, without waiting (waiting has no
// meaning on virtual time).
func (e *env) acquire(ctx context.Context, actor string, ttl time.Duration) *lock.Lease {
	return e.acquireWith(ctx, e.locker(e.lockNode()), actor, ttl)
}

func (e *env) acquireWith(ctx context.Context, l *lock.Locker, actor string, ttl time.Duration) *lock.Lease {
	lease, err := l.Acquire(ctx, lockName, e.wall(ttl), &lock.AcquireOptions{Token: token(actor), Owner: actor})
	if err != nil {
		e.expect(err, lock.ErrNotObtained, lock.ErrUnavailable)
		return nil
	}
	e.grant(actor, ttl)
	if e.held == nil {
		e.held = map[string]heldLease{}
	}
	e.held[actor] = heldLease{lease: lease, by: l}
	return lease
}

// leaseOf is actor's lease on the lock node's Locker: the one it was
// granted when that Locker granted it, else the lease its token holds there
// (Resume), as a holder that knows only its token finds it.
func (e *env) leaseOf(ctx context.Context, actor string) (*lock.Lease, error) {
	l := e.locker(e.lockNode())
	if h, ok := e.held[actor]; ok && h.by == l {
		return h.lease, nil
	}
	return l.Resume(ctx, lockName, token(actor))
}

// release gives the lock back through pkg/lock's compare-and-delete.
func (e *env) release(ctx context.Context, actor string) {
	lease, err := e.leaseOf(ctx, actor)
	if err == nil {
		err = lease.Release(ctx)
	}
	e.expect(err, lock.ErrNotHeld, lock.ErrNotOwner)
	e.drop(actor)
}

// renew extends actor's lease through pkg/lock.
func (e *env) renew(ctx context.Context, actor string, ttl time.Duration) {
	lease, err := e.leaseOf(ctx, actor)
	if err == nil {
		err = lease.Refresh(ctx, e.wall(ttl))
	}
	if err == nil {
		e.extend(actor, ttl)
		return
	}
	if !errors.Is(err, errPartition) {
		e.expect(err, lock.ErrNotHeld, lock.ErrNotOwner)
	}
}

// write is an unguarded write to the resource.
func (e *env) write(ctx context.Context, actor string) {
	err := e.store().rdb.Do(ctx, "SET", e.resourceKey(), "written by "+actor).Err()
	e.wrote(actor, err == nil)
}

// fencedWrite asks the resource to accept fence first (pkg/lock's
// Fences.Check, the storage-side guard) and writes only if it does.
func (e *env) fencedWrite(ctx context.Context, actor string, fence int64) {
	err := e.locker(e.store()).Fences().Check(ctx, e.store().key(resource), fence, token(actor))
	if err != nil {
		e.expect(err, lock.ErrStaleFence)
		e.wrote(actor, false)
		return
	}
	err = e.store().rdb.Do(ctx, "SET", e.resourceKey(), fmt.Sprintf("written by %s (fence %d)", actor, fence)).Err()
	e.wrote(actor, err == nil)
}

// expect fails the run on an error that is not one of the outcomes the
// scenario is about (a transport error on a real server, say).
func (e *env) expect(err error, allowed ...error) {
	if err == nil {
		return
	}
	for _, a := range allowed {
		if errors.Is(err, a) {
			return
		}
	}
	if errors.Is(err, errPartition) || errors.Is(err, errDown) {
		return
	}
	e.fail(err)
}

func plural(n int, one, many string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, one)
	}
	return fmt.Sprintf("%d %s", n, many)
}

func and(names []string) string {
	switch len(names) {
	case 0:
		return "nobody"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}
