package inspect_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
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

// sharedPrefixTokens returns two tokens whose hashes (inspect.TokenHash)
// share their first inspect.TokenPrefixMin digits and differ after them.
func sharedPrefixTokens(t *testing.T) (a, b string) {
	t.Helper()
	seen := map[string]string{}
	for range 1 << 20 {
		tok := token(t)
		h := inspect.TokenHash(tok)
		if other, ok := seen[h[:inspect.TokenPrefixMin]]; ok && inspect.TokenHash(other) != h {
			return other, tok
		}
		seen[h[:inspect.TokenPrefixMin]] = tok
	}
	t.Fatal("no two tokens share a hash prefix")
	return "", ""
}

// A hash prefix shorter than the 12 digits listings show frees the holder
// it names, as people copy 7 digits of a git hash; one that two holders
// share, or one too short to be read as a hash prefix, is refused and
// changes nothing: never reported as a holder that changed.
func TestForceReleaseTokenPrefix(t *testing.T) {
	in, c, prefix, leases := fixture(t)
	ctx := context.Background()
	l := lock.New(c, &lock.Options{Prefix: prefix})

	// Two semaphore slots whose token hashes share a prefix.
	ta, tb := sharedPrefixTokens(t)
	for _, tok := range []string{ta, tb} {
		if _, err := l.Acquire(ctx, "pool", time.Minute, &lock.AcquireOptions{Limit: 2, Token: tok}); err != nil {
			t.Fatal(err)
		}
	}
	semKey := lockwire.AuxKey(lockwire.KindSem, prefix+"pool")
	common := inspect.TokenHash(ta)[:inspect.TokenPrefixMin]
	var pe *inspect.PrefixError
	_, err := in.ForceRelease(ctx, "pool", common, nil)
	if !errors.As(err, &pe) || !errors.Is(err, lock.ErrInvalid) || errors.Is(err, lock.ErrNotOwner) || pe.Holders != 2 || pe.Prefix != common {
		t.Fatalf("a prefix two slots share: %v", err)
	}
	if n := c.ZCard(ctx, semKey).Val(); n != 2 {
		t.Fatalf("an ambiguous prefix freed a slot: %d left", n)
	}
	// The digits that tell them apart free the one they name.
	r, err := in.ForceRelease(ctx, "pool", inspect.TokenHash(tb), nil)
	if err != nil || r.Holder.Token != tb || r.HoldersLeft != 1 {
		t.Fatalf("the longer prefix: %+v %v", r, err)
	}
	if c.ZScore(ctx, semKey, ta).Err() != nil {
		t.Fatal("the other slot is gone")
	}
	audit, err := in.Audit(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	var recorded []string
	for _, e := range audit {
		if e.Key == prefix+"pool" {
			recorded = append(recorded, e.TokenHash)
		}
	}
	if len(recorded) != 1 || recorded[0] != inspect.TokenHash(tb) {
		t.Fatalf("audit after one release and one refusal: %v, want %s alone", recorded, inspect.TokenHash(tb))
	}

	// A plain lock: 7 digits name its holder; fewer than TokenPrefixMin
	// are refused, whatever they match.
	d := leases["deploy"]
	for n := 1; n < inspect.TokenPrefixMin; n++ {
		short := inspect.TokenHash(d.Token())[:n]
		if _, err := in.ForceRelease(ctx, "deploy", short, nil); !errors.As(err, &pe) || pe.Holders != 0 || errors.Is(err, lock.ErrNotOwner) {
			t.Fatalf("%d digits: %v", n, err)
		}
	}
	if h, err := l.Get(ctx, "deploy"); err != nil || h.Token != d.Token() {
		t.Fatalf("a refused prefix changed the lock: %+v %v", h, err)
	}
	if r, err := in.ForceRelease(ctx, "deploy", inspect.TokenHash(d.Token())[:7], nil); err != nil || r.Holder.Token != d.Token() {
		t.Fatalf("7 digits: %+v %v", r, err)
	}

	// A short hex value is a foreign lock's whole token: its own, never a
	// prefix refused.
	do(t, c, "SET", prefix+"short", "abc", "PX", 60000)
	if r, err := in.ForceRelease(ctx, "short", "abc", nil); err != nil || r.Holder.Token != "abc" {
		t.Fatalf("a foreign lock's short token: %+v %v", r, err)
	}
}
