package lock_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// redlockNodes starts three servers for one test and returns a Redlock
// Locker on them. Clients are set up as lockctl's command line sets them
// up: context deadlines honoured, no retries.
func redlockNodes(t *testing.T, opts *lock.Options) (*lock.Locker, []*redistest.Server) {
	t.Helper()
	var srvs []*redistest.Server
	var clients []redis.UniversalClient
	for range 3 {
		s := redistest.StartTest(t, nil)
		c := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true, MaxRetries: -1,
			Protocol: 2, DisableIdentity: true, DialerRetries: 1})
		t.Cleanup(func() { c.Close() })
		srvs = append(srvs, s)
		clients = append(clients, c)
	}
	l, err := lock.NewRedlock(clients, opts)
	if err != nil {
		t.Fatal(err)
	}
	return l, srvs
}

// pause stops s until the test ends or resume is called.
func pause(t *testing.T, s *redistest.Server) (resume func()) {
	t.Helper()
	if err := s.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resume = func() {
		if err := s.Signal(syscall.SIGCONT); err != nil {
			t.Error(err)
		}
	}
	t.Cleanup(resume)
	return resume
}

// get returns the string at key on s ("" when missing).
func get(t *testing.T, s *redistest.Server, key string) string {
	t.Helper()
	v, err := s.Do("GET", key)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// do runs a setup command on s.
func do(t *testing.T, s *redistest.Server, args ...string) {
	t.Helper()
	if _, err := s.Do(args...); err != nil {
		t.Fatal(err)
	}
}

func storedFence(t *testing.T, s *redistest.Server, key string) int64 {
	t.Helper()
	v := get(t, s, key)
	if v == "" {
		t.Fatalf("%s: no value at %s", s.Addr, key)
	}
	return lock.ParseValue(key, v, 0).Fence
}

func TestRedlockAcquireRenewRelease(t *testing.T) {
	t.Parallel()
	l, srvs := redlockNodes(t, nil)
	name := uniqueName(t)
	// Every master issues at least its clock; the masters share this
	// machine's clock.
	floor := time.Now().Add(-time.Second).UnixMicro()
	lease, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Owner: "ci@build:1", Note: "n"})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Fence() < floor || lease.Owner() != "ci@build:1" {
		t.Errorf("lease %+v", lease)
	}
	// Every node stores the one fence, and no counter is below it.
	for _, s := range srvs {
		v := get(t, s, lease.Key())
		if !strings.HasPrefix(v, `{"token":"`+lease.Token()+`","fence":`+strconv.FormatInt(lease.Fence(), 10)+`,`) {
			t.Errorf("%s holds %q", s.Addr, v)
		}
		if n := s.Int(t, "GET", lock.AuxKey(lock.KindFence, lease.Key())); n < lease.Fence() {
			t.Errorf("%s fence counter %d, below the fence %d", s.Addr, n, lease.Fence())
		}
	}
	h, err := l.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if h.Token != lease.Token() || h.Fence != lease.Fence() || h.TTL <= 0 || h.TTL > 10*time.Second {
		t.Errorf("holder %+v", h)
	}
	if _, err := renewToken(ctx, l, name, lease.Token(), time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs {
		if ms := s.Int(t, "PTTL", lease.Key()); ms <= 10000 {
			t.Errorf("%s: pttl %dms after renewing to a minute", s.Addr, ms)
		}
	}
	if _, err := l.Acquire(ctx, name, time.Second, nil); !errors.Is(err, lock.ErrNotObtained) {
		t.Errorf("second acquire: %v", err)
	}
	if err := releaseToken(ctx, l, name, lease.Token()); err != nil {
		t.Fatal(err)
	}
	for _, s := range srvs {
		if n := s.Int(t, "EXISTS", lease.Key()); n != 0 {
			t.Errorf("%s still has the key", s.Addr)
		}
	}
	if _, err := l.Get(ctx, name); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Get after release: %v", err)
	}
	if err := releaseToken(ctx, l, name, lease.Token()); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("second release: %v", err)
	}
	if _, err := renewToken(ctx, l, name, lease.Token(), time.Second); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("renew after release: %v", err)
	}
}

