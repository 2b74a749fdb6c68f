package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

var _ events.Sink = (*events.Recorder)(nil)

// sink keeps what a Locker records, in order.
type sink struct {
	mu  sync.Mutex
	got []events.Event
}

func (s *sink) Record(_ context.Context, e events.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.got = append(s.got, e)
}

func (s *sink) events() []events.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]events.Event(nil), s.got...)
}

// kinds is "kind name" per event, the name shortened to what follows the
// test's unique prefix.
func (s *sink) kinds(prefix string) []string {
	var out []string
	for _, e := range s.events() {
		out = append(out, e.Kind+" "+strings.TrimPrefix(e.Name, prefix))
	}
	return out
}

func (s *sink) count(kind string) int {
	n := 0
	for _, e := range s.events() {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// await waits until the sink holds n events of kind.
func (s *sink) await(t *testing.T, kind string, n int) {
	t.Helper()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if s.count(kind) >= n {
			return
		}
	}
	t.Fatalf("no %d %s event(s) recorded; got %v", n, kind, s.kinds(""))
}

func sameKinds(t *testing.T, got, want []string) {
	t.Helper()
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("events:\n  %s\nwant:\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}

func TestEventsOfAcquireAndRelease(t *testing.T) {
	rec := &sink{}
	l, _ := newLocker(t, &lock.Options{Events: rec})
	name := uniqueName(t)
	a, err := l.Acquire(ctx, name+".a", 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, name+".a", time.Second, nil); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("second acquire: %v", err)
	}
	if _, err := l.Acquire(ctx, name+".a", time.Second, &lock.AcquireOptions{Wait: 150 * time.Millisecond}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("waiting acquire: %v", err)
	}
	if err := a.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := a.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Fatalf("second release: %v", err)
	}

	// A stale release: b's lease ran out and c took the lock.
	b, err := l.Acquire(ctx, name+".b", 50*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(100 * time.Millisecond)
	c, err := l.Acquire(ctx, name+".b", 30*time.Second, &lock.AcquireOptions{Wait: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := releaseHold(ctx, b); !errors.Is(err, lock.ErrNotOwner) {
		t.Fatalf("stale release: %v", err)
	}
	// By name and token (Resume): the hold counts from the stored
	// acquisition time.
	if err := releaseToken(ctx, l, name+".b", c.Token()); err != nil {
		t.Fatal(err)
	}

	sameKinds(t, rec.kinds(name), []string{
		"acquired .a", "busy .a", "timeout .a", "released .a", "not_held .a",
		"acquired .b", "acquired .b", "not_owner .b", "released .b",
	})
	got := rec.events()
	if got[0].Duration <= 0 || got[3].Duration <= 0 {
		t.Errorf("acquired %v, released %v: want the wait and the hold time", got[0].Duration, got[3].Duration)
	}
	if got[8].Duration <= 0 {
		t.Errorf("a release of a resumed lease recorded a hold of %v, want the time since its acquisition", got[8].Duration)
	}
}

// A re-entered hold records nothing of its own; the release of the last
// hold records the release. Semaphore slots record as locks do.
func TestEventsOfReentryAndSemaphore(t *testing.T) {
	rec := &sink{}
	l, _ := newLocker(t, &lock.Options{Events: rec})
	name := uniqueName(t)
	outer, err := l.Acquire(ctx, name+".r", 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	inner, err := l.Reenter(ctx, name+".r", outer.Token())
	if err != nil {
		t.Fatal(err)
	}
	if left, err := releaseHold(ctx, inner); err != nil || left != 1 {
		t.Fatalf("inner release: %d left, %v", left, err)
	}
	if err := outer.Release(ctx); err != nil {
		t.Fatal(err)
	}

	s1, err := l.Acquire(ctx, name+".s", 30*time.Second, &lock.AcquireOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, name+".s", 30*time.Second, &lock.AcquireOptions{Limit: 1}); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("full semaphore: %v", err)
	}
	if err := s1.Release(ctx); err != nil {
		t.Fatal(err)
	}
	sameKinds(t, rec.kinds(name), []string{"acquired .r", "released .r", "acquired .s", "busy .s", "released .s"})
}

// What says nothing about the lock records nothing: Redis unreachable, a
// cancelled wait.
func TestEventsNotRecordedWithoutAnOutcome(t *testing.T) {
	rec := &sink{}
	hook := &partitionHook{}
	c := newClient(t)
	c.AddHook(hook)
	l := lock.New(c, &lock.Options{Events: rec})
	name := uniqueName(t)
	hook.cut.Store(true)
	if _, err := l.Acquire(ctx, name, time.Second, nil); !errors.Is(err, errPartition) {
		t.Fatalf("acquire cut off: %v", err)
	}
	if err := releaseToken(ctx, l, name, "tok"); !errors.Is(err, errPartition) {
		t.Fatalf("release cut off: %v", err)
	}
	hook.cut.Store(false)
	lease, err := l.Acquire(ctx, name, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	if _, err := l.Acquire(cctx, name, time.Second, &lock.AcquireOptions{Wait: -1}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled wait: %v", err)
	}
	sameKinds(t, rec.kinds(name), []string{"acquired "})
	_ = lease.Release(ctx)
}

// The sink is an *events.Recorder: the events reach the stream.
func TestEventsReachTheRecordersStream(t *testing.T) {
	c := newClient(t)
	key := "events:" + uniqueName(t)
	r := events.NewRecorder(c, &events.Options{Key: key})
	l := lock.New(c, &lock.Options{Events: r})
	name := uniqueName(t)
	lease, err := l.Acquire(ctx, name, 30*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r.Close()
	got, _, err := events.Read(ctx, c, key, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, e := range got {
		kinds = append(kinds, fmt.Sprintf("%s %s", e.Kind, e.Name))
	}
	sameKinds(t, kinds, []string{"acquired " + name, "released " + name})
}

// pausedServer is a private redis-server whose writes a test can pause
// (CLIENT PAUSE WRITE), and a client on it whose calls give up after
// 200ms instead of waiting the pause out.
func pausedServer(t *testing.T) (*redistest.Server, *redis.Client) {
	t.Helper()
	s := redistest.StartTest(t, nil)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, ReadTimeout: 200 * time.Millisecond, WriteTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { c.Close() })
	return s, c
}

func pauseWrites(t *testing.T, s *redistest.Server) {
	t.Helper()
	if _, err := s.Do("CLIENT", "PAUSE", "30000", "WRITE"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := s.Do("CLIENT", "UNPAUSE"); err != nil {
			t.Error(err)
		}
	})
}

// Renewals that time out while the server's writes are paused are
// recorded one by one, although the watchdog retries them and keeps the
// lease once the pause ends.
func TestEventsOfWatchdogRecoveringFromFailedRenewals(t *testing.T) {
	s, c := pausedServer(t)
	rec := &sink{}
	l := lock.New(c, &lock.Options{Events: rec})
	lease, err := l.Acquire(ctx, uniqueName(t), 6*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := lease.StartWatch(ctx, &lock.WatchdogOptions{RenewEvery: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	pauseWrites(t, s)
	rec.await(t, events.RenewFailed, 2) // the first attempt and a retry
	if _, err := s.Do("CLIENT", "UNPAUSE"); err != nil {
		t.Fatal(err)
	}
	for n := w.Renewals(); w.Renewals() == n; time.Sleep(10 * time.Millisecond) {
		if err := w.Err(); err != nil {
			t.Fatalf("lost: %v; events %v", err, rec.kinds(""))
		}
	}
	if !w.Held() {
		t.Fatalf("renewed, but not held")
	}
	if pttl := s.Int(t, "PTTL", lease.Key()); pttl <= 0 {
		t.Fatalf("PTTL %d after the recovery", pttl)
	}
	w.Stop()
	if n := rec.count(events.LeaseLost); n != 0 {
		t.Errorf("%d lease_lost recorded for a lease that was kept", n)
	}
	for _, e := range rec.events() {
		if e.Name != lease.Name() {
			t.Errorf("event %+v names another lock than %s", e, lease.Name())
		}
	}
}

// A watchdog that gives a lease up records the failed renewals, then
// lease_lost: at once on a refused renewal, at the local deadline when
// renewals keep failing.
func TestEventsOfWatchdogLosingTheLease(t *testing.T) {
	t.Run("refused", func(t *testing.T) {
		rec := &sink{}
		l, c := newLocker(t, &lock.Options{Events: rec})
		lease, err := l.Acquire(ctx, uniqueName(t), 3*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		w, err := lease.StartWatch(ctx, &lock.WatchdogOptions{RenewEvery: 200 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		redisDo(t, c, "DEL", lease.Key())
		if lost := awaitLoss(t, w); !errors.Is(lost, lock.ErrLost) || !errors.Is(lost, lock.ErrNotHeld) {
			t.Fatalf("loss %v, want ErrLost from ErrNotHeld", lost)
		}
		sameKinds(t, rec.kinds(lease.Name()), []string{"acquired ", "renew_failed ", "lease_lost "})
	})
	t.Run("expired", func(t *testing.T) {
		s, c := pausedServer(t)
		rec := &sink{}
		l := lock.New(c, &lock.Options{Events: rec})
		lease, err := l.Acquire(ctx, uniqueName(t), 1500*time.Millisecond, nil)
		if err != nil {
			t.Fatal(err)
		}
		w, err := lease.StartWatch(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		pauseWrites(t, s)
		lost := awaitLoss(t, w)
		var le *lock.LostError
		if !errors.As(lost, &le) || !le.Expired {
			t.Fatalf("loss %v, want expired", lost)
		}
		got := rec.kinds(lease.Name())
		if len(got) < 3 || got[0] != "acquired " || got[len(got)-1] != "lease_lost " {
			t.Fatalf("events %v, want acquired, renew_failed..., lease_lost", got)
		}
		for _, k := range got[1 : len(got)-1] {
			if k != "renew_failed " {
				t.Fatalf("events %v, want acquired, renew_failed..., lease_lost", got)
			}
		}
	})
}

// Recording costs no round trip of its own: the operation's commands are
// the same with a sink as without.
func TestEventsAddNoCommands(t *testing.T) {
	count := func(opts *lock.Options) int64 {
		c := newClient(t)
		h := &countingHook{}
		c.AddHook(h)
		l := lock.New(c, opts)
		name := uniqueName(t)
		lease, err := l.Acquire(ctx, name, 30*time.Second, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Acquire(ctx, name, 30*time.Second, nil); !errors.Is(err, lock.ErrNotObtained) {
			t.Fatal(err)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		return h.n.Load()
	}
	rec := &sink{}
	if without, with := count(nil), count(&lock.Options{Events: rec}); with != without || len(rec.events()) != 3 {
		t.Fatalf("%d commands with a sink (%d events), %d without", with, len(rec.events()), without)
	}
}
