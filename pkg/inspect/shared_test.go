package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// sharedHolders takes name in shared mode three times under prefix, with
// TTLs 60s, 50s and 40s.
func sharedHolders(t *testing.T, c *redis.Client, prefix, name string) []*lock.Lease {
	t.Helper()
	l := lock.New(c, &lock.Options{Prefix: prefix})
	var out []*lock.Lease
	for i, owner := range []string{"ci@build-1:11", "ci@build-2:22", "ops@bastion:33"} {
		le, err := l.Acquire(context.Background(), name, time.Duration(60-10*i)*time.Second,
			&lock.AcquireOptions{Shared: true, Owner: owner, Note: fmt.Sprintf("reader %d", i+1)})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, le)
	}
	return out
}

// waitingWriter starts an exclusive acquirer of name that waits until the
// test ends, and returns its token once it is listed among the writers.
func waitingWriter(t *testing.T, c *redis.Client, prefix, name string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	tok := token(t)
	l := lock.New(c, &lock.Options{Prefix: prefix})
	go func() {
		defer close(done)
		if _, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Token: tok, Wait: -1}); err != nil && ctx.Err() == nil {
			t.Errorf("waiting writer: %v", err)
		}
	}()
	w := lockwire.AuxKey(lockwire.KindWriters, prefix+name)
	waitFor(t, func() bool { return c.ZScore(ctx, w, tok).Err() == nil })
	return tok
}

