package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

const redissonField = "8743c9c0-0795-4907-87fd-6c719a6b4586:1"
const foreignUUID = "0f3b8a52-5c1e-4d0e-9a4b-2f1f6a1c9e77"

// fixture fills db 0 of the package's server the way real systems do, under
// a prefix unique to the test, and returns the inspector, the client and
// the leases taken by lockctl.
func fixture(t *testing.T) (*inspect.Inspector, *redis.Client, string, map[string]*lock.Lease) {
	t.Helper()
	ctx := context.Background()
	c := clientFor(t, srv.URL)
	prefix := "fx" + strings.ReplaceAll(t.Name(), "/", "_") + ":"
	l := lock.New(c, &lock.Options{Prefix: prefix})
	leases := map[string]*lock.Lease{}
	for _, x := range []struct{ name, owner, note string }{
		{"deploy", "ci@build-3:4242", "deploy #81"},
		{"db:migrate", "ops@bastion:77", ""},
	} {
		le, err := l.Acquire(ctx, x.name, time.Minute, &lock.AcquireOptions{Owner: x.owner, Note: x.note})
		if err != nil {
			t.Fatal(err)
		}
		leases[x.name] = le
	}
	// Another client's plain lock, a Redisson hash lock, a SETNX whose
	// EXPIRE never ran, a PERSISTed lockctl lock, a list under the prefix.
	do(t, c, "SET", prefix+"foreign", foreignUUID, "NX", "PX", 60000)
	do(t, c, "HSET", prefix+"rx", redissonField, 1)
	do(t, c, "PEXPIRE", prefix+"rx", 60000)
	do(t, c, "SETNX", prefix+"stuck", "1")
	le, err := l.Acquire(ctx, "pinned", time.Minute, &lock.AcquireOptions{Owner: "ops@bastion:78"})
	if err != nil {
		t.Fatal(err)
	}
	leases["pinned"] = le
	do(t, c, "PERSIST", prefix+"pinned")
	// Fence counters of locks, including one with a glob-special name,
	// and a queue.
	if _, err := l.Fences().Next(ctx, "nightly[1]"); err != nil {
		t.Fatal(err)
	}
	do(t, c, "ZADD", lock.AuxKey(lock.KindQueue, prefix+"deploy"), 1, "w1", 2, "w2")
	// Keys without TTL outside the pattern, and thousands of unrelated keys.
	do(t, c, "SET", "x"+prefix+"nottl", "1")
	pipe := c.Pipeline()
	for i := 0; i < 3000; i++ {
		pipe.Set(ctx, fmt.Sprintf("cache:%s%d", prefix, i), "v", time.Hour)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	return inspect.New(c, &inspect.Options{Prefix: prefix, Count: 100}), c, prefix, leases
}

func TestLocks(t *testing.T) {
	in, _, _, leases := fixture(t)
	var got []inspect.Lock
	err := in.Locks(context.Background(), "", nil, func(l inspect.Lock) error {
		got = append(got, l)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Slice(got, func(i, j int) bool { return got[i].Name < got[j].Name })
	var rows []string
	for _, l := range got {
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%d|%d|%s|q%d|ttl=%v|age=%v", l.Name, l.Kind, l.Owner, l.Host, l.PID, l.Fence, l.Note,
			l.Queued, l.TTL < 0, l.Age >= 0))
	}
	want := []string{
		"db:migrate|lockctl|ops@bastion:77|bastion|77|1||q0|ttl=false|age=true",
		"deploy|lockctl|ci@build-3:4242|build-3|4242|1|deploy #81|q2|ttl=false|age=true",
		"foreign|string|" + foreignUUID + "||0|0||q0|ttl=false|age=false",
		"pinned|lockctl|ops@bastion:78|bastion|78|1||q0|ttl=true|age=true",
		"rx|redisson|" + redissonField + "||0|0||q0|ttl=false|age=false",
		"stuck|string|1||0|0||q0|ttl=true|age=false",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("locks:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range got {
		if l.Name == "deploy" && l.TokenHash != inspect.TokenHash(leases["deploy"].Token) {
			t.Errorf("token hash %q", l.TokenHash)
		}
		if l.Name == "rx" && l.Reentry != 1 {
			t.Errorf("reentry %d", l.Reentry)
		}
	}
	// A glob on names; its prefix part is literal.
	var names []string
	in.Locks(context.Background(), "d*", nil, func(l inspect.Lock) error { names = append(names, l.Name); return nil })
	sort.Strings(names)
	if strings.Join(names, ",") != "db:migrate,deploy" {
		t.Errorf("glob d*: %v", names)
	}
}

func TestWaitersCountSubscribersAndQueue(t *testing.T) {
	in, c, prefix, _ := fixture(t)
	ctx := context.Background()
	ps := c.Subscribe(ctx, lock.Channel(prefix+"deploy"))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	d, err := in.Lock(ctx, "deploy")
	if err != nil {
		t.Fatal(err)
	}
	if d.Lock == nil || d.Lock.Waiters() != 3 || d.Subscribers != 1 || len(d.Queue) != 2 || d.Queue[0].Value != "w1" {
		t.Fatalf("detail %+v", d)
	}
	if d.Fence != 1 || !strings.HasPrefix(d.Raw, `{"token":"`) {
		t.Errorf("fence %d raw %q", d.Fence, d.Raw)
	}
	// A list-shaped queue counts too.
	do(t, c, "DEL", lock.AuxKey(lock.KindQueue, prefix+"deploy"))
	do(t, c, "RPUSH", lock.AuxKey(lock.KindQueue, prefix+"deploy"), "a", "b", "c", "d")
	var w int64 = -1
	in.Locks(ctx, "deploy", nil, func(l inspect.Lock) error { w = l.Waiters(); return nil })
	if w != 5 {
		t.Errorf("waiters %d, want 5 (1 subscriber + 4 queued)", w)
	}
}

func TestLockDetailSemaphoreAndFree(t *testing.T) {
	in, c, prefix, _ := fixture(t)
	ctx := context.Background()
	do(t, c, "ZADD", lock.AuxKey(lock.KindSem, prefix+"pool"), 100, `{"token":"aa","fence":1,"owner":"a@h:1"}`, 200, "bb")
	d, err := in.Lock(ctx, "pool")
	if err != nil {
		t.Fatal(err)
	}
	if d.Lock != nil || !d.Held() || len(d.Semaphore) != 2 || d.Semaphore[0].Owner != "a@h:1" || d.Semaphore[1].Token != "bb" {
		t.Fatalf("semaphore detail %+v", d)
	}
	d, err = in.Lock(ctx, "nothing-here")
	if err != nil || d.Held() {
		t.Fatalf("free lock: %+v %v", d, err)
	}
	do(t, c, "RPUSH", prefix+"alist", "x")
	if _, err := in.Lock(ctx, "alist"); !errors.Is(err, lock.ErrWrongType) {
		t.Fatalf("list: %v", err)
	}
}

func orphanKeys(t *testing.T, in *inspect.Inspector) []string {
	var keys []string
	err := in.Orphans(context.Background(), "", nil, func(o inspect.Orphan) error {
		keys = append(keys, o.Key+"|"+o.Type)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	return keys
}

func TestOrphansAndFix(t *testing.T) {
	in, c, prefix, _ := fixture(t)
	ctx := context.Background()
	do(t, c, "RPUSH", prefix+"alist", "x")
	got := strings.Join(orphanKeys(t, in), ",")
	want := prefix + "alist|list," + prefix + "pinned|string," + prefix + "stuck|string"
	if got != want {
		t.Fatalf("orphans %s, want %s", got, want)
	}

	// A raw prefix sees every key, but never lockctl's auxiliary ones.
	raw := inspect.New(c, &inspect.Options{RawKeys: true})
	err := raw.Orphans(ctx, "*", nil, func(o inspect.Orphan) error {
		if strings.HasPrefix(o.Key, lock.AuxPrefix) {
			t.Errorf("auxiliary key listed: %s", o.Key)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Between scan and fix, "stuck" gets a TTL from its owner: left alone.
	do(t, c, "PEXPIRE", prefix+"stuck", 500000)
	done, err := in.FixOrphans(ctx, []string{prefix + "pinned", prefix + "stuck"}, inspect.Fix{Expire: time.Minute})
	if err != nil || !done[0] || done[1] {
		t.Fatalf("fix: %v %v", done, err)
	}
	if p := c.PTTL(ctx, prefix+"pinned").Val(); p <= 0 || p > time.Minute {
		t.Errorf("pinned pttl %v", p)
	}
	if p := c.PTTL(ctx, prefix+"stuck").Val(); p <= time.Minute {
		t.Errorf("stuck pttl %v changed", p)
	}
	done, err = in.FixOrphans(ctx, []string{prefix + "alist"}, inspect.Fix{Delete: true})
	if err != nil || !done[0] || c.Exists(ctx, prefix+"alist").Val() != 0 {
		t.Fatalf("delete: %v %v", done, err)
	}
	// Nothing else changed: fence counters, keys outside the pattern.
	if c.PTTL(ctx, lock.AuxKey(lock.KindFence, prefix+"nightly[1]")).Val() != -1 ||
		c.PTTL(ctx, "x"+prefix+"nottl").Val() != -1 {
		t.Error("fix touched keys it was not given")
	}
	if got := orphanKeys(t, in); len(got) != 0 {
		t.Errorf("orphans after fix: %v", got)
	}
}

func TestForceReleaseStaleTokenAfterTakeover(t *testing.T) {
	in, c, prefix, leases := fixture(t)
	ctx := context.Background()
	l := lock.New(c, &lock.Options{Prefix: prefix})
	old := leases["deploy"]
	oldHash := inspect.TokenHash(old.Token)
	// The old holder's lease ends; someone else takes the lock.
	do(t, c, "DEL", prefix+"deploy")
	next, err := l.Acquire(ctx, "deploy", time.Minute, &lock.AcquireOptions{Owner: "new@host:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{old.Token, oldHash} {
		_, err = in.ForceRelease(ctx, "deploy", tok, &inspect.ReleaseOptions{Reason: "stuck"})
		var held *lock.HeldError
		if !errors.As(err, &held) || !errors.Is(err, lock.ErrNotOwner) || held.Holder.Owner != "new@host:1" {
			t.Fatalf("stale token %q: %v", tok, err)
		}
	}
	if h, err := l.Get(ctx, "deploy"); err != nil || h.Token != next.Token {
		t.Fatalf("new holder's lock gone: %v %v", h, err)
	}
	// The hash of the current holder frees it, wakes waiters and audits.
	ps := c.Subscribe(ctx, lock.Channel(prefix+"deploy"))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := in.ForceRelease(ctx, "deploy", inspect.TokenHash(next.Token)[:8], &inspect.ReleaseOptions{Reason: "runner died", Who: "oncall@laptop"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Holder.Owner != "new@host:1" || r.Holder.Fence != next.Fence || r.AuditID == "" {
		t.Errorf("released %+v", r)
	}
	select {
	case m := <-ps.Channel():
		if m.Payload != "released" {
			t.Errorf("message %q", m.Payload)
		}
	case <-time.After(5 * time.Second):
		t.Error("waiters were not woken")
	}
	if _, err := in.ForceRelease(ctx, "deploy", next.Token, nil); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second release: %v", err)
	}
	// Foreign and Redisson locks by their raw token.
	if _, err := in.ForceRelease(ctx, "foreign", foreignUUID, &inspect.ReleaseOptions{Who: "oncall@laptop"}); err != nil {
		t.Error(err)
	}
	if _, err := in.ForceRelease(ctx, "rx", redissonField, &inspect.ReleaseOptions{Who: "oncall@laptop"}); err != nil {
		t.Error(err)
	}
	entries, err := in.Audit(ctx, 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 3 {
		t.Fatalf("audit: %+v", entries)
	}
	e := entries[0]
	if e.Who != "oncall@laptop" || e.Name != "deploy" || e.Owner != "new@host:1" || e.Fence != next.Fence ||
		e.TokenHash != inspect.TokenHash(next.Token) || e.Reason != "runner died" || e.Kind != "lockctl" || e.At.IsZero() {
		t.Errorf("audit entry %+v", e)
	}
	if entries[1].Name != "foreign" || entries[2].Name != "rx" || entries[2].Owner != redissonField {
		t.Errorf("audit order %+v", entries)
	}
}
