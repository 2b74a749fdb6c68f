package lock_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/pkg/lock"
)

// Most tests run in a synctest bubble: time is virtual, so a 3s lease plays
// out instantly and exactly, and synctest.Wait tells when the watchdog has
// done all it can at the current instant.

type renewFunc func(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error)

func (f renewFunc) Renew(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error) {
	return f(ctx, name, token, ttl)
}

func always(ttl time.Duration) renewFunc {
	return func(context.Context, string, string, time.Duration) (time.Duration, error) { return ttl, nil }
}

func hang(ctx context.Context, _, _ string, _ time.Duration) (time.Duration, error) {
	<-ctx.Done()
	return 0, ctx.Err()
}

func lostNow(t *testing.T, w *lock.Watchdog) error {
	t.Helper()
	select {
	case err := <-w.Lost():
		return err
	default:
		return nil
	}
}

const ttl = 3 * time.Second // default every 500ms (ttl/6), margin 750ms, first deadline at 2.25s

// startWatchdog watches "deploy" held with token "tok" for ttl, renewing
// through r; the watchdog stops when the test ends.
func startWatchdog(t *testing.T, r lock.Renewer, opt *lock.WatchdogOptions) *lock.Watchdog {
	t.Helper()
	w, err := lock.StartWatchdogNow(context.Background(), r, "deploy", "tok", ttl, opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	return w
}

func TestWatchdogRenewsAndCounts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var names []string
		r := renewFunc(func(_ context.Context, name, token string, d time.Duration) (time.Duration, error) {
			names = append(names, name+"/"+token+"/"+d.String())
			return d, nil
		})
		w := startWatchdog(t, r, nil)
		time.Sleep(10*time.Second + 500*time.Millisecond)
		synctest.Wait()
		if err := lostNow(t, w); err != nil {
			t.Fatalf("lost while renewals succeed: %v", err)
		}
		// The default period is ttl/6.
		if n := w.Renewals(); n != 21 {
			t.Errorf("Renewals() = %d after 10.5s at 500ms intervals, want 21", n)
		}
		// The last renewal was sent at +10.5s: the deadline counts from it.
		if got, want := w.Deadline(), start.Add(10500*time.Millisecond+ttl-750*time.Millisecond); !got.Equal(want) {
			t.Errorf("Deadline = +%v, want +12.75s", got.Sub(start))
		}
		if names[0] != "deploy/tok/3s" {
			t.Errorf("Renew called with %q", names[0])
		}
		if !w.Held() {
			t.Error("Held() = false while renewing")
		}
	})
}

func TestWatchdogLosesAtDeadlineWhenRenewalsHang(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		w := startWatchdog(t, renewFunc(hang), nil)
		time.Sleep(2250*time.Millisecond - time.Nanosecond)
		synctest.Wait()
		if err := lostNow(t, w); err != nil {
			t.Fatalf("lost before the deadline: %v", err)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		err := lostNow(t, w)
		var le *lock.LostError
		if !errors.As(err, &le) || !le.Expired || !errors.Is(err, lock.ErrLost) {
			t.Fatalf("want an expired *LostError at the deadline, got %v", err)
		}
		if w.Held() || w.Err() == nil {
			t.Error("Held()/Err() disagree with the loss")
		}
		if w.Renewals() != 0 {
			t.Errorf("Renewals() = %d, want 0", w.Renewals())
		}
	})
}

func TestWatchdogRetriesErrorsQuicklyThenLoses(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		boom := errors.New("dial tcp: connection refused")
		var calls atomic.Int64
		r := renewFunc(func(context.Context, string, string, time.Duration) (time.Duration, error) {
			calls.Add(1)
			return 0, boom
		})
		w := startWatchdog(t, r, nil)
		time.Sleep(2250 * time.Millisecond)
		synctest.Wait()
		err := lostNow(t, w)
		if !errors.Is(err, lock.ErrLost) || !errors.Is(err, boom) {
			t.Fatalf("want a loss carrying the last error, got %v", err)
		}
		// First try at 1s, then 100, 200, 400ms back-off: 1.1, 1.3, 1.7, 2.5.
		if n := calls.Load(); n < 4 {
			t.Errorf("%d renewal attempts in 1.25s of errors: retries are not quick", n)
		}
	})
}

func TestWatchdogRecoversFromErrorsBeforeDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var calls atomic.Int64
		r := renewFunc(func(_ context.Context, _, _ string, d time.Duration) (time.Duration, error) {
			if calls.Add(1) <= 3 {
				return 0, errors.New("i/o timeout")
			}
			return d, nil
		})
		w := startWatchdog(t, r, nil)
		time.Sleep(5 * time.Second)
		synctest.Wait()
		if err := lostNow(t, w); err != nil {
			t.Fatalf("lost although a retry succeeded before the deadline: %v", err)
		}
		if w.Renewals() == 0 {
			t.Error("no renewal counted")
		}
	})
}

func TestWatchdogNotOwnerIsLostAtOnce(t *testing.T) {
	for _, refusal := range []error{
		&lock.HeldError{Err: lock.ErrNotOwner, Holder: lock.Holder{Key: "lock:deploy", Owner: "b@h:2", TTL: time.Second}},
		lock.ErrNotHeld,
		&lock.DataError{Key: "lock:deploy", Type: "list", Want: "a lock", Err: lock.ErrWrongType},
	} {
		t.Run(refusal.Error(), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				r := renewFunc(func(context.Context, string, string, time.Duration) (time.Duration, error) {
					return 0, refusal
				})
				w := startWatchdog(t, r, nil)
				time.Sleep(time.Second) // the first renewal
				synctest.Wait()
				err := lostNow(t, w)
				var le *lock.LostError
				if !errors.As(err, &le) || le.Expired || !errors.Is(err, refusal) {
					t.Fatalf("want an immediate refused loss wrapping %v, got %v", refusal, err)
				}
			})
		})
	}
}

// A slow reply extends the lease from the renewal's send time, never from
// the reply's arrival.
func TestWatchdogCountsFromSendTime(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var calls atomic.Int64
		r := renewFunc(func(ctx context.Context, _, _ string, d time.Duration) (time.Duration, error) {
			if calls.Add(1) == 1 {
				time.Sleep(time.Second) // sent at 1s, answered at 2s
				return d, nil
			}
			return hang(ctx, "", "", 0)
		})
		w := startWatchdog(t, r, &lock.WatchdogOptions{RenewEvery: time.Second})
		time.Sleep(2 * time.Second)
		synctest.Wait()
		if got, want := w.Deadline(), start.Add(time.Second+ttl-750*time.Millisecond); !got.Equal(want) {
			t.Fatalf("Deadline = +%v, want +3.25s (send time 1s + ttl - margin)", got.Sub(start))
		}
		time.Sleep(1250 * time.Millisecond)
		synctest.Wait()
		if err := lostNow(t, w); !errors.Is(err, lock.ErrLost) {
			t.Fatalf("not lost at send time + ttl - margin: %v", err)
		}
	})
}

// fakeClock is an injected Clock whose time moves only when told, like a
// process that was stopped and continued.
type fakeClock struct {
	mu     sync.Mutex
	now    time.Time
	timers []*fakeTimer
}

type fakeTimer struct {
	c  chan time.Time
	at time.Time
	fc *fakeClock
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) leasetime.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{c: make(chan time.Time, 1), at: c.now.Add(d), fc: c}
	if d <= 0 {
		t.c <- c.now
	} else {
		c.timers = append(c.timers, t)
	}
	return t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	keep := c.timers[:0]
	for _, t := range c.timers {
		if !t.at.After(c.now) {
			t.c <- c.now
		} else {
			keep = append(keep, t)
		}
	}
	c.timers = keep
}

func (t *fakeTimer) C() <-chan time.Time { return t.c }
func (t *fakeTimer) Stop() bool {
	t.fc.mu.Lock()
	defer t.fc.mu.Unlock()
	for i, x := range t.fc.timers {
		if x == t {
			t.fc.timers = append(t.fc.timers[:i], t.fc.timers[i+1:]...)
			return true
		}
	}
	return false
}

// The process is "stopped" for 10s with a renewal in flight; the renewal
// was sent before the pause and is answered "renewed" after it. That is no
// proof the lease survived: the watchdog must report the loss.
func TestWatchdogRenewalAnsweredAfterPauseIsNotProof(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &fakeClock{now: time.Unix(1000, 0)}
		sent := make(chan struct{})
		answer := make(chan struct{})
		r := renewFunc(func(_ context.Context, _, _ string, d time.Duration) (time.Duration, error) {
			sent <- struct{}{}
			<-answer
			return d, nil
		})
		w := startWatchdog(t, r, &lock.WatchdogOptions{Clock: clk})
		synctest.Wait()
		clk.Advance(time.Second)
		<-sent
		// SIGSTOP for 10s; on SIGCONT the reply is already waiting.
		clk.mu.Lock()
		clk.now = clk.now.Add(10 * time.Second)
		clk.mu.Unlock()
		close(answer)
		synctest.Wait()
		err := lostNow(t, w)
		var le *lock.LostError
		if !errors.As(err, &le) || !le.Expired {
			t.Fatalf("want an expired loss after the pause, got %v", err)
		}
		if n := w.Renewals(); n != 0 {
			t.Errorf("the late reply counted as %d renewal(s)", n)
		}
	})
}

