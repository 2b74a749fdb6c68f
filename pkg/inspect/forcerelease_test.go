package inspect_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
)

// force-release checks, in its script and before writing, that the key is
// a lock: a hash whose field the token names is not one unless every
// field is Redisson's "uuid:threadId" with a count, or it is a Redisson
// read-write lock (a mode, read or write, beside such holds).
func TestForceReleaseRefusesWhatIsNotALock(t *testing.T) {
	c := clientFor(t, srv.URL)
	ctx := context.Background()
	prefix := "frshape" + strings.ReplaceAll(t.Name(), "/", "_") + ":"
	in := inspect.New(c, &inspect.Options{Prefix: prefix})
	const u = "8f6f3e2a-6b7e-4f5e-9a51-0c1d2e3f4a5b"
	audit := func() int64 { return c.XLen(ctx, inspect.AuditKey).Val() }
	before := audit()
	for _, tc := range []struct {
		name   string
		fields []any
		token  string
	}{
		{"user", []any{"name", "alice", "email", "a@x"}, "email"},
		{"mixed", []any{u + ":1", "1", "note", "hello"}, u + ":1"},
		{"zero", []any{u + ":1", "0"}, u + ":1"},
		{"nothread", []any{u + ":x", "1"}, u + ":x"},
		{"huge", []any{u + ":99999999999999999999", "1"}, u + ":99999999999999999999"},
		{"othermode", []any{"mode", "exclusive", u + ":1", "1"}, u + ":1"},
		{"rwmixed", []any{"mode", "read", u + ":1", "1", "note", "hello"}, u + ":1"},
		{"rwzero", []any{"mode", "write", u + ":1:write", "0"}, u + ":1:write"},
		{"rwnohold", []any{"mode", "read"}, "mode"},
	} {
		key := prefix + tc.name
		do(t, c, append([]any{"HSET", key}, tc.fields...)...)
		do(t, c, "PEXPIRE", key, 60000)
		_, err := in.ForceRelease(ctx, tc.name, tc.token, nil)
		var wt *lock.DataError
		if !errors.Is(err, lock.ErrWrongType) || !errors.As(err, &wt) || wt.Err != lock.ErrWrongType {
			t.Errorf("%s: %v, want a *DataError of the wrong type", tc.name, err)
		}
		if n := c.HLen(ctx, key).Val(); n != int64(len(tc.fields)/2) {
			t.Errorf("%s: %d fields left of %d", tc.name, n, len(tc.fields)/2)
		}
	}
	if n := audit(); n != before {
		t.Errorf("refusals wrote %d audit record(s)", n-before)
	}
	// The real thing still goes.
	do(t, c, "HSET", prefix+"rx", u+":7", "2")
	r, err := in.ForceRelease(ctx, "rx", u+":7", &inspect.ReleaseOptions{Reason: "test"})
	if err != nil || r.Holder.Kind() != "redisson" || r.AuditID == "" || r.Wake != nil {
		t.Fatalf("release: %+v %v", r, err)
	}
	if c.Exists(ctx, prefix+"rx").Val() != 0 {
		t.Error("the Redisson lock is still there")
	}
}

// lockctl's own namespace holds no locks: force-release and FixOrphans
// refuse its keys before asking Redis.
func TestOwnKeysAreNeverReleasedOrFixed(t *testing.T) {
	c := clientFor(t, srv.URL)
	ctx := context.Background()
	key := "lockctl:checked:{" + t.Name() + "}"
	do(t, c, "SET", key, "5")
	raw := inspect.New(c, &inspect.Options{RawKeys: true})
	if _, err := raw.ForceRelease(ctx, key, "5", nil); !errors.Is(err, inspect.ErrOwnKey) || !errors.Is(err, lock.ErrInvalid) {
		t.Errorf("force-release: %v", err)
	}
	done, err := raw.FixOrphans(ctx, []string{"lock:x", key}, inspect.Fix{Delete: true})
	if !errors.Is(err, inspect.ErrOwnKey) || done != nil {
		t.Errorf("fix: %v %v", done, err)
	}
	if v := c.Get(ctx, key).Val(); v != "5" {
		t.Errorf("%s is %q", key, v)
	}
}
