package once_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/once"
)

func checkTTL(t *testing.T, key string) {
	t.Helper()
	if pttl := srv.Int(t, "PTTL", key); pttl <= 0 {
		t.Fatalf("PTTL %s = %d; want a TTL", key, pttl)
	}
}

func TestClaimCompleteReplay(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), &once.Options{Owner: "alice@a:1", ResultTTL: time.Hour})
	key := redistest.UniqueKey(t)
	c, err := s.Claim(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if c.Key != "once:"+key || c.Attempt != 1 || c.Owner != "alice@a:1" || c.StartedAt.IsZero() || len(c.Token) != 32 {
		t.Fatalf("claim %+v", c)
	}
	checkTTL(t, c.Key)
	rec, err := s.Get(ctx, key)
	if err != nil || rec.State != once.StateRunning || rec.Owner != "alice@a:1" || rec.TTL <= 0 || rec.TTL > once.DefaultTTL {
		t.Fatalf("Get while running: %+v %v", rec, err)
	}

	other := once.New(srv.Client(t), &once.Options{Owner: "bob@b:2"})
	_, err = other.Claim(ctx, key, nil)
	var ip *once.InProgressError
	if !errors.Is(err, once.ErrInProgress) || !errors.As(err, &ip) || ip.Record.Owner != "alice@a:1" {
		t.Fatalf("second claim while running: %v", err)
	}

	time.Sleep(20 * time.Millisecond)
	done, err := c.Complete(ctx, 0)
	if err != nil {
		t.Fatal(err)
	}
	if done.State != once.StateDone || done.ExitCode != 0 || done.Owner != "alice@a:1" || done.Duration < 10*time.Millisecond ||
		done.FinishedAt.Before(done.StartedAt) || done.TTL <= 59*time.Minute || done.TTL > time.Hour || done.Expired {
		t.Fatalf("completed record %+v", done)
	}
	checkTTL(t, c.Key)

	_, err = other.Claim(ctx, key, nil)
	var de *once.DoneError
	if !errors.Is(err, once.ErrDone) || !errors.As(err, &de) || de.Record.ExitCode != 0 || de.Record.Owner != "alice@a:1" {
		t.Fatalf("claim after completion: %v", err)
	}
	got, err := other.Get(ctx, key)
	if err != nil || got.State != once.StateDone || got.FinishedAt != done.FinishedAt || got.Attempts != 1 {
		t.Fatalf("Get after completion: %+v %v", got, err)
	}
	// The finished claim can neither renew nor complete again.
	if err := c.Renew(ctx); !errors.Is(err, once.ErrNotOwner) {
		t.Fatalf("renew after completion: %v", err)
	}
}

// Ten claimants on ten connections race for one key: exactly one runs.
func TestRacingClaimants(t *testing.T) {
	t.Parallel()
	key := redistest.UniqueKey(t)
	var ran atomic.Int64
	var inProgress, done atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := 0; i < 10; i++ {
		s := once.New(srv.Client(t), nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := s.Do(redistest.Context(t), key, nil, func(context.Context) int {
				ran.Add(1)
				time.Sleep(100 * time.Millisecond)
				return 0
			})
			switch {
			case err == nil:
			case errors.Is(err, once.ErrInProgress):
				inProgress.Add(1)
			case errors.Is(err, once.ErrDone):
				done.Add(1)
			default:
				t.Error(err)
			}
		}()
	}
	close(start)
	wg.Wait()
	if ran.Load() != 1 || inProgress.Load()+done.Load() != 9 {
		t.Fatalf("ran %d times, %d in progress, %d done; want exactly one run", ran.Load(), inProgress.Load(), done.Load())
	}
}

func TestReplayFailureAndRerunFailed(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), nil)
	key := redistest.UniqueKey(t)
	runs := 0
	fn := func(code int) func(context.Context) int {
		return func(context.Context) int { runs++; return code }
	}
	rec, err := s.Do(ctx, key, nil, fn(3))
	if err != nil || rec.ExitCode != 3 || runs != 1 {
		t.Fatalf("first run: %+v %v", rec, err)
	}
	rec, err = s.Do(ctx, key, nil, fn(0))
	if !errors.Is(err, once.ErrDone) || rec.ExitCode != 3 || runs != 1 {
		t.Fatalf("replay of failure: %+v %v runs=%d", rec, err, runs)
	}
	rerun := &once.ClaimOptions{RerunFailed: true}
	rec, err = s.Do(ctx, key, rerun, fn(0))
	if err != nil || rec.ExitCode != 0 || rec.Attempts != 2 || runs != 2 {
		t.Fatalf("rerun of failure: %+v %v runs=%d", rec, err, runs)
	}
	checkTTL(t, s.Key(key))
	rec, err = s.Do(ctx, key, rerun, fn(1))
	if !errors.Is(err, once.ErrDone) || rec.ExitCode != 0 || runs != 2 {
		t.Fatalf("RerunFailed after success: %+v %v runs=%d", rec, err, runs)
	}
}

