package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

const redissonField = "8743c9c0-0795-4907-87fd-6c719a6b4586:1"
const foreignUUID = "0f3b8a52-5c1e-4d0e-9a4b-2f1f6a1c9e77"

var runs int

// fixture fills db 0 of the package's server the way real systems do, under
// a prefix unique to the test, and returns the inspector, the client and
// the leases taken by lockctl.
func fixture(t *testing.T) (*inspect.Inspector, *redis.Client, string, map[string]*lock.Lease) {
	t.Helper()
	ctx := context.Background()
	c := clientFor(t, srv.URL)
	// Unique per run too, so that -count=N reruns start clean.
	runs++
	prefix := fmt.Sprintf("fx%d%s:", runs, strings.ReplaceAll(t.Name(), "/", "_"))
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
	do(t, c, "ZADD", lockwire.AuxKey(lockwire.KindQueue, prefix+"deploy"), 1, "w1", 2, "w2")
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
		// The fence of each lockctl lock is its lease's; "-" marks it.
		fence := strconv.FormatInt(l.Fence, 10)
		if le := leases[l.Name]; le != nil && le.Fence() == l.Fence {
			fence = "-"
		}
		rows = append(rows, fmt.Sprintf("%s|%s|%s|%s|%d|%s|%s|q%d|ttl=%v|age=%v", l.Name, l.Kind(), l.Owner, l.Host, l.PID, fence, l.Note,
			l.Queued, l.TTL < 0, l.Age >= 0))
	}
	want := []string{
		"db:migrate|lockctl|ops@bastion:77|bastion|77|-||q0|ttl=false|age=true",
		"deploy|lockctl|ci@build-3:4242|build-3|4242|-|deploy #81|q2|ttl=false|age=true",
		"foreign|string|" + foreignUUID + "||0|0||q0|ttl=false|age=false",
		"pinned|lockctl|ops@bastion:78|bastion|78|-||q0|ttl=true|age=true",
		"rx|redisson|" + redissonField + "||0|0||q0|ttl=false|age=false",
		"stuck|string|1||0|0||q0|ttl=true|age=false",
	}
	if strings.Join(rows, "\n") != strings.Join(want, "\n") {
		t.Fatalf("locks:\n%s\nwant:\n%s", strings.Join(rows, "\n"), strings.Join(want, "\n"))
	}
	for _, l := range got {
		if l.Name == "deploy" && l.TokenHash != inspect.TokenHash(leases["deploy"].Token()) {
			t.Errorf("token hash %q", l.TokenHash)
		}
		if l.Name == "rx" && l.Reentry != 1 {
			t.Errorf("reentry %d", l.Reentry)
		}
	}
	// A glob on names; its prefix part is literal.
	var names []string
	if err := in.Locks(context.Background(), "d*", nil, func(l inspect.Lock) error { names = append(names, l.Name); return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "db:migrate,deploy" {
		t.Errorf("glob d*: %v", names)
	}
}

// fifoWaiters starts n FIFO waiters on name, one after the other, and
// returns their tokens in arrival order once all are queued. They give up
// when the test ends.
func fifoWaiters(t *testing.T, c *redis.Client, prefix, name string, n int) []string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	l := lock.New(c, &lock.Options{Prefix: prefix})
	done := make(chan struct{}, n)
	t.Cleanup(func() {
		cancel()
		for i := 0; i < n; i++ {
			<-done
		}
	})
	q := lockwire.AuxKey(lockwire.KindQueue, prefix+name)
	var tokens []string
	for i := 0; i < n; i++ {
		tok := token(t)
		tokens = append(tokens, tok)
		go func() {
			defer func() { done <- struct{}{} }()
			// Waits until the test ends (any error then is expected), unless
			// the holder goes first.
			if _, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Token: tok, FIFO: true, Wait: -1}); err != nil && ctx.Err() == nil {
				t.Errorf("FIFO waiter: %v", err)
			}
		}()
		waitFor(t, func() bool { return c.ZScore(ctx, q, tok).Err() == nil })
	}
	return tokens
}

