package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// wallClock is the real clock as an injected one: a Locker given it lets
// every waiter wait in its hub, none on a wake-up stream.
type wallClock struct{}

func (wallClock) Now() time.Time                      { return time.Now() }
func (wallClock) NewTimer(d time.Duration) lock.Timer { return wallTimer{time.NewTimer(d)} }

type wallTimer struct{ t *time.Timer }

func (w wallTimer) C() <-chan time.Time { return w.t.C }
func (w wallTimer) Stop() bool          { return w.t.Stop() }

// ranCount counts the scripts a client ran: EVAL and EVALSHA that did not
// fail (an EVALSHA refused with NOSCRIPT is sent again as EVAL).
type ranCount struct{ n atomic.Int64 }

func (h *ranCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *ranCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if n := strings.ToLower(cmd.Name()); (n == "eval" || n == "evalsha") && err == nil {
			h.n.Add(1)
		}
		return err
	}
}
func (h *ranCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// queuedFor waits until l has n waiters for name.
func queuedFor(t *testing.T, l *lock.Locker, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for lock.QueuedFor(l, name) != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters of this Locker, want %d", lock.QueuedFor(l, name), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// A release hands the lock to the waiter of its own Locker that is next,
// in the release's own script: the lock is that waiter's when Release
// returns, with a later fence, and the waiter runs no script of its own to
// take it. The first waiter was refused once and is listed; the second
// queued behind it in the Locker (plain) or in the FIFO queue. Each of the
// two releases hands the lock on.
func TestReleaseHandsTheLockToALocalWaiter(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			c := newClient(t)
			count := &ranCount{}
			c.AddHook(count)
			l := lock.New(c, &lock.Options{PollInterval: time.Hour, Clock: wallClock{}})
			name := uniqueName(t)
			o := &lock.AcquireOptions{Wait: -1, FIFO: fifo}
			lease, err := l.Acquire(ctx, name, time.Minute, o)
			if err != nil {
				t.Fatal(err)
			}
			wctx, cancel := context.WithCancel(ctx)
			defer cancel()
			got := make(chan *lock.Lease, 2)
			errs := make(chan error, 2)
			wait := func() {
				lease, err := l.Acquire(wctx, name, time.Minute, o)
				if err != nil {
					errs <- err
				}
				got <- lease
			}
			go wait()
			queuedFor(t, l, name, 1)
			waitersListed(t, c, "lock:"+name, 1, fifo)
			go wait()
			queuedFor(t, l, name, 2)
			if fifo {
				waitersListed(t, c, "lock:"+name, 2, fifo)
			}
			before := count.n.Load()
			for i := 1; i <= 2; i++ {
				if err := lease.Release(ctx); err != nil {
					t.Fatal(err)
				}
				h, err := l.Get(ctx, name)
				if err != nil {
					t.Fatalf("hand-off %d: the lock right after the release: %v (not handed on)", i, err)
				}
				next := <-got
				if next == nil {
					t.Fatal(<-errs)
				}
				if h.Token != next.Token() || h.Fence != next.Fence() || next.Fence() <= lease.Fence() {
					t.Errorf("hand-off %d: held by %s fence %d after the release; the next lease is %s fence %d (the one before: %d)",
						i, h.Token, h.Fence, next.Token(), next.Fence(), lease.Fence())
				}
				if d := time.Until(next.Deadline()); d < 30*time.Second || d > time.Minute {
					t.Errorf("hand-off %d: the lease's deadline in %s, want about its ttl", i, d)
				}
				lease = next
			}
			defer func() { _ = lease.Release(ctx) }()
			if n := count.n.Load() - before; n != 4 {
				t.Errorf("%d scripts for two hand-offs, want 4: each release's and Get's", n)
			}
		})
	}
}