// Stopped past the deadline with nothing in flight: the first timer that
// fires after SIGCONT reports the loss before any renewal is sent.
func TestWatchdogNoticesPauseBeforeRenewing(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &fakeClock{now: time.Unix(1000, 0)}
		var calls atomic.Int64
		r := renewFunc(func(_ context.Context, _, _ string, d time.Duration) (time.Duration, error) {
			calls.Add(1)
			return d, nil
		})
		w := startWatchdog(t, r, &lock.WatchdogOptions{Clock: clk})
		synctest.Wait()
		clk.Advance(time.Second)
		synctest.Wait()
		if calls.Load() != 1 || w.Renewals() != 1 {
			t.Fatalf("calls=%d renewals=%d after 1s, want 1/1", calls.Load(), w.Renewals())
		}
		clk.Advance(time.Minute) // stopped for a minute, then continued
		synctest.Wait()
		if err := lostNow(t, w); !errors.Is(err, lock.ErrLost) {
			t.Fatalf("no loss after a pause longer than the ttl: %v", err)
		}
		if calls.Load() != 1 {
			t.Errorf("a renewal was sent after the deadline had passed")
		}
	})
}

func TestWatchdogStopCancelsInFlightRenewal(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var cancelled atomic.Bool
		r := renewFunc(func(ctx context.Context, _, _ string, _ time.Duration) (time.Duration, error) {
			<-ctx.Done()
			cancelled.Store(true)
			return 0, ctx.Err()
		})
		w, err := lock.StartWatchdogNow(context.Background(), r, "deploy", "tok", ttl, nil)
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(1500 * time.Millisecond)
		w.Stop()
		if !cancelled.Load() {
			t.Error("Stop returned while a renewal was still in flight")
		}
		w.Stop() // idempotent
		time.Sleep(time.Minute)
		synctest.Wait()
		if err := lostNow(t, w); err != nil {
			t.Errorf("loss reported after Stop: %v", err)
		}
	})
}

func TestWatchdogRejectsUnusableSchedules(t *testing.T) {
	for _, tc := range []struct {
		name string
		ttl  time.Duration
		opt  *lock.WatchdogOptions
	}{
		{"zero ttl", 0, nil},
		{"margin >= ttl", time.Second, &lock.WatchdogOptions{Margin: time.Second}},
		{"period past deadline", 3 * time.Second, &lock.WatchdogOptions{RenewEvery: 2250 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := lock.StartWatchdogNow(context.Background(), always(tc.ttl), "n", "tok", tc.ttl, tc.opt)
			if !errors.Is(err, lock.ErrInvalid) {
				if w != nil {
					w.Stop()
				}
				t.Fatalf("err = %v, want ErrInvalid", err)
			}
		})
	}
}

func TestDefaultMargin(t *testing.T) {
	for _, tc := range []struct{ ttl, want time.Duration }{
		{30 * time.Second, 7500 * time.Millisecond},
		{time.Second, 250 * time.Millisecond},
		{300 * time.Millisecond, 100 * time.Millisecond},
		{100 * time.Millisecond, 50 * time.Millisecond},
	} {
		if got := leasetime.DefaultMargin(tc.ttl); got != tc.want {
			t.Errorf("DefaultMargin(%v) = %v, want %v", tc.ttl, got, tc.want)
		}
	}
}