func TestRedlockOneNodePaused(t *testing.T) {
	t.Parallel()
	l, srvs := redlockNodes(t, nil)
	pause(t, srvs[2])
	name := uniqueName(t)
	// ttl 2s: each node gets 200ms to answer.
	start := time.Now()
	lease, err := l.Acquire(ctx, name, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Without the node timeout the paused node would hold the call for the
	// client's 3s read timeout; the bound leaves room for a loaded machine.
	if took := time.Since(start); took > 2500*time.Millisecond {
		t.Errorf("acquire took %s with one node paused; the node timeout is 200ms", took)
	}
	for _, s := range srvs[:2] {
		if !strings.HasPrefix(get(t, s, lease.Key()), `{"token":"`+lease.Token()+`"`) {
			t.Errorf("%s does not hold the lock", s.Addr)
		}
	}
	if err := lease.Refresh(ctx, 2*time.Second); err != nil {
		t.Errorf("renew: %v", err)
	}
	if n, err := l.Fences().Next(ctx, name); err != nil || n <= lease.Fence() {
		t.Errorf("fence next: %d, %v; the lock's fence was %d", n, err, lease.Fence())
	}
	if err := lease.Release(ctx); err != nil {
		t.Errorf("release: %v", err)
	}
}

func TestRedlockTwoNodesPaused(t *testing.T) {
	t.Parallel()
	l, srvs := redlockNodes(t, nil)
	pause(t, srvs[1])
	pause(t, srvs[2])
	name := uniqueName(t)
	start := time.Now()
	_, err := l.Acquire(ctx, name, 2*time.Second, &lock.AcquireOptions{Wait: 10 * time.Second})
	// The paused nodes fail by the node timeout or the client's own read
	// timeout, whichever fires first: either way a timeout, never "held".
	var netErr net.Error
	timedOut := errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &netErr) && netErr.Timeout())
	if !errors.Is(err, lock.ErrUnavailable) || !timedOut || errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("acquire with two of three nodes paused: %v", err)
	}
	var qe *lock.QuorumError
	if !errors.As(err, &qe) || len(qe.Errs) != 2 {
		t.Errorf("want a QuorumError with two node errors, got %#v", err)
	}
	// Two node timeouts (acquire, then release) of 200ms, not the wait and
	// not two 3s client read timeouts (6s).
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("failing took %s", took)
	}
	key := l.Key(name)
	if n := srvs[0].Int(t, "EXISTS", key); n != 0 {
		t.Errorf("the live node kept the lock: %q", get(t, srvs[0], key))
	}
	if _, err := l.Fences().Next(ctx, name); !errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("fence next: %v", err)
	}
	if _, err := l.Get(ctx, name); !errors.Is(err, lock.ErrUnavailable) {
		t.Errorf("get: %v", err)
	}
}

func TestRedlockHeldOnMajority(t *testing.T) {
	t.Parallel()
	l, srvs := redlockNodes(t, nil)
	name := uniqueName(t)
	key := l.Key(name)
	other := `{"token":"0123456789abcdef0123456789abcdef","fence":4,"owner":"other@host:9","acquired_ms":1}`
	for _, s := range srvs[:2] {
		if _, err := s.Do("SET", key, other, "PX", "60000"); err != nil {
			t.Fatal(err)
		}
	}
	_, err := l.Acquire(ctx, name, 10*time.Second, nil)
	var he *lock.HeldError
	if !errors.Is(err, lock.ErrNotObtained) || !errors.As(err, &he) {
		t.Fatalf("acquire: %v", err)
	}
	if he.Holder.Owner != "other@host:9" || he.Holder.TTL <= 0 {
		t.Errorf("holder %+v", he.Holder)
	}
	if n := srvs[2].Int(t, "EXISTS", key); n != 0 {
		t.Errorf("the free node kept our lock: %q", get(t, srvs[2], key))
	}
	h, err := l.Get(ctx, name)
	if err != nil || h.Owner != "other@host:9" {
		t.Errorf("get: %+v, %v", h, err)
	}
	// Held on one node only: a quorum is free, so the lock is.
	do(t, srvs[1], "DEL", key)
	if _, err := l.Get(ctx, name); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("get with the holder on one node: %v", err)
	}
	if _, err := l.Acquire(ctx, name, 10*time.Second, nil); err != nil {
		t.Errorf("acquire with the holder on one node: %v", err)
	}
}