// A waiter that gives up while a release is handing it the lock leaves the
// grant to the releaser, which frees it: the lock is not left held by a
// token nobody holds. The server's writes are paused so that the waiter
// gives up while the release is on its way.
func TestHandOffToAWaiterThatGaveUp(t *testing.T) {
	c := newClient(t)
	admin := newClient(t)
	l := lock.New(c, &lock.Options{PollInterval: time.Hour, Clock: wallClock{}})
	name := uniqueName(t)
	first, err := l.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	gaveUp := make(chan error, 1)
	go func() {
		lease, err := l.Acquire(wctx, name, time.Minute, &lock.AcquireOptions{Wait: -1})
		if lease != nil {
			_ = lease.Release(ctx)
		}
		gaveUp <- err
	}()
	queuedFor(t, l, name, 1)
	waitersListed(t, c, "lock:"+name, 1, false)
	if err := admin.Do(ctx, "CLIENT", "PAUSE", "1000", "WRITE").Err(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Do(context.Background(), "CLIENT", "UNPAUSE") })
	released := make(chan error, 1)
	go func() { released <- first.Release(ctx) }()
	time.Sleep(200 * time.Millisecond) // the release is offered to the waiter, its script paused
	cancel()
	if err := <-gaveUp; !errors.Is(err, context.Canceled) {
		t.Fatalf("the waiter: %v, want it to give up", err)
	}
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if h, err := l.Get(ctx, name); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("after the release: %+v %v, want the lock free", h, err)
	}
	// And it is free for the next acquirer at once.
	lease, err := l.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	_ = lease.Release(ctx)
}

// A release in another process that names a waiter (wake.lua's next
// <token>, on the waiter's own channel) wakes it in its Locker's hub, where
// the waiters of one lock share one pattern subscription for their own
// channels. The poll is an hour: only the named wake-up can let it in.
// The lock's name has the characters special to a pattern.
func TestRemoteReleaseWakesAHubWaiterByName(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			// Characters a pattern would take as its own.
			name := uniqueName(t) + `.*?[x]\`
			remote := lock.New(newClient(t), nil)
			first, err := remote.Acquire(ctx, name, time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := newClient(t)
			l := lock.New(c, &lock.Options{PollInterval: time.Hour, Clock: wallClock{}})
			got := make(chan error, 2)
			for i := 0; i < 2; i++ {
				go func() {
					lease, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Wait: 10 * time.Second, FIFO: fifo})
					if err == nil {
						err = lease.Release(ctx)
					}
					got <- err
				}()
			}
			queuedFor(t, l, name, 2)
			waitersListed(t, c, "lock:"+name, 2, fifo)
			if err := first.Release(ctx); err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 2; i++ {
				if err := <-got; err != nil {
					t.Fatalf("waiter %d: %v", i, err)
				}
			}
		})
	}
}

// Where the server refuses pattern subscriptions (an ACL without
// PSUBSCRIBE), a hub waiter subscribes to its own channel alone, and a
// release in another process still wakes it by name.
func TestHubWaiterWithoutPatternSubscriptions(t *testing.T) {
	if _, err := srv.Do("ACL", "SETUSER", "nopattern", "on", ">pw", "+@all", "-psubscribe", "~*", "&*"); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "nopattern", Password: "pw"})
	t.Cleanup(func() { c.Close() })
	name := uniqueName(t)
	remote := lock.New(newClient(t), nil)
	first, err := remote.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	l := lock.New(c, &lock.Options{PollInterval: time.Hour, Clock: wallClock{}})
	got := make(chan error, 1)
	go func() {
		lease, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Wait: 30 * time.Second})
		if err == nil {
			err = lease.Release(ctx)
		}
		got <- err
	}()
	queuedFor(t, l, name, 1)
	waitersListed(t, newClient(t), "lock:"+name, 1, false)
	// Its own channel, once the pattern was refused: at the refusal, not
	// after the wait for a confirmation that never comes (5 s).
	listed := time.Now()
	own := lock.AuxKey(lock.KindWake, "lock:"+name) + ":*"
	admin := newClient(t)
	for deadline := time.Now().Add(30 * time.Second); len(redisDo(t, admin, "PUBSUB", "CHANNELS", own).([]any)) != 1; {
		if time.Now().After(deadline) {
			t.Fatal("the waiter did not subscribe to its own channel")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if d := time.Since(listed); d > 3*time.Second {
		t.Errorf("the waiter subscribed to its own channel %v after it was listed: it waited out the refused pattern's confirmation", d)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter: %v", err)
	}
}
