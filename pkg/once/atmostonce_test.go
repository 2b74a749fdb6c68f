package once_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/lockctl/lockctl/pkg/once"
	"github.com/redis/go-redis/v9"
)

const auditKey = "lockctl:audit-once-test"

// lapse claims key at most once with a short lease and lets it lapse
// without an outcome, as when the claimant is killed mid-run.
func lapse(t *testing.T, ctx context.Context, s *once.Store, key string) *once.Claim {
	t.Helper()
	c, err := s.Claim(ctx, key, &once.ClaimOptions{AtMostOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	// No TTL: the record must outlive its claimant.
	if pttl := srv.Int(t, "PTTL", c.Key); pttl != -1 {
		t.Fatalf("at-most-once claim: PTTL %d, want -1 (no expiry)", pttl)
	}
	time.Sleep(s.TTL() + 100*time.Millisecond)
	return c
}

func TestAtMostOnceLapseIsUnknown(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), &once.Options{Owner: "alice@a:1", TTL: 300 * time.Millisecond})
	key := redistest.UniqueKey(t)
	lapse(t, ctx, s, key)

	// Get sees the lapse before anyone marks it.
	rec, err := s.Get(ctx, key)
	if err != nil || rec.State != once.StateUnknown || rec.Mode != once.ModeAtMostOnce || rec.TTL != -1 {
		t.Fatalf("Get after the lapse: %+v %v", rec, err)
	}
	// Every later claim, in either mode, is refused: the claim carries the mode.
	for _, co := range []*once.ClaimOptions{{AtMostOnce: true}, nil, {RerunFailed: true}} {
		_, err := once.New(srv.Client(t), &once.Options{Owner: "bob@b:2"}).Claim(ctx, key, co)
		var ue *once.UnknownError
		if !errors.Is(err, once.ErrUnknown) || !errors.As(err, &ue) || ue.Record.Owner != "alice@a:1" {
			t.Fatalf("claim %+v after the lapse: %v; want ErrUnknown", co, err)
		}
	}
	if got := srv.Client(t).HGet(ctx, "once:"+key, "state").Val(); got != "unknown" {
		t.Fatalf("state %v, want unknown marked by the claim", got)
	}
	if pttl := srv.Int(t, "PTTL", "once:"+key); pttl != -1 {
		t.Fatalf("unknown record: PTTL %d, want -1: it must not vanish", pttl)
	}
}

// In the default mode, the same lapse frees the key: the next call runs
// the command again (at-least-once).
func TestAtLeastOnceLapseRunsAgain(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), &once.Options{TTL: 300 * time.Millisecond})
	key := redistest.UniqueKey(t)
	if _, err := s.Claim(ctx, key, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(400 * time.Millisecond)
	if _, err := s.Claim(ctx, key, nil); err != nil {
		t.Fatalf("claim after an at-least-once claim lapsed: %v; want it claimed", err)
	}
}

func TestAtMostOnceCompleteAndRenew(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), &once.Options{TTL: 2 * time.Second, ResultTTL: time.Hour})
	key := redistest.UniqueKey(t)
	c, err := s.Claim(ctx, key, &once.ClaimOptions{AtMostOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	// Renewals move the lease: the claim outlives its TTL. A renewal every
	// quarter of it leaves a loaded machine 1.5s of slack per step.
	for range 6 {
		time.Sleep(500 * time.Millisecond)
		if err := c.Renew(ctx); err != nil {
			t.Fatalf("renew: %v", err)
		}
	}
	if _, err := s.Claim(ctx, key, &once.ClaimOptions{AtMostOnce: true}); !errors.Is(err, once.ErrInProgress) {
		t.Fatalf("claim of a renewed claim: %v; want ErrInProgress", err)
	}
	rec, err := c.Complete(ctx, 0)
	if err != nil || rec.State != once.StateDone || rec.Expired || !rec.LeaseDeadline.IsZero() || rec.TTL <= 59*time.Minute {
		t.Fatalf("complete: %+v %v", rec, err)
	}
	if _, err := s.Claim(ctx, key, &once.ClaimOptions{AtMostOnce: true}); !errors.Is(err, once.ErrDone) {
		t.Fatalf("claim after completion: %v; want ErrDone", err)
	}
}

// A renewal after the lease lapsed finds it lost (and marks it unknown);
// a claimant that still learns its command's exit code records it.
func TestAtMostOnceLateRenewAndComplete(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), &once.Options{TTL: 300 * time.Millisecond})
	key := redistest.UniqueKey(t)
	c := lapse(t, ctx, s, key)
	if err := c.Renew(ctx); !errors.Is(err, once.ErrLost) {
		t.Fatalf("renew after the lapse: %v; want ErrLost", err)
	}
	if _, err := s.Claim(ctx, key, &once.ClaimOptions{AtMostOnce: true}); !errors.Is(err, once.ErrUnknown) {
		t.Fatalf("claim after the late renewal: %v; want ErrUnknown", err)
	}
	rec, err := c.Complete(ctx, 3)
	if err != nil || rec.State != once.StateDone || rec.ExitCode != 3 || !rec.Expired || rec.TTL <= 0 {
		t.Fatalf("complete of a lapsed claim: %+v %v", rec, err)
	}
}

