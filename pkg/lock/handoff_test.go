package lock_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// scriptCount counts the scripts a client runs (EVAL and EVALSHA, alone or
// in a pipeline).
type scriptCount struct{ n atomic.Int64 }

func (h *scriptCount) count(cmds []redis.Cmder) {
	for _, c := range cmds {
		if n := strings.ToLower(c.Name()); n == "eval" || n == "evalsha" {
			h.n.Add(1)
		}
	}
}
func (h *scriptCount) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *scriptCount) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}
func (h *scriptCount) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		h.count(cmds)
		return next(ctx, cmds)
	}
}

// waiters starts n waiters for name, each with a client (and so a pub/sub
// connection) of its own, as n processes would be. The poll interval is
// long, so every attempt after the first ones is a wake-up's.
type granted struct {
	lease *lock.Lease
	l     *lock.Locker
}

func waiters(t *testing.T, name string, n int, fifo bool) (got chan granted, counts []*scriptCount, cancel func()) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	got = make(chan granted, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		c := newClient(t)
		h := &scriptCount{}
		c.AddHook(h)
		l := lock.New(c, &lock.Options{PollInterval: time.Minute})
		counts = append(counts, h)
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Wait: -1, FIFO: fifo})
			if err == nil {
				got <- granted{lease, l}
			}
		}()
	}
	return got, counts, func() { stop(); wg.Wait() }
}

func total(counts []*scriptCount) int64 {
	var s int64
	for _, c := range counts {
		s += c.n.Load()
	}
	return s
}

// waitersListed waits until n waiters are listed (the FIFO queue, or the
// exclusive acquirers waiting). A listed waiter misses no wake-up: the
// release appends to its wake-up stream, which it reads from the start.
func waitersListed(t *testing.T, c *redis.Client, key string, n int, fifo bool) {
	t.Helper()
	list := lock.AuxKey(lock.KindWriters, key)
	if fifo {
		list = lock.AuxKey(lock.KindQueue, key)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c.ZCard(context.Background(), list).Val() == int64(n) {
			time.Sleep(100 * time.Millisecond) // each waiter on its way to sleep
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%d waiters did not list themselves", n)
}

// A release wakes the one waiter that can take the lock, not every waiting
// process: with 20 waiters in 20 processes, each hand-off costs one attempt,
// where a release that woke every process cost 20, 19, 18 ...
func TestReleaseWakesOneWaiter(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		t.Run(fmt.Sprintf("fifo=%v", fifo), func(t *testing.T) {
			const n = 20
			c := newClient(t)
			holder := lock.New(c, nil)
			name := uniqueName(t)
			key := "lock:" + name
			first, err := holder.Acquire(ctx, name, time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, counts, stop := waiters(t, name, n, fifo)
			defer stop()
			waitersListed(t, c, key, n, fifo)
			before := total(counts)
			if err := first.Release(ctx); err != nil {
				t.Fatal(err)
			}
			// Hand the lock on n times: each holder releases as soon as it
			// has the lock.
			for i := 0; i < n; i++ {
				select {
				case g := <-got:
					if err := g.lease.Release(ctx); err != nil {
						t.Fatalf("hand-off %d: %v", i, err)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("hand-off %d: no waiter got the lock within 10s (the poll is a minute: a release woke nobody who could take it)", i)
				}
			}
			// Less the n releases, counted in the same hooks.
			attempts := total(counts) - before - int64(n)
			t.Logf("%d hand-offs, %d acquire attempts", n, attempts)
			if attempts > 2*n {
				t.Errorf("%d hand-offs took %d acquire attempts, want at most %d: releases wake waiters that cannot take the lock", n, attempts, 2*n)
			}
		})
	}
}

// A release that names a waiter who died (its listing has not expired yet)
// strands nobody: the live waiters' poll takes the lock, and the dead
// waiter's listing is cut to a short grace, so the next release passes it
// over.
func TestReleaseNamingADeadWaiter(t *testing.T) {
	c := newClient(t)
	holder := lock.New(c, nil)
	name := uniqueName(t)
	key := "lock:" + name
	first, err := holder.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	live := lock.New(newClient(t), &lock.Options{PollInterval: 300 * time.Millisecond})
	got := make(chan error, 1)
	go func() {
		_, err := live.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Wait: 20 * time.Second})
		got <- err
	}()
	waitersListed(t, c, key, 1, false)
	// The dead waiter: listed before the live one would be woken, as a
	// waiter killed mid-queue stays listed until its entry expires.
	writers := lock.AuxKey(lock.KindWriters, key)
	now := time.Now().UnixMilli()
	if err := c.ZAdd(ctx, writers, redis.Z{Score: float64(now + 2000), Member: "dead-waiter"}).Err(); err != nil {
		t.Fatal(err)
	}
	// Every channel of the lock: the common one and each waiter's own.
	sub := c.PSubscribe(ctx, lock.Channel(key), lock.AuxKey(lock.KindWake, key)+":*")
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	msg, err := sub.ReceiveMessage(rctx)
	if err != nil {
		t.Fatalf("no wake-up published within 5s: %v", err)
	}
	if msg.Channel != lock.AuxKey(lock.KindWake, key)+":dead-waiter" || msg.Payload != "next dead-waiter" {
		t.Fatalf("the release published %q on %s, want it to name the waiter listed longest ago on that waiter's own channel", msg.Payload, msg.Channel)
	}
	// Nothing on the channel every waiting process listens on: the others
	// sleep on.
	qctx, qcancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer qcancel()
	if m, err := sub.ReceiveMessage(qctx); err == nil {
		t.Errorf("the release also published %q on %s", m.Payload, m.Channel)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the live waiter: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the live waiter did not get the lock within 5s of a release that named a dead waiter")
	}
	score := c.ZScore(ctx, writers, "dead-waiter").Val()
	if score > float64(time.Now().UnixMilli()+600) {
		t.Errorf("the named waiter's listing expires at %v, want its grace (500ms) from the release", time.UnixMilli(int64(score)))
	}
}
