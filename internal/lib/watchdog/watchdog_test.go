package watchdog_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/lib/watchdog"
)

// What pkg/lock and pkg/once configure through Options: RenewNow renews off
// the schedule, OnRenew sees each renewal that counts with its deadline, a
// refusal is reported with the error Lost builds, and OnLost follows it.
func TestOptionsHooks(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var refuse atomic.Bool
		renew := watchdog.RenewFunc(func(context.Context, string, string, time.Duration) (time.Duration, error) {
			if refuse.Load() {
				return 0, lockwire.ErrNotHeld
			}
			return 0, nil
		})
		var deadlines []time.Time
		var onLost atomic.Int32
		kick := make(chan struct{})
		const ttl = 3 * time.Second
		start := time.Now()
		w, err := watchdog.Start(t.Context(), renew, "deploy", "tok", ttl, start, &watchdog.Options{
			RenewEvery: time.Second,
			RenewNow:   kick,
			OnRenew:    func(d time.Time) { deadlines = append(deadlines, d) },
			Lost:       func(expired bool, err error) error { return &lostError{err, expired} },
			OnLost:     func() { onLost.Add(1) },
		})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
		kick <- struct{}{}
		synctest.Wait()
		if len(deadlines) != 1 || !deadlines[0].Equal(start.Add(100*time.Millisecond+ttl-750*time.Millisecond)) {
			t.Fatalf("after RenewNow at 100ms: deadlines %v", deadlines)
		}
		if w.Renewals() != 1 || !w.Deadline().Equal(deadlines[0]) {
			t.Errorf("renewals %d, deadline %v", w.Renewals(), w.Deadline())
		}
		refuse.Store(true)
		var got error
		select {
		case got = <-w.Lost():
		case <-time.After(ttl):
			t.Fatal("no loss after a refused renewal")
		}
		var le *lostError
		if !errors.As(got, &le) || le.expired || !errors.Is(got, lockwire.ErrNotHeld) {
			t.Errorf("loss %v, want the Lost hook's error for a refusal", got)
		}
		synctest.Wait()
		if onLost.Load() != 1 || w.Err() != got || w.Held() {
			t.Errorf("OnLost called %d times, Err %v, Held %v", onLost.Load(), w.Err(), w.Held())
		}
		w.Stop()
	})
}

// A panic in the renewal is a loss carrying a *PanicError.
func TestPanicIsLoss(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		renew := watchdog.RenewFunc(func(context.Context, string, string, time.Duration) (time.Duration, error) {
			panic("boom")
		})
		w, err := watchdog.Start(t.Context(), renew, "deploy", "tok", 3*time.Second, time.Time{}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		err = <-w.Lost()
		var pe *watchdog.PanicError
		if !errors.As(err, &pe) || pe.Where != "renewal" || pe.Value != "boom" {
			t.Errorf("loss %v, want a *PanicError from the renewal", err)
		}
	})
}

type lostError struct {
	err     error
	expired bool
}

func (e *lostError) Error() string { return "lost" }
func (e *lostError) Unwrap() error { return e.err }
