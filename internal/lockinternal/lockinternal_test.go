package lockinternal_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockinternal"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
)

var srv *redistest.Server

func TestMain(m *testing.M) { redistest.Main(m, &srv) }

var ctx = context.Background()

// Every accessor reaches its pkg/lock function with the type it is given
// here (a type that does not match would panic).

func TestScriptCommands(t *testing.T) {
	if cmds := lockinternal.ScriptCommands(); len(cmds) < 5 {
		t.Errorf("ScriptCommands() = %v", cmds)
	}
}

func TestNewHeldError(t *testing.T) {
	err := lockinternal.NewHeldError(lock.ErrNotOwner, lock.Holder{Key: "lock:x", Owner: "someone", TTL: time.Second})
	if !errors.Is(err, lock.ErrNotOwner) || errors.Is(err, lock.ErrNotObtained) || err.Holder.Owner != "someone" {
		t.Errorf("NewHeldError: %v", err)
	}
}

func TestDataErrorOf(t *testing.T) {
	c := srv.Client(t)
	other := errors.New("not a data reply")
	if err := lockinternal.DataErrorOf(ctx, c, other, "lock:x"); err != other {
		t.Errorf("DataErrorOf passed %v on as %v", other, err)
	}
	key := "lockinternal:list"
	c.RPush(ctx, key, "a")
	_, wrong := c.Get(ctx, key).Result()
	var de *lock.DataError
	if err := lockinternal.DataErrorOf(ctx, c, wrong, key); !errors.As(err, &de) || !errors.Is(err, lock.ErrWrongType) || !errors.Is(err, wrong) {
		t.Errorf("DataErrorOf(%v) = %v, want a *lock.DataError", wrong, err)
	}
}

type renewFunc func(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error)

func (f renewFunc) Renew(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error) {
	return f(ctx, name, token, ttl)
}

func TestStartWatchdog(t *testing.T) {
	gone := renewFunc(func(context.Context, string, string, time.Duration) (time.Duration, error) {
		return 0, lock.ErrNotHeld
	})
	w, err := lockinternal.StartWatchdog(ctx, gone, "x", "tok", 300*time.Millisecond, time.Time{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	select {
	case err := <-w.Lost():
		if !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("loss %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no loss reported")
	}
}

func TestReleaseHoldAndHeldSince(t *testing.T) {
	c := srv.Client(t)
	l := lock.New(c, nil)
	name := "lockinternal-release"
	lease, err := l.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Reenter(ctx, name, lease.Token); err != nil {
		t.Fatal(err)
	}
	at, ok, err := lockinternal.HeldSince(ctx, l, name, lease.Token)
	if err != nil || !ok || !at.Equal(lease.AcquiredAt) {
		t.Errorf("HeldSince: %v %v %v, want %v", at, ok, err, lease.AcquiredAt)
	}
	// By name and token, as a release in another process than the
	// acquirer's: one hold at a time.
	byToken := func() *lock.Lease { return &lock.Lease{Name: name, Key: l.Key(name), Token: lease.Token} }
	if left, err := lockinternal.ReleaseHold(ctx, l, byToken()); err != nil || left != 1 {
		t.Errorf("first release: %d left, %v; want 1 left", left, err)
	}
	if left, err := lockinternal.ReleaseHold(ctx, l, byToken()); err != nil || left != 0 {
		t.Errorf("last release: %d left, %v", left, err)
	}
	if c.Exists(ctx, l.Key(name)).Val() != 0 {
		t.Error("the lock stays after the last hold's release")
	}
	if _, err := lockinternal.ReleaseHold(ctx, l, byToken()); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("release of a free lock: %v", err)
	}
}

func TestHolderParsers(t *testing.T) {
	v := `{"token":"t1","fence":7,"owner":"u@h:1","ttl_ms":30000,"acquired_ms":1767225600000}`
	if h := lockinternal.ParseValue("lock:x", v, time.Second); h.Token != "t1" || h.Fence != 7 || h.Owner != "u@h:1" ||
		h.Format != lock.FormatLockctl || h.TTL != time.Second || h.Key != "lock:x" {
		t.Errorf("ParseValue: %+v", h)
	}
	fields := map[string]string{"8f0c6a3e-1f2d-4b5c-9d8e-7a6b5c4d3e2f:1": "2"}
	if h, ok := lockinternal.ParseRedisson("r", fields, -1); !ok || h.Format != lock.FormatRedisson || h.Reentry != 2 {
		t.Errorf("ParseRedisson: %+v %v", h, ok)
	}
	if h, ok := lockinternal.ParseRedissonAny("r", fields, -1); !ok || h.Reentry != 2 {
		t.Errorf("ParseRedissonAny: %+v %v", h, ok)
	}
	rw := map[string]string{"mode": "read", "8f0c6a3e-1f2d-4b5c-9d8e-7a6b5c4d3e2f:1": "1"}
	if hs, ok := lockinternal.ParseRedissonRW("r", rw, -1); !ok || len(hs) != 1 || hs[0].RWMode != "read" {
		t.Errorf("ParseRedissonRW: %+v %v", hs, ok)
	}
	if _, ok := lockinternal.ParseRedisson("r", map[string]string{"name": "app data"}, -1); ok {
		t.Error("ParseRedisson took an application's hash")
	}
}