func token(t *testing.T) string {
	t.Helper()
	return identity.Token()
}

// waitFor polls cond for up to 10s (a generous bound on a busy machine).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatal("condition not reached in 10s")
}

func TestWaitersCountSubscribersAndQueue(t *testing.T) {
	in, c, prefix, _ := fixture(t)
	ctx := context.Background()
	l := lock.New(c, &lock.Options{Prefix: prefix})
	if _, err := l.Acquire(ctx, "q", time.Minute, &lock.AcquireOptions{Owner: "ci@build-3:1"}); err != nil {
		t.Fatal(err)
	}
	tokens := fifoWaiters(t, c, prefix, "q", 2)
	ps := c.Subscribe(ctx, lockwire.Channel(prefix+"q"))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	// The waiters list themselves among the exclusive acquirers waiting
	// with their first attempt (they sleep on wake-up streams, and do not
	// subscribe).
	waitFor(t, func() bool {
		return c.ZCard(ctx, lockwire.AuxKey(lockwire.KindWriters, prefix+"q")).Val() >= 2
	})
	d, err := in.Lock(ctx, "q")
	if err != nil {
		t.Fatal(err)
	}
	// Each waiter subscribes too (one shared connection per Locker).
	if d.Lock == nil || d.Lock.Queued != 2 || d.Subscribers < 2 || d.Lock.Waiters() != max(d.Subscribers, 2) || len(d.Queue) != 2 {
		t.Fatalf("detail %+v", d)
	}
	for i, w := range d.Queue {
		if w.TokenHash != inspect.TokenHash(tokens[i]) || w.Waiting < 0 || w.Heartbeat <= 0 || w.Arrived.IsZero() {
			t.Errorf("waiter %d: %+v (token hash %s)", i, w, inspect.TokenHash(tokens[i]))
		}
	}
	if !d.Queue[0].Arrived.Before(d.Queue[1].Arrived) {
		t.Errorf("queue not in arrival order: %+v", d.Queue)
	}
	var got *inspect.Lock
	if err := in.Locks(ctx, "q", nil, func(l inspect.Lock) error { got = &l; return nil }); err != nil {
		t.Fatal(err)
	}
	if got == nil || got.Queued != 2 || got.Subscribers != d.Subscribers {
		t.Errorf("listing: %+v", got)
	}
}

// semaphore takes two slots of name (--limit 2) under prefix.
func semaphore(t *testing.T, c *redis.Client, prefix, name string) (a, b *lock.Lease) {
	t.Helper()
	l := lock.New(c, &lock.Options{Prefix: prefix})
	ctx := context.Background()
	a, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Limit: 2, Owner: "ci@build-3:11", Note: "shard 1", JobURL: "https://ci.example/job/1"})
	if err != nil {
		t.Fatal(err)
	}
	b, err = l.Acquire(ctx, name, 30*time.Second, &lock.AcquireOptions{Limit: 2, Owner: "ops@bastion:22"})
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

