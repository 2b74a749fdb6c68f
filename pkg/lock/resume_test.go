package lock_test

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

// A second Locker, as another process would, resumes a lease by name and
// token, renews it and releases it.
func TestResumeRenewsAndReleasesAnothersLease(t *testing.T) {
	first, c := newLocker(t, nil)
	name := uniqueName(t)
	lease, err := first.Acquire(ctx, name, 5*time.Second, &lock.AcquireOptions{Owner: "first", Note: "handed over"})
	if err != nil {
		t.Fatal(err)
	}
	second, _ := newLocker(t, nil)
	r, err := second.Resume(ctx, name, lease.Token())
	if err != nil {
		t.Fatal(err)
	}
	if r.Name() != name || r.Key() != lease.Key() || r.Token() != lease.Token() || r.Fence() != lease.Fence() || r.Owner() != "first" ||
		r.Note() != "handed over" || r.TTL() != 5*time.Second || !r.AcquiredAt().Equal(lease.AcquiredAt()) || r.Holds() != 1 {
		t.Errorf("resumed %+v; acquired %+v", r, lease)
	}
	if d := time.Until(r.Deadline()); d <= 0 || d > 5*time.Second {
		t.Errorf("resumed lease's deadline in %v", d)
	}
	if err := r.Refresh(ctx, time.Minute); err != nil || r.TTL() != time.Minute {
		t.Fatalf("refresh: %v (ttl %v)", err, r.TTL())
	}
	if pttl := c.PTTL(ctx, lease.Key()).Val(); pttl < 50*time.Second {
		t.Errorf("the key's TTL after the resumed lease's refresh: %v", pttl)
	}
	if err := r.Release(ctx); err != nil || r.Holds() != 0 {
		t.Fatalf("release: %v (holds %d)", err, r.Holds())
	}
	if c.Exists(ctx, lease.Key()).Val() != 0 {
		t.Error("the lock stays after the resumed lease's release")
	}
	// The acquirer's own lease is gone with it.
	if err := lease.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("the acquirer's release after the resumed one's: %v", err)
	}
}

func TestResumeRefusesAWrongToken(t *testing.T) {
	l, _ := newLocker(t, nil)
	name := uniqueName(t)
	if _, err := l.Resume(ctx, name, "nobody"); !errors.Is(err, lock.ErrNotHeld) || errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("resume of a free lock: %v", err)
	}
	lease, err := l.Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Owner: "holder"})
	if err != nil {
		t.Fatal(err)
	}
	r, err := l.Resume(ctx, name, "0123456789abcdef0123456789abcdef")
	var held *lock.HeldError
	if r != nil || !errors.Is(err, lock.ErrNotOwner) || !errors.As(err, &held) || held.Holder.Owner != "holder" || held.Holder.Token != lease.Token() {
		t.Errorf("resume with another token: %v, %v", r, err)
	}
	if _, err := l.Resume(ctx, name, ""); !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("resume with no token: %v", err)
	}
	// A semaphore's slots are found by token: a stranger's is not held.
	sem := uniqueName(t)
	if _, err := l.Acquire(ctx, sem, time.Minute, &lock.AcquireOptions{Limit: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Resume(ctx, sem, "stranger"); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("resume of a stranger's semaphore slot: %v", err)
	}
}

// A re-entered hold, resumed, says how many holds are left after each
// release; the last frees the lock.
func TestResumeReleasesOneHoldAtATime(t *testing.T) {
	for _, o := range []*lock.AcquireOptions{nil, {Limit: 3}, {Shared: true}} {
		t.Run(fmt.Sprintf("%+v", o), func(t *testing.T) {
			l, c := newLocker(t, nil)
			name := uniqueName(t)
			lease, err := l.Acquire(ctx, name, time.Minute, o)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := l.Reenter(ctx, name, lease.Token()); err != nil {
					t.Fatal(err)
				}
			}
			for want := 2; want >= 0; want-- {
				r, err := l.Resume(ctx, name, lease.Token())
				if err != nil {
					t.Fatal(err)
				}
				if r.Holds() != want+1 || r.Limit() != lease.Limit() || r.Shared() != lease.Shared() {
					t.Errorf("resumed with %d holds (limit %d, shared %v), want %d", r.Holds(), r.Limit(), r.Shared(), want+1)
				}
				if err := r.Release(ctx); err != nil || r.Holds() != want {
					t.Errorf("release: %v, %d holds left; want %d", err, r.Holds(), want)
				}
			}
			if n := c.Exists(ctx, lease.Key(), lock.AuxKey(lock.KindSem, lease.Key())).Val(); n != 0 {
				t.Errorf("%d key(s) stay after the last hold's release", n)
			}
			if _, err := l.Resume(ctx, name, lease.Token()); !errors.Is(err, lock.ErrNotHeld) {
				t.Errorf("resume after the last release: %v", err)
			}
		})
	}
}

// sentinels are every sentinel error the package exports: the error model
// the package doc's table describes.
var sentinels = []error{
	lock.ErrNotObtained, lock.ErrNotHeld, lock.ErrNotOwner, lock.ErrLost, lock.ErrInvalid,
	lock.ErrWrongType, lock.ErrUnavailable, lock.ErrStaleFence, lock.ErrNotWoken,
}