// A claimant that stops renewing is taken over after its TTL, and can no
// longer renew or record.
func TestTakeoverAfterTTL(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	const ttl = 300 * time.Millisecond
	a := once.New(srv.Client(t), &once.Options{TTL: ttl, Owner: "a"})
	b := once.New(srv.Client(t), &once.Options{TTL: ttl, Owner: "b"})
	key := redistest.UniqueKey(t)
	ca, err := a.Claim(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Claim(ctx, key, nil); !errors.Is(err, once.ErrInProgress) {
		t.Fatalf("claim during a's ttl: %v", err)
	}
	time.Sleep(ttl + 100*time.Millisecond)
	cb, err := b.Claim(ctx, key, nil)
	if err != nil {
		t.Fatalf("claim after a's ttl: %v", err)
	}
	var ne *once.NotOwnerError
	if err := ca.Renew(ctx); !errors.As(err, &ne) || ne.Record.Owner != "b" {
		t.Fatalf("a renews after takeover: %v", err)
	}
	if _, err := ca.Complete(ctx, 0); !errors.Is(err, once.ErrNotOwner) {
		t.Fatalf("a completes after takeover: %v", err)
	}
	if err := ca.Abandon(ctx); !errors.Is(err, once.ErrNotOwner) {
		t.Fatalf("a abandons after takeover: %v", err)
	}
	rec, err := cb.Complete(ctx, 0)
	if err != nil || rec.Owner != "b" {
		t.Fatalf("b completes: %+v %v", rec, err)
	}
}

// KeepAlive holds a claim well past its TTL.
func TestKeepAlive(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	const ttl = 300 * time.Millisecond
	s := once.New(srv.Client(t), &once.Options{TTL: ttl})
	key := redistest.UniqueKey(t)
	c, err := s.Claim(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := c.KeepAlive(ctx, 0)
	time.Sleep(3 * ttl)
	if _, err := s.Claim(ctx, key, nil); !errors.Is(err, once.ErrInProgress) {
		t.Fatalf("claim while kept alive: %v", err)
	}
	select {
	case <-k.Lost():
		t.Fatalf("lost: %v", k.Err())
	default:
	}
	k.Stop()
	if k.Renewals() < 3 {
		t.Fatalf("%d renewals in 3 ttls at ttl/3", k.Renewals())
	}
	if _, err := c.Complete(ctx, 0); err != nil {
		t.Fatal(err)
	}
}

// The keeper reports a claim that vanished, and Do cancels fn's context;
// fn stopped part way has no outcome, and none is recorded.
func TestLossCancelsDo(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), &once.Options{TTL: 300 * time.Millisecond})
	key := redistest.UniqueKey(t)
	rec, err := s.Do(ctx, key, nil, func(ctx context.Context) int {
		if _, err := srv.Do("DEL", s.Key(key)); err != nil {
			t.Error(err)
		}
		select {
		case <-ctx.Done():
			return 143
		case <-time.After(5 * time.Second):
			t.Error("fn's context not cancelled after the claim vanished")
			return 0
		}
	})
	if !errors.Is(err, once.ErrLost) || rec.State != "" {
		t.Fatalf("Do after loss: %+v %v; want ErrLost and no record", rec, err)
	}
	if n := srv.Int(t, "EXISTS", s.Key(key)); n != 0 {
		t.Fatalf("Do recorded the status of a function stopped part way")
	}
}