func TestResolve(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		decision string
		exit     int
		want     error // of the next claim
		wantExit int
	}{
		{once.ResolveSucceeded, 0, once.ErrDone, 0},
		{once.ResolveFailed, 0, once.ErrDone, 1},
		{once.ResolveFailed, 7, once.ErrDone, 7},
		{once.ResolveRetry, 0, nil, 0},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			t.Parallel()
			ctx := redistest.Context(t)
			s := once.New(srv.Client(t), &once.Options{Owner: "alice@a:1", TTL: 300 * time.Millisecond, ResultTTL: time.Hour})
			key := redistest.UniqueKey(t)
			audit := auditKey + ":" + key
			lapse(t, ctx, s, key)
			r, err := s.Resolve(ctx, key, tc.decision, &once.ResolveOptions{ExitCode: tc.exit, Who: "oncall@ops",
				Reason: "checked the provider", AuditKey: audit})
			if err != nil || r.AuditID == "" || r.Before.Owner != "alice@a:1" || r.Before.State != once.StateUnknown {
				t.Fatalf("resolve: %+v %v", r, err)
			}
			entries, err := srv.Client(t).XRange(ctx, audit, "-", "+").Result()
			if err != nil || len(entries) != 1 || entries[0].ID != r.AuditID {
				t.Fatalf("audit entries %v %v, want 1", entries, err)
			}
			fields := map[string]any{}
			for k, v := range entries[0].Values {
				fields[k] = v
			}
			if fields["who"] != "oncall@ops" || fields["name"] != key || fields["decision"] != tc.decision ||
				fields["reason"] != "checked the provider" || fields["owner"] != "alice@a:1" || fields["action"] != "once-resolve" {
				t.Fatalf("audit entry %v", fields)
			}

			c, err := s.Claim(ctx, key, &once.ClaimOptions{AtMostOnce: true})
			if tc.want == nil {
				if err != nil {
					t.Fatalf("claim after --retry: %v; want it claimed", err)
				}
				if c.Attempt != 1 {
					t.Fatalf("attempt %d", c.Attempt)
				}
				return
			}
			var de *once.DoneError
			if !errors.As(err, &de) || de.Record.ExitCode != tc.wantExit || de.Record.Resolved != tc.decision ||
				de.Record.ResolvedBy != "oncall@ops" || de.Record.TTL <= 59*time.Minute {
				t.Fatalf("claim after %s: %v; want a replay of exit %d", tc.decision, err, tc.wantExit)
			}
			// Resolved once: a second resolution is refused.
			if _, err := s.Resolve(ctx, key, once.ResolveRetry, &once.ResolveOptions{AuditKey: audit}); !errors.Is(err, once.ErrNotUnknown) {
				t.Fatalf("second resolve: %v; want ErrNotUnknown", err)
			}
			if n := srv.Int(t, "XLEN", audit); n != 1 {
				t.Fatalf("a refused resolve wrote to the audit stream: XLEN %d", n)
			}
		})
	}
}

func TestResolveRefusesWhatIsNotUnknown(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), &once.Options{TTL: 10 * time.Second})
	audit := auditKey + ":" + redistest.UniqueKey(t)
	ro := &once.ResolveOptions{AuditKey: audit}

	none := redistest.UniqueKey(t) + "-none"
	var nu *once.NotUnknownError
	if _, err := s.Resolve(ctx, none, once.ResolveSucceeded, ro); !errors.As(err, &nu) || nu.Record.State != "none" {
		t.Fatalf("resolve of no record: %v", err)
	}

	// A live claim (either mode): in progress, not unknown.
	for _, amo := range []bool{true, false} {
		key := redistest.UniqueKey(t) + "-running"
		if !amo {
			key += "-alo"
		}
		c, err := s.Claim(ctx, key, &once.ClaimOptions{AtMostOnce: amo})
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Resolve(ctx, key, once.ResolveRetry, ro)
		if !errors.Is(err, once.ErrNotUnknown) || !errors.Is(err, once.ErrInProgress) {
			t.Fatalf("resolve of a live claim (at most once %v): %v", amo, err)
		}
		if _, err := c.Complete(ctx, 0); err != nil {
			t.Fatalf("the live claim was disturbed: %v", err)
		}
		// Done: not unknown either.
		if _, err := s.Resolve(ctx, key, once.ResolveFailed, ro); !errors.Is(err, once.ErrNotUnknown) || errors.Is(err, once.ErrInProgress) {
			t.Fatalf("resolve of a done record: %v", err)
		}
	}
	if n := srv.Int(t, "EXISTS", audit); n != 0 {
		t.Fatalf("refused resolutions wrote to the audit stream")
	}
	if _, err := s.Resolve(ctx, none, "maybe", ro); !errors.Is(err, once.ErrInvalid) {
		t.Fatalf("unknown decision: %v", err)
	}
	if _, err := s.Resolve(ctx, none, once.ResolveFailed, &once.ResolveOptions{ExitCode: 256}); !errors.Is(err, once.ErrInvalid) {
		t.Fatalf("exit 256: %v", err)
	}
}