// A renewal the master applied but replicas did not acknowledge does not
// count: the master may be one a failover already replaced, cut off from
// its replicas and Sentinels, while another client holds the lock on the
// promoted replica. The shortfall is reported and retried soon, the
// deadline stays where the acquire put it, and at the deadline the lease
// is lost. A renewal acknowledged again before the deadline keeps it.
func TestWatchdogLosesLeaseOnReplicationShortfall(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		short := &lock.ReplicationError{Key: "lock:deploy", Want: 1, Acked: 0}
		var calls, reported atomic.Int64
		r := renewFunc(func(_ context.Context, _, _ string, d time.Duration) (time.Duration, error) {
			calls.Add(1)
			return d, short
		})
		w, err := lock.StartWatchdogNow(context.Background(), r, "deploy", "tok", ttl, &lock.WatchdogOptions{
			Observer: func(e lock.WatchEvent) {
				if errors.Is(e.Err, lock.ErrUnavailable) {
					reported.Add(1)
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		want := leasetime.Deadline(start, ttl, 0)
		time.Sleep(want.Sub(start) - time.Millisecond)
		synctest.Wait()
		if err := lostNow(t, w); err != nil || !w.Held() {
			t.Fatalf("lost before the deadline: %v", err)
		}
		if d := w.Deadline(); !d.Equal(want) {
			t.Errorf("deadline %v after unacknowledged renewals; want it unmoved at %v", d.Sub(start), want.Sub(start))
		}
		time.Sleep(2 * time.Millisecond)
		synctest.Wait()
		err = lostNow(t, w)
		var le *lock.LostError
		if !errors.As(err, &le) || !le.Expired || !errors.Is(err, lock.ErrUnavailable) || w.Held() {
			t.Fatalf("past the deadline with only unacknowledged renewals: %v, held %v; want an expiry whose last error is the shortfall", err, w.Held())
		}
		// Retried with the short back-off, not once a period.
		if n := calls.Load(); n < 5 {
			t.Errorf("%d renewals before the deadline: shortfalls not retried soon", n)
		}
		if reported.Load() == 0 {
			t.Error("shortfalls not reported to the Observer")
		}
		if w.Renewals() != 0 {
			t.Errorf("%d renewals counted; an unacknowledged one does not count", w.Renewals())
		}
	})
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var calls atomic.Int64
		r := renewFunc(func(_ context.Context, _, _ string, d time.Duration) (time.Duration, error) {
			if calls.Add(1)%3 != 0 {
				return d, &lock.ReplicationError{Key: "lock:deploy", Want: 1, Acked: 0}
			}
			return d, nil
		})
		w, err := lock.StartWatchdogNow(context.Background(), r, "deploy", "tok", ttl, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		time.Sleep(3 * ttl)
		synctest.Wait()
		if err := lostNow(t, w); err != nil || !w.Held() {
			t.Fatalf("lost although every third renewal was acknowledged: %v", err)
		}
		if d := w.Deadline().Sub(start); d < 3*ttl {
			t.Errorf("deadline +%v after 3 ttls with acknowledged renewals", d)
		}
	})
}

// Locker.Watch counts from the lease's own send time: its deadline starts
// as the lease's Deadline().
func TestWatchStartsAtLeaseDeadline(t *testing.T) {
	l, _ := newLocker(t, nil)
	lease, err := l.Acquire(ctx, uniqueName(t), ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := lease.StartWatch(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if d := w.Deadline(); !d.Equal(lease.Deadline()) || !d.Equal(leasetime.Deadline(sentOf(lease), ttl, 0)) {
		t.Errorf("watchdog deadline %v, lease deadline %v", d, lease.Deadline())
	}
}

// RenewNow renews at once, off the schedule; asked while a renewal is in
// flight, it renews again as soon as that one is answered (the one in
// flight may have gone to the master a failover just demoted).
func TestWatchdogRenewNow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &fakeClock{now: time.Unix(1000, 0)}
		var calls atomic.Int64
		hold := make(chan struct{})
		r := renewFunc(func(_ context.Context, _, _ string, d time.Duration) (time.Duration, error) {
			if calls.Add(1) == 2 {
				<-hold
			}
			return d, nil
		})
		w := startWatchdog(t, r, &lock.WatchdogOptions{Clock: clk})
		synctest.Wait()
		w.RenewNow()
		synctest.Wait()
		if n := calls.Load(); n != 1 {
			t.Fatalf("RenewNow at t=0: %d renewals sent, want 1 at once", n)
		}
		w.RenewNow() // the second is held in flight
		synctest.Wait()
		w.RenewNow()
		synctest.Wait()
		if n := calls.Load(); n != 2 {
			t.Fatalf("%d renewals sent, want 2 (one in flight)", n)
		}
		close(hold)
		synctest.Wait()
		if n := calls.Load(); n != 3 {
			t.Fatalf("%d renewals sent after the one in flight was answered, want 3", n)
		}
		if n := w.Renewals(); n != 3 {
			t.Errorf("renewals %d, want 3", n)
		}
	})
}