// resumeClean continues a paused node and drops the lock key a timed-out call
// may have left there when it finally ran, as its TTL would.
func resumeClean(t *testing.T, s *redistest.Server, resume func(), key string) {
	t.Helper()
	resume()
	if _, err := s.Do("PING"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Do("DEL", key); err != nil {
		t.Fatal(err)
	}
}

func TestRedlockFenceMonotonicAcrossMajorities(t *testing.T) {
	t.Parallel()
	l, srvs := redlockNodes(t, &lock.Options{NodeTimeout: 300 * time.Millisecond})
	name := uniqueName(t)
	key := l.Key(name)
	fk := lock.AuxKey(lock.KindFence, key)
	a, b, c := srvs[0], srvs[1], srvs[2]
	// A's counter is ahead of every clock (days ahead), B's and C's are
	// empty: the next acquisition on A returns A's counter + 1, on B and C
	// their clocks. Only the write-back keeps {B,C} above {A,B}.
	if _, err := a.Do("SET", fk, strconv.FormatInt(time.Now().UnixMicro()+1e12, 10)); err != nil {
		t.Fatal(err)
	}

	var last int64
	step := func(label string, paused *redistest.Server, live ...*redistest.Server) {
		t.Helper()
		resume := pause(t, paused)
		lease, err := l.Acquire(ctx, name, 5*time.Second, nil)
		if err != nil {
			t.Fatalf("%s: %v", label, err)
		}
		if lease.Fence() <= last {
			t.Errorf("%s: fence %d after %d", label, lease.Fence(), last)
		}
		last = lease.Fence()
		for _, s := range live {
			if f := storedFence(t, s, key); f != lease.Fence() {
				t.Errorf("%s: %s stores fence %d, lease has %d", label, s.Addr, f, lease.Fence())
			}
			if n := s.Int(t, "GET", fk); n < lease.Fence() {
				t.Errorf("%s: %s counter %d below the fence %d", label, s.Addr, n, lease.Fence())
			}
		}
		if err := releaseToken(ctx, l, name, lease.Token()); err != nil {
			t.Fatalf("%s: release: %v", label, err)
		}
		resumeClean(t, paused, resume, key)
	}
	step("majority {A,B}", c, a, b) // A's counter + 1
	step("majority {B,C}", a, b, c) // one more, not B's or C's clock
	step("majority {A,C}", b, a, c)

	// Fences.Next across yet another pair.
	resume := pause(t, a)
	n, err := l.Fences().Next(ctx, name)
	if err != nil || n <= last {
		t.Errorf("fence next with A paused: %d after %d, %v", n, last, err)
	}
	last = n
	resumeClean(t, a, resume, key)
	resume = pause(t, c)
	if p, err := l.Fences().Peek(ctx, name); err != nil || p != last {
		t.Errorf("peek with C paused: %d, want %d, %v", p, last, err)
	}
	lease, err := l.Acquire(ctx, name, 5*time.Second, nil)
	if err != nil || lease.Fence() <= last {
		t.Fatalf("acquire with C paused: %+v after %d, %v", lease, last, err)
	}
	resume()
}

func TestRedlockStaleHolder(t *testing.T) {
	t.Parallel()
	l, srvs := redlockNodes(t, nil)
	name := uniqueName(t)
	old, err := l.Acquire(ctx, name, 200*time.Millisecond, &lock.AcquireOptions{Owner: "old@h:1"})
	if err != nil {
		t.Fatal(err)
	}
	// old is paused past its lease; new takes the lock.
	lease, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Owner: "new@h:2", Wait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if lease.Fence() <= old.Fence() {
		t.Errorf("fence %d after %d", lease.Fence(), old.Fence())
	}
	// The new holder has a majority; a master where the old lease had not
	// yet run out when the new one was granted may not hold it.
	holds := func(s *redistest.Server) bool {
		return strings.HasPrefix(get(t, s, lease.Key()), `{"token":"`+lease.Token()+`"`)
	}
	var before []*redistest.Server
	for _, s := range srvs {
		if holds(s) {
			before = append(before, s)
		}
	}
	if len(before) < 2 {
		t.Fatalf("new holder on %d of 3 masters", len(before))
	}
	var he *lock.HeldError
	if err := releaseToken(ctx, l, name, old.Token()); !errors.Is(err, lock.ErrNotOwner) || !errors.As(err, &he) || he.Holder.Owner != "new@h:2" {
		t.Errorf("stale release: %v", err)
	}
	if _, err := renewToken(ctx, l, name, old.Token(), 10*time.Second); !errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("stale renew: %v", err)
	}
	for _, s := range before {
		if !holds(s) {
			t.Errorf("%s lost the new holder's lock", s.Addr)
		}
	}
}

