package lock_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// waiterClient is a client named name, as one waiting process's would be,
// counting the commands it sends.
func waiterClient(t *testing.T, name string) (*redis.Client, *countingHook) {
	t.Helper()
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	opt.ClientName = name
	c := redis.NewClient(opt)
	t.Cleanup(func() { c.Close() })
	h := &countingHook{}
	c.AddHook(h)
	return c, h
}

// clientsNamed returns the CLIENT LIST lines of the connections named name.
func clientsNamed(t *testing.T, c *redis.Client, name string) []string {
	t.Helper()
	list, err := c.ClientList(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(list, "\n") {
		if strings.Contains(line, " name="+name+" ") {
			out = append(out, line)
		}
	}
	return out
}

// heldLock is a lock held for a minute by holder, a Locker on admin, a
// connection of its own that the test also reads the waiters' keys with.
func heldLock(t *testing.T) (admin *redis.Client, holder *lock.Locker, name string, first *lock.Lease) {
	t.Helper()
	admin = newClient(t)
	holder = lock.New(admin, nil)
	name = uniqueName(t)
	first, err := holder.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	return admin, holder, name, first
}

// sleeper is a Locker on a connection of its own whose poll is an hour:
// only a wake-up brings its waiters in within a test's time.
func sleeper(t *testing.T) *lock.Locker {
	return lock.New(newClient(t), &lock.Options{PollInterval: time.Hour})
}

// listedWithin waits until zset lists n members.
func listedWithin(t *testing.T, c *redis.Client, zset string, n int64) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if c.ZCard(ctx, zset).Val() == n {
			return
		}
	}
	t.Fatalf("%s never listed %d waiters", zset, n)
}

type acquired struct {
	lease *lock.Lease
	err   error
}

func waitAsync(l *lock.Locker, name string, ttl time.Duration, o *lock.AcquireOptions) chan acquired {
	ch := make(chan acquired, 1)
	go func() {
		lease, err := l.Acquire(ctx, name, ttl, o)
		ch <- acquired{lease, err}
	}()
	return ch
}

func gotWithin(t *testing.T, ch chan acquired, d time.Duration, what string) *lock.Lease {
	t.Helper()
	select {
	case a := <-ch:
		if a.err != nil {
			t.Fatalf("%s: %v", what, a.err)
		}
		return a.lease
	case <-time.After(d):
		t.Fatalf("%s: not acquired within %v", what, d)
	}
	return nil
}