func TestFingerprint(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), nil)
	key := redistest.UniqueKey(t)
	c, err := s.Claim(ctx, key, &once.ClaimOptions{Fingerprint: "sha256:aaa"})
	if err != nil {
		t.Fatal(err)
	}
	for _, fp := range []string{"sha256:bbb", ""} {
		_, err := s.Claim(ctx, key, &once.ClaimOptions{Fingerprint: fp})
		var fe *once.FingerprintError
		if !errors.Is(err, once.ErrFingerprint) || !errors.As(err, &fe) || fe.Recorded != "sha256:aaa" || fe.Given != fp {
			t.Fatalf("fingerprint %q while running: %v", fp, err)
		}
	}
	if _, err := c.Complete(ctx, 0); err != nil {
		t.Fatal(err)
	}
	_, err = s.Claim(ctx, key, &once.ClaimOptions{Fingerprint: "sha256:bbb", RerunFailed: true})
	if !errors.Is(err, once.ErrFingerprint) {
		t.Fatalf("fingerprint mismatch after completion: %v", err)
	}
	if _, err := s.Claim(ctx, key, &once.ClaimOptions{Fingerprint: "sha256:aaa"}); !errors.Is(err, once.ErrDone) {
		t.Fatalf("same fingerprint after completion: %v", err)
	}
}

func TestAbandon(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), nil)
	key := redistest.UniqueKey(t)
	c, err := s.Claim(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Abandon(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Abandon(ctx); !errors.Is(err, once.ErrLost) {
		t.Fatalf("second abandon: %v", err)
	}
	if err := c.Renew(ctx); !errors.Is(err, once.ErrLost) {
		t.Fatalf("renew after abandon: %v", err)
	}
	if _, err := s.Claim(ctx, key, nil); err != nil {
		t.Fatalf("claim after abandon: %v", err)
	}
}

func TestGetAndBadInput(t *testing.T) {
	t.Parallel()
	ctx := redistest.Context(t)
	s := once.New(srv.Client(t), nil)
	key := redistest.UniqueKey(t)
	if _, err := s.Get(ctx, key); !errors.Is(err, once.ErrNotFound) {
		t.Fatalf("Get of nothing: %v", err)
	}
	if _, err := srv.Do("SET", s.Key(key), "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, key, nil); !errors.Is(err, once.ErrWrongType) {
		t.Fatalf("claim of a string: %v", err)
	}
	if _, err := s.Get(ctx, key); !errors.Is(err, once.ErrWrongType) {
		t.Fatalf("Get of a string: %v", err)
	}
	if _, err := srv.Do("HSET", s.Key(key+"h"), "field", "v"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Claim(ctx, key+"h", nil); !errors.Is(err, once.ErrWrongType) {
		t.Fatalf("claim of a foreign hash: %v", err)
	}
	if _, err := s.Claim(ctx, "", nil); !errors.Is(err, once.ErrInvalid) {
		t.Fatalf("empty key: %v", err)
	}
	short := once.New(srv.Client(t), &once.Options{TTL: time.Microsecond})
	if _, err := short.Claim(ctx, key, nil); !errors.Is(err, once.ErrInvalid) {
		t.Fatalf("ttl under 1ms: %v", err)
	}
	if _, err := once.New(nil, nil).Claim(ctx, key, nil); !errors.Is(err, once.ErrInvalid) {
		t.Fatalf("nil client: %v", err)
	}
	p := once.New(srv.Client(t), &once.Options{Prefix: "idem:"})
	if _, err := p.Claim(ctx, key, nil); err != nil || srv.Int(t, "EXISTS", "idem:"+key) != 1 {
		t.Fatalf("custom prefix: %v", err)
	}
}

// A claim lost while fn runs (its renewals held up past its deadline by a
// server paused for writes) records nothing: fn was told to stop part
// way, and what it returned is no outcome. At most once, the key is
// unknown until resolved; at least once, the next call runs fn again.
func TestDoLostRecordsNothing(t *testing.T) {
	t.Parallel()
	own := redistest.StartTest(t, nil)
	for _, amo := range []bool{true, false} {
		ctx := redistest.Context(t)
		s := once.New(own.Client(t), &once.Options{TTL: 400 * time.Millisecond})
		key := redistest.UniqueKey(t)
		co := &once.ClaimOptions{AtMostOnce: amo}
		_, err := s.Do(ctx, key, co, func(ctx context.Context) int {
			if _, err := own.Do("CLIENT", "PAUSE", "1500", "WRITE"); err != nil {
				t.Error(err)
			}
			<-ctx.Done()
			return 0
		})
		if !errors.Is(err, once.ErrLost) {
			t.Fatalf("at most once %v: Do whose claim was lost while fn ran: %v; want ErrLost", amo, err)
		}
		_, err = s.Claim(ctx, key, co)
		switch {
		case amo && !errors.Is(err, once.ErrUnknown):
			t.Errorf("at most once: claim after the loss: %v; want ErrUnknown (nothing recorded, the outcome unknown)", err)
		case !amo && err != nil:
			t.Errorf("at least once: claim after the loss: %v; want a new claim (nothing recorded)", err)
		}
	}
}
