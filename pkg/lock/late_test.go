package lock_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// Replies that arrive after the lease's local deadline (a slow link, an
// overloaded server, a stopped process) must never yield a held lease.

// slowReplies delays the replies of a client's next scripts: the server
// runs each script at once, its reply reaches the caller only after the
// delay, as over a slow link. after, if set, runs while the first delayed
// reply is held back.
type slowReplies struct {
	mu     sync.Mutex
	delays []time.Duration
	after  func()
}

func (h *slowReplies) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *slowReplies) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		name := strings.ToLower(cmd.Name())
		if name != "evalsha" && name != "eval" {
			return next(ctx, cmd)
		}
		err := next(ctx, cmd)
		if redis.HasErrorPrefix(err, "NOSCRIPT") {
			return err // the EVAL that follows is the one to delay
		}
		h.mu.Lock()
		var d time.Duration
		var after func()
		if len(h.delays) > 0 {
			d, h.delays = h.delays[0], h.delays[1:]
			after, h.after = h.after, nil
		}
		h.mu.Unlock()
		if d > 0 {
			t := time.Now()
			if after != nil {
				after()
			}
			time.Sleep(d - time.Since(t))
		}
		return err
	}
}

func (h *slowReplies) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

func slowLocker(t *testing.T, h *slowReplies) (*lock.Locker, *redis.Client) {
	l, c := newLocker(t, nil)
	c.AddHook(h)
	return l, c
}

// heldNow fails unless lease counts as held right now (its send time plus
// TTL minus the default margin lies ahead) and its token holds key.
func heldNow(t *testing.T, c *redis.Client, lease *lock.Lease, key string, limit bool) {
	t.Helper()
	if left := time.Until(lease.Deadline()); left <= 0 {
		t.Errorf("Acquire returned a lease whose local deadline passed %v ago", -left)
	}
	if limit {
		if redisDo(t, c, "ZSCORE", lock.AuxKey(lock.KindSem, key), lease.Token()) == nil {
			t.Errorf("the token holds no slot of %s", key)
		}
		return
	}
	if v, _ := redisDo(t, c, "GET", key).(string); !strings.Contains(v, lease.Token()) {
		t.Errorf("%s holds %q, not the returned token %s", key, v, lease.Token())
	}
}