// A waiting process holds one connection, with no pub/sub on it, and the
// release wakes it there, though its poll interval is an hour.
func TestWaiterSleepsOnOneConnection(t *testing.T) {
	admin, _, name, first := heldLock(t)
	cname := "waiter-" + strings.ReplaceAll(name[len(name)-8:], ".", "")
	c, _ := waiterClient(t, cname)
	w := lock.New(c, &lock.Options{PollInterval: time.Hour})
	got := waitAsync(w, name, time.Minute, &lock.AcquireOptions{Wait: -1})
	listedWithin(t, admin, lock.AuxKey(lock.KindWriters, first.Key()), 1)
	time.Sleep(200 * time.Millisecond) // on its way to sleep
	conns := clientsNamed(t, admin, cname)
	if len(conns) != 1 {
		t.Fatalf("the waiting process has %d connections, want 1:\n%s", len(conns), strings.Join(conns, "\n"))
	}
	if !strings.Contains(conns[0], " sub=0 ") || !strings.Contains(conns[0], " psub=0 ") || !strings.Contains(conns[0], " cmd=xread ") {
		t.Fatalf("the waiter's connection is not blocked in XREAD without pub/sub: %s", conns[0])
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lease := gotWithin(t, got, 10*time.Second, "the waiter (its poll is an hour)")
	defer func() { _ = lease.Release(ctx) }()
}

// A waiter does not poll: sleeping 3s behind a holder, it sends a few
// commands, not one per poll interval (50ms here, 60 polls).
func TestWaiterDoesNotPoll(t *testing.T) {
	admin, _, name, first := heldLock(t)
	c, h := waiterClient(t, "nopoll")
	w := lock.New(c, &lock.Options{PollInterval: 50 * time.Millisecond})
	got := waitAsync(w, name, time.Minute, &lock.AcquireOptions{Wait: -1})
	listedWithin(t, admin, lock.AuxKey(lock.KindWriters, first.Key()), 1)
	before := h.n.Load()
	time.Sleep(3 * time.Second)
	n := h.n.Load() - before
	t.Logf("%d commands in 3s of waiting", n)
	// The listing (3s, the queue's TTL) is renewed at two thirds of its
	// life: one attempt and one read more, give or take one at the edges.
	if n > 6 {
		t.Errorf("the waiter sent %d commands in 3s, want a few: it polls", n)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lease := gotWithin(t, got, 10*time.Second, "the waiter")
	defer func() { _ = lease.Release(ctx) }()
}

// A holder that dies without releasing is noticed when its key expires:
// the waiter's sleep ends with the holder's TTL, not at a poll (an hour).
func TestWaiterWokenByHolderExpiry(t *testing.T) {
	admin := newClient(t)
	holder := lock.New(admin, nil)
	name := uniqueName(t)
	if _, err := holder.Acquire(ctx, name, 700*time.Millisecond, nil); err != nil {
		t.Fatal(err)
	}
	w := sleeper(t)
	start := time.Now()
	got := waitAsync(w, name, time.Minute, &lock.AcquireOptions{Wait: -1})
	lease := gotWithin(t, got, 10*time.Second, "the waiter behind an expiring holder")
	defer func() { _ = lease.Release(ctx) }()
	t.Logf("acquired %v after the holder's 700ms TTL started", time.Since(start))
}

// FIFO waiters are handed the lock in arrival order, each by the release
// before it, though their poll is an hour.
func TestFIFOHandOffOrderWithoutPolling(t *testing.T) {
	admin, _, name, first := heldLock(t)
	const n = 4
	var chans []chan acquired
	for i := range n {
		chans = append(chans, waitAsync(sleeper(t), name, time.Minute, &lock.AcquireOptions{Wait: -1, FIFO: true, Note: fmt.Sprint(i)}))
		listedWithin(t, admin, lock.AuxKey(lock.KindQueue, first.Key()), int64(i+1))
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		lease := gotWithin(t, chans[i], 10*time.Second, fmt.Sprintf("FIFO waiter %d", i))
		for j := i + 1; j < n; j++ {
			select {
			case a := <-chans[j]:
				t.Fatalf("waiter %d got the lock before waiter %d (%v)", j, i, a.err)
			default:
			}
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A release of an exclusive holder wakes every shared waiter, which all
// enter together, though their poll is an hour.
func TestSharedWaitersWokenTogether(t *testing.T) {
	admin, _, name, first := heldLock(t)
	const n = 3
	var chans []chan acquired
	for range n {
		l := sleeper(t)
		chans = append(chans, waitAsync(l, name, time.Minute, &lock.AcquireOptions{Wait: -1, Shared: true}))
	}
	listedWithin(t, admin, lock.AuxKey(lock.KindWaiting, first.Key()), n)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var leases []*lock.Lease
	for i := range n {
		leases = append(leases, gotWithin(t, chans[i], 10*time.Second, fmt.Sprintf("shared waiter %d", i)))
	}
	for _, l := range leases {
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A freed semaphore slot lets one waiter in, woken by the release though
// its poll is an hour; the next freed slot the next one.
func TestSemaphoreWaitersWokenOneBySlot(t *testing.T) {
	admin := newClient(t)
	holder := lock.New(admin, nil)
	name := uniqueName(t)
	sem := &lock.AcquireOptions{Limit: 2}
	var held []*lock.Lease
	for range 2 {
		s, err := holder.Acquire(ctx, name, time.Minute, sem)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, s)
	}
	results := make(chan acquired, 2)
	for range 2 {
		l := sleeper(t)
		go func() {
			lease, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Limit: 2, Wait: -1})
			results <- acquired{lease, err}
		}()
	}
	listedWithin(t, admin, lock.AuxKey(lock.KindWaiting, held[0].Key()), 2)
	for i := range 2 {
		if err := held[i].Release(ctx); err != nil {
			t.Fatal(err)
		}
		lease := gotWithin(t, results, 10*time.Second, fmt.Sprintf("a waiter for freed slot %d (the poll is an hour)", i))
		defer func() { _ = lease.Release(ctx) }()
		select {
		case a := <-results:
			t.Fatalf("one freed slot let in two waiters (%v)", a.err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// A FIFO waiter that died at the head of the queue (its heartbeat still
// live) stalls the next one no longer than its heartbeat's life, the
// queue's TTL (3s), as before: the next one takes the lock then.
func TestFIFODeadHeadStallsNoLongerThanItsHeartbeat(t *testing.T) {
	admin, _, name, first := heldLock(t)
	q, hb := lock.AuxKey(lock.KindQueue, first.Key()), lock.AuxKey(lock.KindQueueHB, first.Key())
	now := time.Now()
	if err := admin.ZAdd(ctx, q, redis.Z{Score: float64(now.UnixMicro()), Member: "dead"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.ZAdd(ctx, hb, redis.Z{Score: float64(now.Add(3 * time.Second).UnixMilli()), Member: "dead"}).Err(); err != nil {
		t.Fatal(err)
	}
	w := lock.New(newClient(t), &lock.Options{PollInterval: time.Second})
	got := waitAsync(w, name, time.Minute, &lock.AcquireOptions{Wait: -1, FIFO: true})
	listedWithin(t, admin, q, 2)
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lease := gotWithin(t, got, 10*time.Second, "the FIFO waiter behind a dead head")
	defer func() { _ = lease.Release(ctx) }()
	t.Logf("acquired %v after the dead head's last heartbeat", time.Since(now))
}

// A waiting process killed while it slept costs the next waiter no more
// than the grace a woken waiter has: the release wakes the dead one and
// tells the next in line to look again after the grace, though its poll
// is an hour.
func TestKilledWaiterStallsTheNextOneOnlyItsGrace(t *testing.T) {
	admin, _, name, first := heldLock(t)
	writers := lock.AuxKey(lock.KindWriters, first.Key())
	// The waiter that dies: a process of its own (this test binary).
	p := exec.Command(os.Args[0], "-test.run=^TestWaitingProcess$", "-test.count=1")
	p.Env = append(os.Environ(), "LOCKCTL_TEST_WAIT_URL="+srv.URL, "LOCKCTL_TEST_WAIT_NAME="+name)
	if err := p.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		// Killed already, unless the test failed before: either way,
		// reaped.
		_ = p.Process.Kill()
		_ = p.Wait()
	}()
	listedWithin(t, admin, writers, 1)
	time.Sleep(200 * time.Millisecond)
	if err := p.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	w := sleeper(t)
	got := waitAsync(w, name, time.Minute, &lock.AcquireOptions{Wait: -1})
	listedWithin(t, admin, writers, 2)
	time.Sleep(200 * time.Millisecond)
	start := time.Now()
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lease := gotWithin(t, got, 10*time.Second, "the waiter behind a killed one (its poll is an hour)")
	defer func() { _ = lease.Release(ctx) }()
	t.Logf("acquired %v after the release that woke the killed waiter", time.Since(start))
}

// TestWaitingProcess is the waiting process that TestKilledWaiterStalls...
// kills: it waits for a lock until it is killed.
func TestWaitingProcess(t *testing.T) {
	url := os.Getenv("LOCKCTL_TEST_WAIT_URL")
	if url == "" {
		t.Skip("run by TestKilledWaiterStallsTheNextOneOnlyItsGrace")
	}
	c := redistest.ClientFor(t, url)
	l := lock.New(c, &lock.Options{PollInterval: time.Hour})
	_, _ = l.Acquire(context.Background(), os.Getenv("LOCKCTL_TEST_WAIT_NAME"), time.Minute, &lock.AcquireOptions{Wait: -1})
}

// On a Cluster the wake-up stream lies in the lock's slot, so the release
// script reaches it: the waiter is woken by the release, not by its poll
// (an hour).
func TestWaiterOnClusterWokenByRelease(t *testing.T) {
	cl := redistest.StartClusterTest(t)
	newCC := func() *redis.ClusterClient { return cl.Client(t) }
	holder := lock.New(newCC(), nil)
	name := uniqueName(t) + "{tag}"
	first, err := holder.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, fifo := range []bool{false, true} {
		w := lock.New(newCC(), &lock.Options{PollInterval: time.Hour})
		got := waitAsync(w, name, time.Minute, &lock.AcquireOptions{Wait: -1, FIFO: fifo})
		time.Sleep(300 * time.Millisecond) // listed, and asleep
		if err := first.Release(ctx); err != nil {
			t.Fatal(err)
		}
		first = gotWithin(t, got, 10*time.Second, fmt.Sprintf("the waiter on a Cluster (fifo %v; its poll is an hour)", fifo))
		holder = w
	}
	_ = first.Release(ctx)
}