func TestSharedHoldersListed(t *testing.T) {
	in, c, prefix, _ := fixture(t)
	ctx := context.Background()
	shared := sharedHolders(t, c, prefix, "rw")
	semaphore(t, c, prefix, "pool")

	var rows []string
	err := in.Locks(ctx, "", nil, func(l inspect.Lock) error {
		if l.Name == "rw" || l.Name == "pool" || l.Name == "deploy" {
			rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%s|%d|%d/%d|%s", l.Name, l.Mode(), l.Kind(), l.Owner, l.Host, l.PID,
				l.Holders, l.Limit, l.Note))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(rows)
	want := []string{
		"deploy|exclusive|lockctl|ci@build-3:4242|build-3|4242|0/0|deploy #81",
		"pool|semaphore|semaphore|ci@build-3:11|build-3|11|2/2|shard 1",
		"pool|semaphore|semaphore|ops@bastion:22|bastion|22|2/2|",
		"rw|shared|shared|ci@build-1:11|build-1|11|3/0|reader 1",
		"rw|shared|shared|ci@build-2:22|build-2|22|3/0|reader 2",
		"rw|shared|shared|ops@bastion:33|bastion|33|3/0|reader 3",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("listing:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}

	// The detail view: every shared holder, with the fence they share and
	// their own token hash and TTL. (They may have been acquired within
	// one millisecond, so their order is not checked.)
	d, err := in.Lock(ctx, "rw")
	if err != nil {
		t.Fatal(err)
	}
	if d.Lock != nil || !d.Held() || d.Mode() != inspect.ModeShared || d.Limit != 0 || len(d.Holders) != 3 || len(d.Writers) != 0 {
		t.Fatalf("shared detail %+v", d)
	}
	byHash := map[string]int{}
	for i, le := range shared {
		byHash[inspect.TokenHash(le.Token())] = i
	}
	for _, h := range d.Holders {
		i, ok := byHash[h.TokenHash]
		delete(byHash, h.TokenHash)
		le := shared[i]
		if !ok || h.Kind() != "shared" || !h.Shared || h.Owner != le.Owner() || h.TokenHash != inspect.TokenHash(le.Token()) ||
			h.Fence != le.Fence() || h.Fence != shared[0].Fence() || h.Holders != 3 ||
			h.TTL <= time.Duration(50-10*i)*time.Second || h.TTL > time.Duration(60-10*i)*time.Second {
			t.Errorf("holder %d: %+v", i+1, h)
		}
	}
	if len(byHash) != 0 {
		t.Errorf("holders missing: %v", byHash)
	}
	if d.WritersKey != lockwire.AuxKey(lockwire.KindWriters, prefix+"rw") {
		t.Errorf("writers key %q", d.WritersKey)
	}

	// A slot whose value is gone is still a shared holder, known by its
	// token only.
	do(t, c, "HDEL", d.SemValKey, shared[2].Token())
	d, err = in.Lock(ctx, "rw")
	if err != nil {
		t.Fatal(err)
	}
	var bare *inspect.Lock
	for i := range d.Holders {
		if d.Holders[i].Owner == "" {
			bare = &d.Holders[i]
		}
	}
	if len(d.Holders) != 3 || bare == nil || bare.Mode() != inspect.ModeShared || bare.TokenHash != inspect.TokenHash(shared[2].Token()) {
		t.Errorf("holder without value: %+v", d.Holders)
	}
}

// An exclusive acquirer that waits is listed, for a lock held shared as for
// a plain one; the free lock has no mode.
func TestLockDetailWaitingWriters(t *testing.T) {
	in, c, prefix, _ := fixture(t)
	ctx := context.Background()
	sharedHolders(t, c, prefix, "rw")
	tok := waitingWriter(t, c, prefix, "rw")
	d, err := in.Lock(ctx, "rw")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Holders) != 3 || len(d.Writers) != 1 {
		t.Fatalf("detail: %d holders, writers %+v", len(d.Holders), d.Writers)
	}
	// The list keeps a writer for 3x the polling interval, at least 3s.
	w := d.Writers[0]
	if w.TokenHash != inspect.TokenHash(tok) || w.TTL <= 0 || w.TTL > time.Minute || w.Expires.IsZero() {
		t.Errorf("writer %+v (token hash %s)", w, inspect.TokenHash(tok))
	}
	// The writers keep new shared holders out.
	l := lock.New(c, &lock.Options{Prefix: prefix})
	var held *lock.HeldError
	if _, err := l.Acquire(ctx, "rw", time.Minute, &lock.AcquireOptions{Shared: true}); !errors.As(err, &held) || held.Holder.Kind() != "writers" {
		t.Errorf("shared acquire with a writer waiting: %v", err)
	}

	// A plain lock with an exclusive acquirer waiting.
	tok2 := waitingWriter(t, c, prefix, "deploy")
	d, err = in.Lock(ctx, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	if d.Lock == nil || d.Mode() != inspect.ModeExclusive || len(d.Writers) != 1 || d.Writers[0].TokenHash != inspect.TokenHash(tok2) {
		t.Errorf("plain lock: mode %q, writers %+v", d.Mode(), d.Writers)
	}
	// Members past their expiry wait no more: not shown.
	do(t, c, "ZADD", lockwire.AuxKey(lockwire.KindWriters, prefix+"deploy"), 1, "gone")
	if d, err = in.Lock(ctx, "deploy"); err != nil || len(d.Writers) != 1 {
		t.Errorf("expired writer shown: %+v %v", d.Writers, err)
	}
	if d, err = in.Lock(ctx, "nothing-here"); err != nil || d.Mode() != "" || len(d.Writers) != 0 {
		t.Errorf("free lock: %+v %v", d, err)
	}
}

func TestForceReleaseSharedHolder(t *testing.T) {
	in, c, prefix, _ := fixture(t)
	ctx := context.Background()
	shared := sharedHolders(t, c, prefix, "rw")
	semKey, valKey := lockwire.AuxKey(lockwire.KindSem, prefix+"rw"), lockwire.AuxKey(lockwire.KindSemVal, prefix+"rw")
	slots := func() string {
		m := c.ZRange(ctx, semKey, 0, -1).Val()
		sort.Strings(m)
		return strings.Join(m, ",")
	}
	before := slots()

	// A token that holds no slot: refused, naming a shared holder;
	// nothing changed.
	_, err := in.ForceRelease(ctx, "rw", token(t), nil)
	var held *lock.HeldError
	if !errors.As(err, &held) || !errors.Is(err, lock.ErrNotOwner) || held.Holder.Kind() != "shared" || held.Holder.Holders != 3 {
		t.Fatalf("wrong token: %v %+v", err, held)
	}
	if slots() != before || c.HLen(ctx, valKey).Val() != 3 {
		t.Fatalf("a refused force-release changed the slots: %s", slots())
	}

	// An exclusive acquirer waits; freeing one shared holder wakes it (it
	// tries again and waits on), and the other two keep their slots.
	writer := waitingWriter(t, c, prefix, "rw")
	b := shared[1]
	r, err := in.ForceRelease(ctx, "rw", inspect.TokenHash(b.Token()), &inspect.ReleaseOptions{Who: "oncall@laptop", Reason: "reader hung"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Holder.Kind() != "shared" || !r.Holder.Shared || r.Holder.Owner != b.Owner() || r.Holder.Token != b.Token() ||
		r.Holder.Fence != b.Fence() || r.HoldersLeft != 2 || r.AuditID == "" || r.Holder.TTL <= 0 {
		t.Errorf("released %+v", r)
	}
	// Woken as a release wakes it: on its own wake-up stream.
	woken := func() bool {
		for _, m := range c.XRange(ctx, lockwire.WakeKey(prefix+"rw", writer), "-", "+").Val() {
			if m.Values["w"] == "1" {
				return true
			}
		}
		return false
	}
	waitFor(t, woken)
	want := []string{shared[0].Token(), shared[2].Token()}
	sort.Strings(want)
	if got := slots(); got != strings.Join(want, ",") || c.HExists(ctx, valKey, b.Token()).Val() || c.HLen(ctx, valKey).Val() != 2 {
		t.Errorf("slots after freeing b: %s", got)
	}
	l := lock.New(c, &lock.Options{Prefix: prefix})
	if err := b.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("released holder's own release: %v", err)
	}
	// The others still renew; the writer still waits, listed.
	if err := shared[0].Refresh(ctx, time.Minute); err != nil {
		t.Errorf("remaining holder's renew: %v", err)
	}
	if c.ZScore(ctx, lockwire.AuxKey(lockwire.KindWriters, prefix+"rw"), writer).Err() != nil {
		t.Error("the writer is no longer listed")
	}
	entries, err := in.Audit(ctx, 1)
	if err != nil || len(entries) != 1 {
		t.Fatalf("audit: %+v %v", entries, err)
	}
	if e := entries[0]; e.Kind != "shared" || e.Name != "rw" || e.Owner != b.Owner() || e.Reason != "reader hung" ||
		e.TokenHash != inspect.TokenHash(b.Token()) || e.Fence != b.Fence() {
		t.Errorf("audit entry %+v", e)
	}

	// Once the last shared holder is freed, the writer gets the lock.
	for _, le := range []*lock.Lease{shared[0], shared[2]} {
		if _, err := in.ForceRelease(ctx, "rw", le.Token(), &inspect.ReleaseOptions{Who: "oncall@laptop"}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, func() bool {
		h, err := l.Get(ctx, "rw")
		return err == nil && h.Token == writer
	})
	if n := c.Exists(ctx, semKey, valKey).Val(); n != 0 {
		t.Errorf("%d slot keys left", n)
	}
}

// Neither orphan scans nor listings take the writers list or the shared
// slots for locks, even with raw keys and without their TTL.
func TestSharedKeysNotOrphans(t *testing.T) {
	in, c, prefix, _ := fixture(t)
	ctx := context.Background()
	sharedHolders(t, c, prefix, "rw")
	waitingWriter(t, c, prefix, "rw")
	do(t, c, "ZADD", lockwire.AuxKey(lockwire.KindWriters, prefix+"wanted"), 99999999999999, "w")
	for _, key := range []string{lockwire.AuxKey(lockwire.KindWriters, prefix+"rw"), lockwire.AuxKey(lockwire.KindWriters, prefix+"wanted"),
		lockwire.AuxKey(lockwire.KindSem, prefix+"rw"), lockwire.AuxKey(lockwire.KindSemVal, prefix+"rw")} {
		if n := c.Exists(ctx, key).Val(); n != 1 {
			t.Fatalf("%s missing", key)
		}
		do(t, c, "PERSIST", key)
	}
	raw := inspect.New(c, &inspect.Options{RawKeys: true})
	if err := raw.Orphans(ctx, "*", nil, func(o inspect.Orphan) error {
		if strings.HasPrefix(o.Key, lockwire.AuxPrefix) {
			t.Errorf("auxiliary key listed as an orphan: %s", o.Key)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(orphanKeys(t, in), ","); got != prefix+"pinned|string,"+prefix+"stuck|string" {
		t.Errorf("orphans: %s", got)
	}
	n := 0
	if err := raw.Locks(ctx, "*"+prefix+"*", nil, func(l inspect.Lock) error {
		if strings.HasPrefix(l.Key, lockwire.AuxPrefix) {
			t.Errorf("auxiliary key listed as a lock: %s", l.Key)
		}
		if l.Key == prefix+"rw" {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != 3 {
		t.Errorf("raw listing: %d rows for rw, want its 3 shared holders", n)
	}
}