// A renewal that meets a connection the client closed under it (a Sentinel
// client closes its connections to a demoted master) is retried at once,
// not after the back-off: the retry dials the new master.
func TestWatchdogRetriesAtOnceOnClosedConnection(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		clk := &fakeClock{now: time.Unix(1000, 0)}
		var calls atomic.Int64
		closed := &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}
		r := renewFunc(func(_ context.Context, _, _ string, d time.Duration) (time.Duration, error) {
			if calls.Add(1) == 1 {
				return 0, fmt.Errorf("renew: %w", closed)
			}
			return d, nil
		})
		w := startWatchdog(t, r, &lock.WatchdogOptions{Clock: clk})
		synctest.Wait()
		clk.Advance(time.Second)
		synctest.Wait()
		if n := calls.Load(); n != 2 {
			t.Fatalf("%d renewal calls, want 2: the closed connection retried at once", n)
		}
		if n := w.Renewals(); n != 1 {
			t.Errorf("renewals %d, want 1", n)
		}
	})
}

// panicLoss runs a Watchdog with r and opt up to its first renewal and
// returns the *PanicError its loss carries (failing when there is none).
func panicLoss(t *testing.T, r lock.Renewer, opt *lock.WatchdogOptions) *lock.PanicError {
	t.Helper()
	w, err := lock.StartWatchdogNow(context.Background(), r, "deploy", "tok", ttl, opt)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()          // returns only once the loop has ended
	time.Sleep(time.Second) // the first renewal
	synctest.Wait()
	err = lostNow(t, w)
	var pe *lock.PanicError
	if !errors.As(err, &pe) || !errors.Is(err, lock.ErrLost) || len(pe.Stack) == 0 {
		t.Fatalf("want a loss carrying a panic, got %v", err)
	}
	return pe
}

// A Renewer that panics (a bug) must not take the process down with the
// protected work still running: the lease is reported lost at once, with
// the panic, so the holder stops.
func TestWatchdogRenewalPanicIsALoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := renewFunc(func(context.Context, string, string, time.Duration) (time.Duration, error) {
			var m map[string]int
			m["boom"]++ //nolint:staticcheck // SA5000: the nil map write is the bug under test, a runtime panic
			return ttl, nil
		})
		pe := panicLoss(t, r, nil)
		if pe.Where != "renewal" {
			t.Fatalf("panic in the %s, want the renewal", pe.Where)
		}
		if _, ok := pe.Value.(runtime.Error); !ok {
			t.Fatalf("panic value %T %v, want the runtime error", pe.Value, pe.Value)
		}
	})
}

// The same for a panic in the watchdog's own loop (here: the caller's
// Observer, which the loop calls).
func TestWatchdogLoopPanicIsALoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r := renewFunc(func(context.Context, string, string, time.Duration) (time.Duration, error) {
			return 0, errors.New("connection reset")
		})
		pe := panicLoss(t, r, &lock.WatchdogOptions{Observer: func(lock.WatchEvent) { panic("callback bug") }})
		if pe.Where != "watchdog" || pe.Value != "callback bug" {
			t.Fatalf("panic %+v, want the loop's", pe)
		}
	})
}

// No renewal call outlives the lease: each attempt's context ends at the
// deadline, or sooner (two periods, at least ttl/3) when the deadline is
// further off, and the attempt that timed out is followed by another at
// once, which may reach a server the first could not.
func TestWatchdogBoundsEachAttempt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		var mu sync.Mutex
		var sent, ended []time.Duration
		r := renewFunc(func(ctx context.Context, _, _ string, _ time.Duration) (time.Duration, error) {
			mu.Lock()
			sent = append(sent, time.Since(start))
			mu.Unlock()
			<-ctx.Done()
			mu.Lock()
			ended = append(ended, time.Since(start))
			mu.Unlock()
			return 0, ctx.Err()
		})
		w := startWatchdog(t, r, nil)
		time.Sleep(3 * time.Second)
		synctest.Wait()
		if err := lostNow(t, w); !errors.Is(err, lock.ErrLost) {
			t.Fatalf("hanging renewals: %v, want the lease lost at its deadline", err)
		}
		mu.Lock()
		defer mu.Unlock()
		// ttl 3s: period 500ms, first renewal at 0.5s, bounded at
		// 0.5s + max(2 periods, ttl/3) = 1.5s; the retry at once,
		// bounded by the deadline at 2.25s.
		want := []time.Duration{500 * time.Millisecond, 1500 * time.Millisecond}
		if len(sent) != 2 || sent[0] != want[0] || sent[1] != want[1] {
			t.Errorf("attempts sent at %v, want %v", sent, want)
		}
		if len(ended) != 2 || ended[0] != 1500*time.Millisecond || ended[1] != 2250*time.Millisecond {
			t.Errorf("attempts ended at %v, want [1.5s 2.25s] (no call outlives the deadline)", ended)
		}
	})
}