// Every error type is built by hand, as fs.PathError is, matched with
// errors.As, and matches exactly the sentinels the package doc's table
// gives it (and the causes it wraps), no other; every message starts
// "lock: ".
func TestErrorTypesBuiltByHand(t *testing.T) {
	h := lock.Holder{Key: "lock:x", Owner: "someone", TTL: time.Second}
	reply := errors.New("WRONGTYPE Operation against a key holding the wrong kind of value")
	for _, c := range []struct {
		err error
		is  []error // the sentinels it matches; it matches no other
		as  func(error) bool
	}{
		{&lock.HeldError{Err: lock.ErrNotOwner, Holder: h}, []error{lock.ErrNotOwner},
			func(err error) bool { var e *lock.HeldError; return errors.As(err, &e) && e.Holder.Owner == "someone" }},
		{&lock.HeldError{Err: lock.ErrNotObtained, Holder: h}, []error{lock.ErrNotObtained},
			func(err error) bool { var e *lock.HeldError; return errors.As(err, &e) && e.Holder.Key == "lock:x" }},
		{&lock.DataError{Key: "lock:x", Type: "list", Want: "a fence counter", Err: reply}, []error{lock.ErrWrongType},
			func(err error) bool {
				var e *lock.DataError
				return errors.As(err, &e) && e.Type == "list" && errors.Is(err, reply)
			}},
		{&lock.DataError{Key: "lock:x", Type: "list", Want: "a lock", Err: lock.ErrWrongType}, []error{lock.ErrWrongType},
			func(err error) bool { var e *lock.DataError; return errors.As(err, &e) && e.Type == "list" }},
		{&lock.DataError{Key: "lock:x", Limit: 2, WantLimit: 3, Err: lock.ErrInvalid}, []error{lock.ErrInvalid},
			func(err error) bool { var e *lock.DataError; return errors.As(err, &e) && e.WantLimit == 3 }},
		{&lock.StaleFenceError{Resource: "r", Fence: 1, Highest: 2}, []error{lock.ErrStaleFence},
			func(err error) bool { var e *lock.StaleFenceError; return errors.As(err, &e) && e.Highest == 2 }},
		{&lock.ReplicationError{Key: "lock:x", Want: 2, Acked: 1}, []error{lock.ErrUnavailable},
			func(err error) bool { var e *lock.ReplicationError; return errors.As(err, &e) && e.Acked == 1 }},
		{&lock.WakeError{Key: "lock:x", Channel: "c", Reason: "NOPERM"}, []error{lock.ErrNotWoken},
			func(err error) bool { var e *lock.WakeError; return errors.As(err, &e) && e.Reason == "NOPERM" }},
		{&lock.LateError{Key: "lock:x", Op: "renew", TTL: time.Second, Took: 2 * time.Second}, []error{lock.ErrNotHeld},
			func(err error) bool { var e *lock.LateError; return errors.As(err, &e) && e.Op == "renew" }},
		{&lock.LateError{Key: "lock:x", Op: "acquire", TTL: time.Second}, []error{lock.ErrNotObtained},
			func(err error) bool { var e *lock.LateError; return errors.As(err, &e) && e.Op == "acquire" }},
		{&lock.LateError{Key: "lock:x", Op: "re-enter", TTL: time.Second}, []error{lock.ErrNotObtained},
			func(err error) bool { var e *lock.LateError; return errors.As(err, &e) && e.Op == "re-enter" }},
		{&lock.LateError{Key: "lock:x", Op: "acquire", TTL: time.Second, Took: time.Second, Slow: true}, []error{lock.ErrUnavailable},
			func(err error) bool { var e *lock.LateError; return errors.As(err, &e) && e.Slow }},
		{&lock.LostError{Name: "x", Err: lock.ErrNotHeld}, []error{lock.ErrLost, lock.ErrNotHeld},
			func(err error) bool { var e *lock.LostError; return errors.As(err, &e) && e.Name == "x" }},
		{&lock.LostError{Name: "x", Expired: true}, []error{lock.ErrLost},
			func(err error) bool { var e *lock.LostError; return errors.As(err, &e) && e.Expired }},
		{&lock.QuorumError{Reason: "2 of 3 nodes refused", Errs: []error{reply}}, []error{lock.ErrUnavailable},
			func(err error) bool {
				var e *lock.QuorumError
				return errors.As(err, &e) && len(e.Errs) == 1 && errors.Is(err, reply)
			}},
		{&lock.PanicError{Where: "renewal", Value: "boom"}, nil,
			func(err error) bool { var e *lock.PanicError; return errors.As(err, &e) && e.Value == "boom" }},
	} {
		wrapped := fmt.Errorf("wrapped: %w", c.err)
		if msg := c.err.Error(); !strings.HasPrefix(msg, "lock: ") || strings.HasPrefix(msg, "lock: lock ") {
			t.Errorf("%T: message %q, want one starting \"lock: \" once", c.err, msg)
		}
		for _, target := range sentinels {
			if want := slices.Contains(c.is, target); errors.Is(wrapped, target) != want {
				t.Errorf("%T (%v): errors.Is(%v) = %v, want %v", c.err, c.err, target, !want, want)
			}
		}
		if !c.as(wrapped) {
			t.Errorf("%T: errors.As does not find it with its fields", c.err)
		}
	}
}

// Every sentinel says it comes from this package, in one style.
func TestSentinelMessages(t *testing.T) {
	for _, err := range sentinels {
		if msg := err.Error(); !strings.HasPrefix(msg, "lock: ") {
			t.Errorf("%q: want a message starting \"lock: \"", msg)
		}
	}
}