func TestRedlockSameTokenRetry(t *testing.T) {
	t.Parallel()
	l, srvs := redlockNodes(t, nil)
	name := uniqueName(t)
	token := strings.Repeat("ab", 16)
	first, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Token: token, Owner: "me@h:1"})
	if err != nil {
		t.Fatal(err)
	}
	again, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Token: token, Owner: "me@h:1"})
	if err != nil {
		t.Fatal(err)
	}
	if again.Fence() != first.Fence() || again.Owner() != "me@h:1" || !again.AcquiredAt().Equal(first.AcquiredAt()) {
		t.Errorf("retry %+v, first %+v", again, first)
	}
	// A retry after the first attempt reached one node only: the other
	// two acquire afresh with a higher fence, which is written back to
	// the first node as well.
	for _, s := range srvs[1:] {
		do(t, s, "DEL", first.Key())
	}
	third, err := l.Acquire(ctx, name, 10*time.Second, &lock.AcquireOptions{Token: token, Owner: "me@h:1"})
	if err != nil {
		t.Fatal(err)
	}
	if third.Fence() <= first.Fence() {
		t.Errorf("fence %d, want more than %d", third.Fence(), first.Fence())
	}
	for _, s := range srvs {
		if f := storedFence(t, s, first.Key()); f != third.Fence() {
			t.Errorf("%s stores fence %d", s.Addr, f)
		}
	}
	if h, err := l.Get(ctx, name); err != nil || h.Fence != third.Fence() {
		t.Errorf("get: %+v, %v", h, err)
	}
}

func TestRedlockWaiterWokenByRelease(t *testing.T) {
	t.Parallel()
	// Polling every 30s and a 30s TTL: only the release message can wake
	// the waiter within its 10s wait.
	l, _ := redlockNodes(t, &lock.Options{PollInterval: 30 * time.Second})
	name := uniqueName(t)
	held, err := l.Acquire(ctx, name, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, name, 30*time.Second, &lock.AcquireOptions{Wait: 10 * time.Second})
		done <- err
	}()
	time.Sleep(300 * time.Millisecond) // let it subscribe
	if err := releaseToken(ctx, l, name, held.Token()); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("waiter: %v", err)
	}
}