// Two callers race for a key whose claim lapsed: neither runs.
func TestAtMostOnceRaceAfterLapse(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), &once.Options{TTL: 300 * time.Millisecond})
	key := redistest.UniqueKey(t)
	lapse(t, ctx, s, key)
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Each on its own connection, in either mode.
			other := once.New(srv.Client(t), &once.Options{TTL: 300 * time.Millisecond})
			<-start
			_, errs[i] = other.Claim(ctx, key, &once.ClaimOptions{AtMostOnce: i%2 == 0})
		}()
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if !errors.Is(err, once.ErrUnknown) {
			t.Errorf("caller %d: %v; want ErrUnknown (nobody runs)", i, err)
		}
	}
}

// The claimant that never started its command abandons the claim, and the
// key is free again even at most once.
func TestAtMostOnceAbandon(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), nil)
	key := redistest.UniqueKey(t)
	c, err := s.Claim(ctx, key, &once.ClaimOptions{AtMostOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Abandon(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, key); !errors.Is(err, once.ErrNotFound) {
		t.Fatalf("after abandon: %v", err)
	}
}

// slowScripts holds back the reply of a client's scripts by d (with first,
// only the first script's): the server ran it at once, its reply comes
// late, as over a slow link.
type slowScripts struct {
	d     time.Duration
	first bool
	once  sync.Once
}

func (h *slowScripts) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *slowScripts) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if n := strings.ToLower(cmd.Name()); (n == "evalsha" || n == "eval") && !redis.HasErrorPrefix(err, "NOSCRIPT") {
			if h.first {
				h.once.Do(func() { time.Sleep(h.d) })
			} else {
				time.Sleep(h.d)
			}
		}
		return err
	}
}

func (h *slowScripts) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// A claim whose reply comes after its lease lapsed on the server is given
// up before the command starts (ErrLate), and its re-confirmation finds the
// lease lapsed and marks the key unknown. The command never ran: the
// claimant frees the key (abandon), rather than leave an outcome to resolve
// that is known: nothing happened.
func TestAtMostOnceLateClaimLeavesKeyFree(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	ttl := 300 * time.Millisecond
	slow := srv.Client(t)
	slow.AddHook(&slowScripts{d: ttl + 200*time.Millisecond, first: true})
	key := redistest.UniqueKey(t)
	_, err := once.New(slow, &once.Options{Owner: "alice@a:1", TTL: ttl}).Claim(ctx, key, &once.ClaimOptions{AtMostOnce: true})
	if !errors.Is(err, once.ErrLate) {
		t.Fatalf("claim whose reply came after its lease: %v, want ErrLate", err)
	}
	if n := srv.Int(t, "EXISTS", "once:"+key); n != 0 {
		state := srv.Client(t).HGet(ctx, "once:"+key, "state").Val()
		t.Fatalf("after a late claim that never ran the command, once:%s is left (state %q); want it freed", key, state)
	}
	c, err := once.New(srv.Client(t), &once.Options{Owner: "bob@b:2"}).Claim(ctx, key, &once.ClaimOptions{AtMostOnce: true})
	if err != nil {
		t.Fatalf("the next claim: %v; want it to run the command", err)
	}
	_ = c.Abandon(ctx)
}

