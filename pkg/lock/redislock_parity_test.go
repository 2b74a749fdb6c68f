package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

// What a user of other Go Redis lock libraries (bsm/redislock) counts on,
// against a real redis-server.

// A failed Acquire returns a nil *Lease, and the usual
//
//	lease, err := l.Acquire(...)
//	defer lease.Release(ctx)
//
// calls its methods: none panics, and each says nothing is held.
func TestNilLeaseIsSafe(t *testing.T) {
	l, _ := newLocker(t, nil)
	name := uniqueName(t)
	holder, err := l.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Release(ctx) }()

	lease, err := l.Acquire(ctx, name, time.Minute, nil)
	if !errors.Is(err, lock.ErrNotObtained) || lease != nil {
		t.Fatalf("acquire of a held lock: %v, %v; want a nil lease and ErrNotObtained", lease, err)
	}
	if err := lease.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("nil lease's Release: %v, want ErrNotHeld", err)
	}
	if err := lease.Refresh(ctx, time.Minute); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("nil lease's Refresh: %v, want ErrNotHeld", err)
	}
	if err := lease.Watch(ctx, nil); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("nil lease's Watch: %v, want no watchdog and ErrNotHeld", err)
	}
	if err := lease.Err(); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("nil lease's Err: %v, want ErrNotHeld", err)
	}
	if !closed(lease.Done(), 0) {
		t.Error("nil lease's Done is not closed: nothing is held")
	}
	if d := lease.Deadline(); !d.IsZero() {
		t.Errorf("nil lease's Deadline: %v, want the zero time", d)
	}
	// The holder's lock is untouched by all that.
	if h, err := l.Get(ctx, name); err != nil || h.Token != holder.Token() {
		t.Errorf("after the nil lease's calls the lock is %+v, %v; want it still held by %s", h, err, holder.Token())
	}
}

// A wait bounded by the context's deadline rather than by
// AcquireOptions.Wait ends as any other wait that did not get the lock:
// ErrNotObtained, and the context's error as well. A cancelled context
// is the caller giving up, not a refusal: context.Canceled only.
func TestAcquireEndedByContext(t *testing.T) {
	l, _ := newLocker(t, nil)
	name := uniqueName(t)
	holder, err := l.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Release(ctx) }()

	for _, wait := range []time.Duration{-1, time.Hour} {
		dctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		lease, err := l.Acquire(dctx, name, time.Minute, &lock.AcquireOptions{Wait: wait})
		cancel()
		if lease != nil {
			t.Fatalf("wait %v: got a lease of a held lock", wait)
		}
		if !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("wait %v ended by the context's deadline: %v; want ErrNotObtained and context.DeadlineExceeded", wait, err)
		}
		if errors.Is(err, context.Canceled) {
			t.Errorf("wait %v ended by the context's deadline matches context.Canceled: %v", wait, err)
		}
	}

	cctx, cancel := context.WithCancel(ctx)
	stop := time.AfterFunc(300*time.Millisecond, cancel)
	defer stop.Stop()
	lease, err := l.Acquire(cctx, name, time.Minute, &lock.AcquireOptions{Wait: -1})
	cancel()
	if lease != nil {
		t.Fatal("got a lease of a held lock")
	}
	if !errors.Is(err, context.Canceled) || errors.Is(err, lock.ErrNotObtained) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait ended by cancelling the context: %v; want context.Canceled only", err)
	}
}

// Acquiring again with the token that holds the lock stores the new call's
// note, and its owner when it names one, in every mode, and keeps the
// fence.
func TestReacquireWithTokenStoresNewNote(t *testing.T) {
	for _, mode := range []struct {
		name string
		opt  lock.AcquireOptions
	}{
		{"plain", lock.AcquireOptions{}},
		{"fifo", lock.AcquireOptions{FIFO: true}},
		{"semaphore", lock.AcquireOptions{Limit: 2}},
		{"shared", lock.AcquireOptions{Shared: true}},
	} {
		// An owner whose JSON has escapes and member-like text.
		const second = `second "owner","note":"x" \\`
		t.Run(mode.name, func(t *testing.T) {
			l, _ := newLocker(t, nil)
			name := uniqueName(t)
			o := mode.opt
			o.Token, o.Owner, o.Note = "tok-"+mode.name, "first-owner", "first note"
			first, err := l.Acquire(ctx, name, time.Minute, &o)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = first.Release(ctx) }()

			o.Owner, o.Note = second, "second note"
			again, err := l.Acquire(ctx, name, 2*time.Minute, &o)
			if err != nil {
				t.Fatalf("re-acquire with the holding token: %v", err)
			}
			if again.Note() != "second note" || again.Owner() != second {
				t.Errorf("re-acquired lease: owner %q, note %q; want the new ones", again.Owner(), again.Note())
			}
			if again.Fence() != first.Fence() || again.Holds() != 1 {
				t.Errorf("re-acquired lease: fence %d holds %d, want fence %d holds 1", again.Fence(), again.Holds(), first.Fence())
			}
			h, err := l.Get(ctx, name)
			if err != nil {
				t.Fatal(err)
			}
			if h.Note != "second note" || h.Owner != second || h.Fence != first.Fence() {
				t.Errorf("stored holder after the re-acquire: owner %q note %q fence %d; want %q, second note, fence %d",
					h.Owner, h.Note, h.Fence, second, first.Fence())
			}
			if h.LeaseTTL != 2*time.Minute {
				t.Errorf("stored lease TTL %v, want the re-acquire's 2m", h.LeaseTTL)
			}

			// No owner named: the stored one stays; the empty note clears it.
			o.Owner, o.Note = "", ""
			if _, err := l.Acquire(ctx, name, time.Minute, &o); err != nil {
				t.Fatal(err)
			}
			if h, err := l.Get(ctx, name); err != nil || h.Owner != second || h.Note != "" || h.Fence != first.Fence() {
				t.Errorf("stored holder after a re-acquire naming no owner: %+v, %v; want owner %q kept, no note", h, err, second)
			}
		})
	}
}

// A re-entered lease re-acquired with its token keeps its holds: the new
// note replaces the old one, and each hold is still given back one by one.
func TestReacquireKeepsHolds(t *testing.T) {
	l, _ := newLocker(t, nil)
	name := uniqueName(t)
	first, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Note: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reenter(ctx, name, first.Token()); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Token: first.Token(), Note: "two"}); err != nil {
		t.Fatal(err)
	}
	h, err := l.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if h.Note != "two" || h.Reentry != 2 {
		t.Errorf("after re-entry and re-acquire: note %q, holds %d; want two, 2", h.Note, h.Reentry)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if h, err := l.Get(ctx, name); err != nil || h.Token != first.Token() {
		t.Errorf("one hold given back of two: %+v, %v; want the lock still held", h, err)
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Get(ctx, name); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("both holds given back: %v, want ErrNotHeld", err)
	}
}