func TestRedlockCheck(t *testing.T) {
	t.Parallel()
	l, srvs := redlockNodes(t, nil)
	res := uniqueName(t)
	f := l.Fences()
	if err := f.Check(ctx, res, 5, ""); err != nil {
		t.Fatal(err)
	}
	// Two nodes recorded 9 (a check whose reply was lost, say): 7 is stale
	// on a majority.
	for _, s := range srvs[:2] {
		do(t, s, "SET", lock.AuxKey(lock.KindChecked, res), "9")
	}
	var se *lock.StaleFenceError
	if err := f.Check(ctx, res, 7, ""); !errors.As(err, &se) || se.Highest != 9 {
		t.Errorf("check 7: %v", err)
	}
	// One node ahead does not refuse what a majority accepts.
	do(t, srvs[2], "SET", lock.AuxKey(lock.KindChecked, res), "20")
	for _, s := range srvs[:2] {
		do(t, s, "SET", lock.AuxKey(lock.KindChecked, res), "5")
	}
	if err := f.Check(ctx, res, 10, ""); err != nil {
		t.Errorf("check 10: %v", err)
	}
	if err := f.Check(ctx, res, 10, ""); !errors.Is(err, lock.ErrStaleFence) {
		t.Errorf("check 10 again: %v", err)
	}
	// The holder of a fence repeats it on a majority; others cannot, and
	// once a newer fence holds a majority, not even the old holder can.
	a, b := strings.Repeat("a", 32), strings.Repeat("b", 32)
	for i := 0; i < 2; i++ {
		if err := f.Check(ctx, res, 30, a); err != nil {
			t.Errorf("holder's check %d of 30: %v", i+1, err)
		}
	}
	if err := f.Check(ctx, res, 30, b); !errors.As(err, &se) || se.Highest != 30 {
		t.Errorf("check 30 by another holder: %v", err)
	}
	do(t, srvs[0], "SET", lock.AuxKey(lock.KindChecked, res), "30 "+a) // missed the newer check
	for _, s := range srvs[1:] {
		do(t, s, "SET", lock.AuxKey(lock.KindChecked, res), "31 "+b)
	}
	if err := f.Check(ctx, res, 30, a); !errors.As(err, &se) || se.Highest != 31 {
		t.Errorf("old holder's check 30 after 31: %v", err)
	}
}

func TestRedlockRefuses(t *testing.T) {
	t.Parallel()
	l, _ := redlockNodes(t, nil)
	name := uniqueName(t)
	if _, err := l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Limit: 2}); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("semaphore: %v", err)
	}
	if _, err := l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{FIFO: true}); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("fifo: %v", err)
	}
	c := newClient(t)
	if _, err := lock.NewRedlock([]redis.UniversalClient{c, newClient(t)}, nil); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("two nodes: %v", err)
	}
	three := []redis.UniversalClient{c, c, newClient(t)}
	if _, err := lock.NewRedlock(three, nil); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("one server three times: %v", err)
	}
	if _, err := lock.NewRedlock(three, &lock.Options{WaitReplicas: 1}); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("wait replicas: %v", err)
	}
}

// BenchmarkRedlockAcquireRelease: one acquire (3 nodes in parallel, then
// the fence write-back) and one release per op, beside the same on one
// node.
func BenchmarkRedlockAcquireRelease(b *testing.B) {
	var clients []redis.UniversalClient
	for range 3 {
		s := redistest.StartTest(b, nil)
		c := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true, MaxRetries: -1, Protocol: 2, DisableIdentity: true})
		b.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	rl, err := lock.NewRedlock(clients, nil)
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		l    *lock.Locker
	}{{"redlock-3", rl}, {"single", lock.New(clients[0], nil)}} {
		b.Run(bc.name, func(b *testing.B) {
			name := uniqueName(b)
			for b.Loop() {
				lease, err := bc.l.Acquire(ctx, name, 30*time.Second, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := releaseToken(ctx, bc.l, name, lease.Token()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