// A resolution the server refuses part way (a user whose ACL allows the
// audit stream's XADD but not the write that resolves: HSET for an
// outcome, DEL for a retry) changes nothing: no audit record of a
// resolution that did not happen, and the key stays unknown.
func TestResolveRefusedWriteLeavesNoAudit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ decision, deny string }{
		{once.ResolveSucceeded, "hset"},
		{once.ResolveRetry, "del"},
	} {
		t.Run(tc.decision, func(t *testing.T) {
			t.Parallel()
			ctx := redistest.Context(t)
			key := redistest.UniqueKey(t)
			audit := auditKey + ":" + key
			lapse(t, ctx, once.New(srv.Client(t), &once.Options{Owner: "alice@a:1", TTL: 300 * time.Millisecond}), key)
			user := "resolver-" + tc.deny
			if _, err := srv.Do("ACL", "SETUSER", user, "reset", "on", ">pw", "~*", "&*", "+@all", "-"+tc.deny); err != nil {
				t.Fatal(err)
			}
			c := redistest.ClientFor(t, strings.Replace(srv.URL, "redis://", "redis://"+user+":pw@", 1))
			_, err := once.New(c, nil).Resolve(ctx, key, tc.decision, &once.ResolveOptions{Who: "oncall@ops", AuditKey: audit})
			if err == nil {
				t.Fatalf("resolve without %s succeeded; want the server's refusal", tc.deny)
			}
			if n := srv.Int(t, "XLEN", audit); n != 0 {
				t.Fatalf("a resolution the server refused left %d audit record(s)", n)
			}
			if got := srv.Client(t).HGet(ctx, "once:"+key, "state").Val(); got != once.StateRunning && got != once.StateUnknown {
				t.Fatalf("state %q after a refused resolution; want it still unresolved", got)
			}
		})
	}
}

// A claim the server refuses part way (an ACL without PEXPIRE, which sets
// an at-least-once claim's TTL) writes nothing: on the old script the
// record stayed "running" without a TTL, and every later call refused
// (75) for ever.
func TestClaimRefusedTTLLeavesNothing(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	if _, err := srv.Do("ACL", "SETUSER", "claimer-nopexpire", "reset", "on", ">pw", "~*", "&*", "+@all", "-pexpire"); err != nil {
		t.Fatal(err)
	}
	c := redistest.ClientFor(t, strings.Replace(srv.URL, "redis://", "redis://claimer-nopexpire:pw@", 1))
	key := redistest.UniqueKey(t)
	if _, err := once.New(c, nil).Claim(ctx, key, nil); err == nil {
		t.Fatal("claim without PEXPIRE succeeded; want the server's refusal")
	}
	if n := srv.Int(t, "EXISTS", "once:"+key); n != 0 {
		t.Fatalf("a claim the server refused left once:%s (PTTL %d)", key, srv.Int(t, "PTTL", "once:"+key))
	}
}

// An at-most-once record that is gone when its claimant records (an
// operator's resolve --retry deleted it) is left gone: the key is free for
// a new run, which an outcome written now would turn into a replay.
func TestAtMostOnceCompleteAfterRetryWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), &once.Options{TTL: 300 * time.Millisecond})
	key := redistest.UniqueKey(t)
	c := lapse(t, ctx, s, key)
	if _, err := s.Resolve(ctx, key, once.ResolveRetry, &once.ResolveOptions{Who: "op", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Complete(ctx, 3); !errors.Is(err, once.ErrLost) {
		t.Fatalf("complete after resolve --retry: %v; want ErrLost", err)
	}
	if n := srv.Int(t, "EXISTS", c.Key); n != 0 {
		t.Fatalf("complete after resolve --retry wrote the record again")
	}
}

// MarkUnknown turns the claimant's own record unknown at once, and leaves
// another claimant's record alone.
func TestAtMostOnceMarkUnknown(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), &once.Options{TTL: time.Minute})
	key := redistest.UniqueKey(t)
	c, err := s.Claim(ctx, key, &once.ClaimOptions{AtMostOnce: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.MarkUnknown(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, key, &once.ClaimOptions{AtMostOnce: true}); !errors.Is(err, once.ErrUnknown) {
		t.Fatalf("claim after MarkUnknown: %v; want ErrUnknown", err)
	}
	if _, err := s.Resolve(ctx, key, once.ResolveSucceeded, &once.ResolveOptions{Who: "op", Reason: "test"}); err != nil {
		t.Fatal(err)
	}
	var other *once.NotOwnerError
	if err := c.MarkUnknown(ctx); !errors.As(err, &other) || other.Record.Resolved != "succeeded" {
		t.Fatalf("MarkUnknown of a resolved record: %v; want *NotOwnerError with the resolution", err)
	}
}

// A claim whose reply and re-confirmation both come slower than its TTL
// allows is ErrLate wrapping a slow *lock.LateError (which also matches
// lock.ErrUnavailable), in one message with one prefix.
func TestSlowClaimError(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	ttl := 300 * time.Millisecond
	slow := srv.Client(t)
	slow.AddHook(&slowScripts{d: ttl + 200*time.Millisecond})
	_, err := once.New(slow, &once.Options{Owner: "alice@a:1", TTL: ttl}).Claim(ctx, redistest.UniqueKey(t), nil)
	var late *lock.LateError
	if !errors.Is(err, once.ErrLate) || !errors.As(err, &late) || !late.Slow || !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("claim over a link slower than its TTL: %v; want ErrLate wrapping a slow *lock.LateError", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "once: ") || strings.Contains(msg, "lock: ") {
		t.Errorf("message %q: want one prefix, once's", msg)
	}
}