func TestLateGrantIsReconfirmed(t *testing.T) {
	t.Parallel()
	// ttl 1s, margin 250ms: a reply 850ms late is past the local deadline
	// while the server still holds the lease, so one renewal (the same
	// script, the same token) confirms it with a fresh deadline.
	h := &slowReplies{delays: []time.Duration{850 * time.Millisecond}}
	l, c := slowLocker(t, h)
	name := uniqueName(t)
	floor := serverMicros(t, c)
	start := time.Now()
	lease, err := l.Acquire(ctx, name, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	heldNow(t, c, lease, l.Key(name), false)
	if sentOf(lease).Sub(start) < 800*time.Millisecond {
		t.Errorf("lease counted from %v after the start, not from the re-confirmation", sentOf(lease).Sub(start))
	}
	// The grant's fence was issued at the start (the reply, not the
	// script, was slow); a fence issued by the re-confirmation would carry
	// the server's time 850ms later.
	if lease.Fence() < floor || lease.Fence() >= floor+800*time.Millisecond.Microseconds() {
		t.Errorf("fence %d (start %d): the re-confirmation must keep the grant's fence", lease.Fence(), floor)
	}
}

func TestLateGrantWhileAnotherTookOver(t *testing.T) {
	t.Parallel()
	for _, nonblock := range []bool{true, false} {
		t.Run(map[bool]string{true: "nonblock", false: "wait"}[nonblock], func(t *testing.T) {
			t.Parallel()
			name := uniqueName(t)
			other, oc := newLocker(t, nil)
			var theirs *lock.Lease
			// The grant's reply is held back past its TTL; meanwhile the
			// lease expires on the server and another client takes it.
			h := &slowReplies{delays: []time.Duration{1500 * time.Millisecond}, after: func() {
				time.Sleep(1100 * time.Millisecond)
				var err error
				if theirs, err = other.Acquire(ctx, name, 1500*time.Millisecond, nil); err != nil {
					t.Error(err)
				}
			}}
			l, _ := slowLocker(t, h)
			o := &lock.AcquireOptions{Wait: 10 * time.Second}
			if nonblock {
				o.Wait = 0
			}
			lease, err := l.Acquire(ctx, name, time.Second, o)
			if nonblock {
				var held *lock.HeldError
				if !errors.As(err, &held) || !errors.Is(err, lock.ErrNotObtained) || held.Holder.Token != theirs.Token() {
					t.Fatalf("got %v, %v; want not obtained, held by the one who took over", lease, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			heldNow(t, oc, lease, l.Key(name), false)
			if lease.Fence() <= theirs.Fence() {
				t.Errorf("fence %d not after the other holder's %d", lease.Fence(), theirs.Fence())
			}
		})
	}
}

func TestLateTwiceIsNotHeld(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		o    lock.AcquireOptions
	}{
		{"lock", lock.AcquireOptions{}},
		{"semaphore", lock.AcquireOptions{Limit: 2}},
		{"fifo", lock.AcquireOptions{FIFO: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// The grant and its re-confirmation both come back late.
			h := &slowReplies{delays: []time.Duration{900 * time.Millisecond, 900 * time.Millisecond}}
			l, c := slowLocker(t, h)
			name := uniqueName(t)
			o := tc.o
			var seen []lock.AcquireEvent
			o.Observer = func(ev lock.AcquireEvent) { seen = append(seen, ev) }
			lease, err := l.Acquire(ctx, name, time.Second, &o)
			o.Observer = nil
			if len(seen) != 1 || !errors.As(seen[0].Late, new(*lock.LateError)) || seen[0].Holder.Key != "" {
				t.Errorf("Observer told %+v, want one late grant", seen)
			}
			// Both replies slower than the lease allows: the link is too
			// slow for it, which is no lock held elsewhere.
			var slow *lock.LateError
			if !errors.As(err, &slow) || !slow.Slow || !errors.Is(err, lock.ErrUnavailable) || errors.Is(err, lock.ErrNotObtained) {
				t.Fatalf("got %+v, %v; want a slow link error, not 'not obtained'", lease, err)
			}
			if window := leasetime.Deadline(time.Time{}, slow.TTL, 0).Sub(time.Time{}); !slow.Slow || slow.Took < 750*time.Millisecond || slow.TTL != time.Second || window != 750*time.Millisecond {
				t.Errorf("got %+v (window %s), want the re-confirmation's round trip against a 1s lease's 750ms", slow, window)
			}
			// Given back at once, not left to expire.
			key := l.Key(name)
			if n := redisDo(t, c, "EXISTS", key, lock.AuxKey(lock.KindSem, key)).(int64); n != 0 {
				t.Errorf("%d keys of %s remain after a late grant", n, key)
			}
			// A wait goes on and takes it once replies are prompt again.
			o.Wait = 5 * time.Second
			h.mu.Lock()
			h.delays = []time.Duration{900 * time.Millisecond, 900 * time.Millisecond}
			h.mu.Unlock()
			lease, err = l.Acquire(ctx, name, time.Second, &o)
			if err != nil {
				t.Fatal(err)
			}
			heldNow(t, c, lease, key, tc.o.Limit > 0)
		})
	}
}

func TestLateRenewalIsNotHeld(t *testing.T) {
	t.Parallel()
	for _, limit := range []int{0, 2} {
		h := &slowReplies{}
		l, _ := slowLocker(t, h)
		name := uniqueName(t)
		lease, err := l.Acquire(ctx, name, time.Second, &lock.AcquireOptions{Limit: limit})
		if err != nil {
			t.Fatal(err)
		}
		h.mu.Lock()
		h.delays = []time.Duration{900 * time.Millisecond}
		h.mu.Unlock()
		_, err = l.Renewer(lease).Renew(ctx, name, lease.Token(), time.Second)
		if !errors.As(err, new(*lock.LateError)) || !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("limit %d: a renewal answered past its deadline returned %v", limit, err)
		}
	}
}

func TestRedlockLateGrantIsReconfirmed(t *testing.T) {
	t.Parallel()
	// Every node answers within the node timeout, but the quorum's answer
	// comes after the lease's local deadline (though within its TTL less
	// the drift allowance, which was all Redlock used to check).
	var clients []redis.UniversalClient
	for range 3 {
		s := redistest.StartTest(t, nil)
		c := redis.NewClient(&redis.Options{Addr: s.Addr, ContextTimeoutEnabled: true, MaxRetries: -1,
			Protocol: 2, DisableIdentity: true, DialerRetries: 1})
		t.Cleanup(func() { c.Close() })
		c.AddHook(&slowReplies{delays: []time.Duration{900 * time.Millisecond}})
		clients = append(clients, c)
	}
	l, err := lock.NewRedlock(clients, &lock.Options{NodeTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName(t)
	start := time.Now()
	lease, err := l.Acquire(ctx, name, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if left := time.Until(lease.Deadline()); left <= 0 {
		t.Errorf("Redlock returned a lease whose local deadline passed %v ago", -left)
	}
	if sentOf(lease).Sub(start) < 800*time.Millisecond {
		t.Errorf("lease counted from %v after the start, not from the re-confirmation", sentOf(lease).Sub(start))
	}
}