func TestSemaphoreHolders(t *testing.T) {
	in, c, prefix, _ := fixture(t)
	ctx := context.Background()
	a, b := semaphore(t, c, prefix, "pool")
	semaphore(t, c, prefix, "a}b")      // the slot-tag shape of AuxKey
	semaphore(t, c, "x"+prefix, "pool") // another prefix
	// A slot past its expiry holds nothing, though no one trimmed it yet.
	do(t, c, "ZADD", lockwire.AuxKey(lockwire.KindSem, prefix+"pool"), 1, "dead")

	d, err := in.Lock(ctx, "pool")
	if err != nil {
		t.Fatal(err)
	}
	if d.Lock != nil || !d.Held() || d.Limit != 2 || len(d.Holders) != 2 || d.Fence != max(a.Fence(), b.Fence()) {
		t.Fatalf("semaphore detail %+v", d)
	}
	h := d.Holders[0]
	if h.Kind() != "semaphore" || h.Owner != "ci@build-3:11" || h.Host != "build-3" || h.PID != 11 || h.Fence != a.Fence() ||
		h.Note != "shard 1" || h.JobURL != "https://ci.example/job/1" || h.TokenHash != inspect.TokenHash(a.Token()) ||
		h.Holders != 2 || h.Limit != 2 || h.TTL <= 30*time.Second || h.TTL > time.Minute || h.Age < 0 {
		t.Errorf("holder 1: %+v", h)
	}
	if h := d.Holders[1]; h.Owner != "ops@bastion:22" || h.Fence != b.Fence() || h.TTL <= 0 || h.TTL > 30*time.Second {
		t.Errorf("holder 2: %+v", h)
	}

	rows := func(glob string) []string {
		var rows []string
		err := in.Locks(ctx, glob, nil, func(l inspect.Lock) error {
			if l.Kind() == "semaphore" {
				rows = append(rows, fmt.Sprintf("%s|%s|%s|%d/%d|%s", l.Name, l.Key, l.Owner, l.Holders, l.Limit, l.JobURL))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sort.Strings(rows)
		return rows
	}
	want := []string{
		"a}b|" + prefix + "a}b|ci@build-3:11|2/2|https://ci.example/job/1",
		"a}b|" + prefix + "a}b|ops@bastion:22|2/2|",
		"pool|" + prefix + "pool|ci@build-3:11|2/2|https://ci.example/job/1",
		"pool|" + prefix + "pool|ops@bastion:22|2/2|",
	}
	if got := rows(""); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("listing:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := rows("p[o]*"); len(got) != 2 || !strings.HasPrefix(got[0], "pool|") {
		t.Errorf("glob p[o]*: %v", got)
	}
	if got := rows("a}*"); len(got) != 2 || !strings.HasPrefix(got[0], "a}b|") {
		t.Errorf("glob a}*: %v", got)
	}
	if got := rows("x*"); len(got) != 0 {
		t.Errorf("glob x*: %v", got)
	}
}

func TestLockDetailFreeAndWrongType(t *testing.T) {
	in, c, prefix, _ := fixture(t)
	ctx := context.Background()
	d, err := in.Lock(ctx, "nothing-here")
	if err != nil || d.Held() {
		t.Fatalf("free lock: %+v %v", d, err)
	}
	do(t, c, "RPUSH", prefix+"alist", "x")
	if _, err := in.Lock(ctx, "alist"); !errors.Is(err, lock.ErrWrongType) {
		t.Fatalf("list: %v", err)
	}
}

func TestForceReleaseSemaphoreSlot(t *testing.T) {
	in, c, prefix, _ := fixture(t)
	ctx := context.Background()
	a, b := semaphore(t, c, prefix, "pool")
	ps := c.Subscribe(ctx, lockwire.Channel(prefix+"pool"))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	// A token that holds no slot: refused, naming a holder.
	_, err := in.ForceRelease(ctx, "pool", token(t), nil)
	var held *lock.HeldError
	if !errors.As(err, &held) || !errors.Is(err, lock.ErrNotOwner) || held.Holder.Kind() != "semaphore" || held.Holder.Holders != 2 {
		t.Fatalf("wrong token: %v %+v", err, held)
	}
	// By token hash: that slot goes, the other stays.
	r, err := in.ForceRelease(ctx, "pool", inspect.TokenHash(a.Token()), &inspect.ReleaseOptions{Who: "oncall@laptop", Reason: "job 1 died"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Holder.Kind() != "semaphore" || r.Holder.Owner != "ci@build-3:11" || r.Holder.Token != a.Token() || r.Holder.Fence != a.Fence() ||
		r.HoldersLeft != 1 || r.AuditID == "" || r.Holder.TTL <= 0 {
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
	semKey, valKey := lockwire.AuxKey(lockwire.KindSem, prefix+"pool"), lockwire.AuxKey(lockwire.KindSemVal, prefix+"pool")
	if c.ZCard(ctx, semKey).Val() != 1 || c.HExists(ctx, valKey, a.Token()).Val() || c.PTTL(ctx, valKey).Val() <= 0 {
		t.Errorf("after releasing a: zcard %d, pttl %v", c.ZCard(ctx, semKey).Val(), c.PTTL(ctx, valKey).Val())
	}
	// The freed slot can be taken again at once.
	l := lock.New(c, &lock.Options{Prefix: prefix})
	if _, err := l.Acquire(ctx, "pool", time.Minute, &lock.AcquireOptions{Limit: 2}); err != nil {
		t.Fatalf("slot not free: %v", err)
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("released holder's own release: %v", err)
	}
	// By full token: b's slot.
	if _, err := in.ForceRelease(ctx, "pool", b.Token(), &inspect.ReleaseOptions{Who: "oncall@laptop"}); err != nil {
		t.Fatal(err)
	}
	entries, err := in.Audit(ctx, 2)
	if err != nil || len(entries) != 2 {
		t.Fatalf("audit: %+v %v", entries, err)
	}
	if e := entries[0]; e.Kind != "semaphore" || e.Name != "pool" || e.Owner != "ci@build-3:11" || e.Reason != "job 1 died" ||
		e.TokenHash != inspect.TokenHash(a.Token()) || e.Fence != a.Fence() || e.TTL <= 0 {
		t.Errorf("audit entry %+v", e)
	}
	if e := entries[1]; e.Owner != "ops@bastion:22" || e.TokenHash != inspect.TokenHash(b.Token()) {
		t.Errorf("audit entry %+v", e)
	}
	// The last slot's release leaves no keys behind.
	d, _ := in.Lock(ctx, "pool")
	if len(d.Holders) != 1 {
		t.Fatalf("holders %+v", d.Holders)
	}
	if _, err := in.ForceRelease(ctx, "pool", d.Holders[0].TokenHash, nil); err != nil {
		t.Fatal(err)
	}
	if n := c.Exists(ctx, semKey, valKey).Val(); n != 0 {
		t.Errorf("%d semaphore keys left", n)
	}
	if _, err := in.ForceRelease(ctx, "pool", b.Token(), nil); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("empty semaphore: %v", err)
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

	// A raw prefix sees every key, but never lockctl's auxiliary ones:
	// semaphores, FIFO queues and heartbeats (even without their TTL).
	semaphore(t, c, prefix, "pool")
	l := lock.New(c, &lock.Options{Prefix: prefix})
	if _, err := l.Acquire(ctx, "q", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	fifoWaiters(t, c, prefix, "q", 1)
	for _, kind := range []string{lockwire.KindSem, lockwire.KindSemVal, lockwire.KindQueue, lockwire.KindQueueHB} {
		key := lockwire.AuxKey(kind, prefix+"pool")
		if kind == lockwire.KindQueue || kind == lockwire.KindQueueHB {
			key = lockwire.AuxKey(kind, prefix+"q")
		}
		if n := c.Exists(ctx, key).Val(); n != 1 {
			t.Fatalf("%s missing", key)
		}
		do(t, c, "PERSIST", key)
	}
	raw := inspect.New(c, &inspect.Options{RawKeys: true})
	err := raw.Orphans(ctx, "*", nil, func(o inspect.Orphan) error {
		if strings.HasPrefix(o.Key, lockwire.AuxPrefix) {
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
	if c.PTTL(ctx, lockwire.AuxKey(lockwire.KindFence, prefix+"nightly[1]")).Val() != -1 ||
		c.PTTL(ctx, "x"+prefix+"nottl").Val() != -1 {
		t.Error("fix touched keys it was not given")
	}
	if got := orphanKeys(t, in); len(got) != 0 {
		t.Errorf("orphans after fix: %v", got)
	}
	// The prefixed scan never sees them either.
	do(t, c, "SET", prefix+"stuck2", "1")
	if got := strings.Join(orphanKeys(t, in), ","); got != prefix+"stuck2|string" {
		t.Errorf("orphans: %s", got)
	}
}

func TestForceReleaseStaleTokenAfterTakeover(t *testing.T) {
	in, c, prefix, leases := fixture(t)
	ctx := context.Background()
	l := lock.New(c, &lock.Options{Prefix: prefix})
	old := leases["deploy"]
	oldHash := inspect.TokenHash(old.Token())
	// The old holder's lease ends; someone else takes the lock.
	do(t, c, "DEL", prefix+"deploy")
	next, err := l.Acquire(ctx, "deploy", time.Minute, &lock.AcquireOptions{Owner: "new@host:1"})
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{old.Token(), oldHash} {
		_, err = in.ForceRelease(ctx, "deploy", tok, &inspect.ReleaseOptions{Reason: "stuck"})
		var held *lock.HeldError
		if !errors.As(err, &held) || !errors.Is(err, lock.ErrNotOwner) || held.Holder.Owner != "new@host:1" {
			t.Fatalf("stale token %q: %v", tok, err)
		}
	}
	if h, err := l.Get(ctx, "deploy"); err != nil || h.Token != next.Token() {
		t.Fatalf("new holder's lock gone: %v %v", h, err)
	}
	// The hash of the current holder frees it, wakes waiters and audits.
	ps := c.Subscribe(ctx, lockwire.Channel(prefix+"deploy"))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	// A hash prefix shorter than inspect.TokenPrefixMin digits is refused
	// as such, not read as a whole token that some other holder has.
	var pe *inspect.PrefixError
	short := inspect.TokenHash(next.Token())[:inspect.TokenPrefixMin-1]
	if _, err := in.ForceRelease(ctx, "deploy", short, nil); !errors.As(err, &pe) || !errors.Is(err, lock.ErrInvalid) ||
		errors.Is(err, lock.ErrNotOwner) || pe.Holders != 0 || pe.Prefix != short {
		t.Fatalf("a %d-digit hash prefix: %v", len(short), err)
	}
	if h, err := l.Get(ctx, "deploy"); err != nil || h.Token != next.Token() {
		t.Fatalf("a refused prefix changed the lock: %v %v", h, err)
	}
	// 7 digits, as git shows a hash, name the holder.
	r, err := in.ForceRelease(ctx, "deploy", inspect.TokenHash(next.Token())[:7], &inspect.ReleaseOptions{Reason: "runner died", Who: "oncall@laptop"})
	if err != nil {
		t.Fatal(err)
	}
	if r.Holder.Owner != "new@host:1" || r.Holder.Fence != next.Fence() || r.AuditID == "" {
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
	if _, err := in.ForceRelease(ctx, "deploy", next.Token(), nil); !errors.Is(err, lock.ErrNotHeld) {
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
	if e.Who != "oncall@laptop" || e.Name != "deploy" || e.Owner != "new@host:1" || e.Fence != next.Fence() ||
		e.TokenHash != inspect.TokenHash(next.Token()) || e.Reason != "runner died" || e.Kind != "lockctl" || e.At.IsZero() {
		t.Errorf("audit entry %+v", e)
	}
	if entries[1].Name != "foreign" || entries[2].Name != "rx" || entries[2].Owner != redissonField {
		t.Errorf("audit order %+v", entries)
	}
}

func TestUnscoped(t *testing.T) {
	raw := inspect.New(nil, &inspect.Options{RawKeys: true})
	for glob, want := range map[string]bool{"": true, "*": true, "?*": true, "**": true,
		"mylocks:*": false, `\*`: false, "[a-z]*": false} {
		if got := raw.Unscoped(glob); got != want {
			t.Errorf("raw keys, %q: Unscoped = %v, want %v", glob, got, want)
		}
	}
	if inspect.New(nil, nil).Unscoped("") || inspect.New(nil, &inspect.Options{Prefix: "app:"}).Unscoped("*") {
		t.Error("a prefix scopes the keyspace")
	}
}
