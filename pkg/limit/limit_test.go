package limit_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/redis/go-redis/v9"
)

func newLimiter(t testing.TB, algo limit.Algorithm, rate string, burst int64) limit.Limiter {
	t.Helper()
	r, err := limit.ParseRate(rate)
	if err != nil {
		t.Fatal(err)
	}
	l, err := limit.New(srv.Client(t), r, &limit.Options{Algorithm: algo, Burst: burst})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// checkTTL fails when the key exists without a TTL. A key may be gone
// (PTTL -2) only when it expired on its own in the meantime.
func checkTTL(t *testing.T, key string, mustExist bool) {
	t.Helper()
	pttl := srv.Int(t, "PTTL", key)
	if pttl == -1 || (mustExist && pttl <= 0) {
		t.Fatalf("PTTL %s = %d", key, pttl)
	}
}

func forEach(t *testing.T, f func(t *testing.T, algo limit.Algorithm)) {
	for _, a := range limit.Algorithms {
		t.Run(string(a), func(t *testing.T) {
			t.Parallel()
			f(t, a)
		})
	}
}

func TestSequentialCounts(t *testing.T) {
	forEach(t, func(t *testing.T, algo limit.Algorithm) {
		l := newLimiter(t, algo, "5/1h", 0)
		key := redistest.UniqueKey(t)
		ctx := redistest.Context(t)
		for i := 0; i < 12; i++ {
			r, err := l.Allow(ctx, key, 1)
			if err != nil {
				t.Fatal(err)
			}
			checkTTL(t, l.Key(key), true)
			if r.Key != "limit:"+key || r.Limit != 5 {
				t.Fatalf("call %d: key %q limit %d", i, r.Key, r.Limit)
			}
			if i < 5 {
				if !r.Allowed || r.Remaining != int64(4-i) || r.RetryAfter != 0 {
					t.Fatalf("call %d: %+v; want allowed with remaining %d", i, r, 4-i)
				}
				if r.ResetAfter <= 0 || r.ResetAfter > 2*time.Hour {
					t.Fatalf("call %d: reset after %s", i, r.ResetAfter)
				}
				continue
			}
			if r.Allowed || r.Remaining != 0 || r.RetryAfter <= 0 || r.RetryAfter > 2*time.Hour || r.ResetAfter < r.RetryAfter {
				t.Fatalf("call %d: %+v; want refused", i, r)
			}
			if !errors.Is(r.Err(), limit.ErrLimited) {
				t.Fatalf("Err() = %v", r.Err())
			}
			var le *limit.LimitedError
			if !errors.As(r.Err(), &le) || le.Result != r {
				t.Fatalf("LimitedError = %+v", le)
			}
			// Retry-after is exact: one emission interval for GCRA and the
			// token bucket, the rest of the hour for the sliding log.
			switch algo {
			case limit.GCRA, limit.TokenBucket:
				if r.RetryAfter > 12*time.Minute || r.RetryAfter < 11*time.Minute {
					t.Fatalf("retry after %s; want just under 12m", r.RetryAfter)
				}
			case limit.SlidingLog:
				if r.RetryAfter > time.Hour || r.RetryAfter < 59*time.Minute {
					t.Fatalf("retry after %s; want just under 1h", r.RetryAfter)
				}
			}
		}
	})
}

func TestCost(t *testing.T) {
	forEach(t, func(t *testing.T, algo limit.Algorithm) {
		l := newLimiter(t, algo, "5/1h", 0)
		key := redistest.UniqueKey(t)
		ctx := redistest.Context(t)
		for _, c := range []int64{0, -1} {
			if _, err := l.Allow(ctx, key, c); !errors.Is(err, limit.ErrInvalid) {
				t.Fatalf("cost %d: %v; want ErrInvalid", c, err)
			}
		}
		_, err := l.Allow(ctx, key, 6)
		var ce *limit.CostError
		if !errors.Is(err, limit.ErrNeverAllowed) || !errors.As(err, &ce) || ce.Cost != 6 || ce.Burst != 5 {
			t.Fatalf("cost 6: %v; want CostError{6, 5}", err)
		}
		if n := srv.Int(t, "EXISTS", l.Key(key)); n != 0 {
			t.Fatalf("refused argument created the key")
		}
		steps := []struct {
			cost      int64
			allowed   bool
			remaining int64
		}{{3, true, 2}, {3, false, 2}, {2, true, 0}, {1, false, 0}}
		for i, s := range steps {
			r, err := l.Allow(ctx, key, s.cost)
			if err != nil {
				t.Fatal(err)
			}
			checkTTL(t, l.Key(key), true)
			if r.Allowed != s.allowed || r.Remaining != s.remaining {
				t.Fatalf("step %d cost %d: %+v; want allowed=%v remaining=%d", i, s.cost, r, s.allowed, s.remaining)
			}
		}
		if _, err := l.Allow(ctx, "", 1); !errors.Is(err, limit.ErrInvalid) {
			t.Fatalf("empty key: %v", err)
		}
	})
}

func TestBurst(t *testing.T) {
	for _, algo := range []limit.Algorithm{limit.GCRA, limit.TokenBucket} {
		t.Run(string(algo), func(t *testing.T) {
			l := newLimiter(t, algo, "10/1h", 3)
			key := redistest.UniqueKey(t)
			for i := 0; i < 5; i++ {
				r, err := l.Allow(redistest.Context(t), key, 1)
				if err != nil {
					t.Fatal(err)
				}
				if r.Allowed != (i < 3) || r.Limit != 3 {
					t.Fatalf("call %d: %+v; want burst of 3", i, r)
				}
			}
			if _, err := l.Allow(redistest.Context(t), key, 4); !errors.Is(err, limit.ErrNeverAllowed) {
				t.Fatalf("cost 4 over burst 3: %v", err)
			}
		})
	}
}

func TestBadOptions(t *testing.T) {
	c := srv.Client(t)
	r := limit.Rate{Limit: 10, Period: time.Second}
	cases := map[string]struct {
		client bool
		rate   limit.Rate
		opts   *limit.Options
	}{
		"nil client":              {false, r, nil},
		"zero rate":               {true, limit.Rate{}, nil},
		"sub-microsecond period":  {true, limit.Rate{Limit: 1, Period: 1500}, nil},
		"negative burst":          {true, r, &limit.Options{Burst: -1}},
		"burst on sliding log":    {true, r, &limit.Options{Algorithm: limit.SlidingLog, Burst: 20}},
		"burst on sliding window": {true, r, &limit.Options{Algorithm: limit.SlidingWindow, Burst: 5}},
		"unknown algorithm":       {true, r, &limit.Options{Algorithm: "leaky-bucket"}},
		"too fine for gcra":       {true, limit.Rate{Limit: 999999937, Period: 24 * time.Hour}, nil},
		"too fine for bucket":     {true, limit.Rate{Limit: 999999937, Period: 24 * time.Hour}, &limit.Options{Algorithm: limit.TokenBucket}},
	}
	for name, tc := range cases {
		var cl redis.Scripter = c
		if !tc.client {
			cl = nil
		}
		if l, err := limit.New(cl, tc.rate, tc.opts); !errors.Is(err, limit.ErrInvalid) {
			t.Errorf("%s: New = %v, %v; want ErrInvalid", name, l, err)
		}
	}
	// Large but representable rates are accepted: the period reduces against N.
	for _, a := range limit.Algorithms {
		if _, err := limit.New(c, limit.Rate{Limit: 1000000, Period: 24 * time.Hour}, &limit.Options{Algorithm: a}); err != nil {
			t.Errorf("%s 1000000/24h: %v", a, err)
		}
	}
}

func TestWrongType(t *testing.T) {
	forEach(t, func(t *testing.T, algo limit.Algorithm) {
		l := newLimiter(t, algo, "5/1h", 0)
		key := redistest.UniqueKey(t)
		if _, err := srv.Do("RPUSH", l.Key(key), "x"); err != nil {
			t.Fatal(err)
		}
		if _, err := l.Allow(redistest.Context(t), key, 1); !errors.Is(err, limit.ErrWrongType) {
			t.Fatalf("list key: %v; want ErrWrongType", err)
		}
	})
	// One algorithm never misreads another's state: it names the
	// configuration the state was written under.
	for _, a := range limit.Algorithms {
		for _, b := range limit.Algorithms {
			if a == b {
				continue
			}
			key := redistest.UniqueKey(t)
			if _, err := newLimiter(t, a, "5/1h", 0).Allow(redistest.Context(t), key, 1); err != nil {
				t.Fatal(err)
			}
			_, err := newLimiter(t, b, "5/1h", 0).Allow(redistest.Context(t), key, 1)
			var ce *limit.ConfigError
			if !errors.As(err, &ce) || ce.Stored.Algorithm != a || ce.Want.Algorithm != b {
				t.Errorf("%s state read by %s: %v; want a ConfigError naming %s", a, b, err, a)
			}
		}
	}
}

func TestPrefix(t *testing.T) {
	r := limit.Rate{Limit: 1, Period: time.Hour}
	l, err := limit.New(srv.Client(t), r, &limit.Options{Prefix: "rl:"})
	if err != nil {
		t.Fatal(err)
	}
	key := redistest.UniqueKey(t)
	if _, err := l.Allow(redistest.Context(t), key, 1); err != nil {
		t.Fatal(err)
	}
	if l.Key(key) != "rl:"+key || srv.Int(t, "EXISTS", "rl:"+key) != 1 || srv.Int(t, "EXISTS", "limit:"+key) != 0 {
		t.Fatal("custom prefix not used")
	}
}

// Eight clients on eight connections hammer one key; the admissions they
// count themselves must equal the limit exactly.
func TestConcurrentNoOverAdmission(t *testing.T) {
	forEach(t, func(t *testing.T, algo limit.Algorithm) {
		const limitN, clients, calls = 50, 8, 40
		key := redistest.UniqueKey(t)
		var admitted atomic.Int64
		var wg sync.WaitGroup
		start := make(chan struct{})
		errs := make(chan error, clients)
		for c := 0; c < clients; c++ {
			l := newLimiter(t, algo, "50/1h", 0)
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				for i := 0; i < calls; i++ {
					r, err := l.Allow(redistest.Context(t), key, 1)
					if err != nil {
						errs <- err
						return
					}
					if r.Allowed {
						admitted.Add(1)
					}
				}
			}()
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if got := admitted.Load(); got != limitN {
			t.Fatalf("admitted %d of %d calls; want exactly %d", got, clients*calls, limitN)
		}
		checkTTL(t, "limit:"+key, true)
	})
}

// After a key is exhausted, admissions resume on time.
func TestWindowsSlide(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, algo limit.Algorithm) {
		const period = 500 * time.Millisecond
		l := newLimiter(t, algo, "5/500ms", 0)
		key := redistest.UniqueKey(t)
		ctx := redistest.Context(t)
		burst := func() (int, limit.Result) {
			n := 0
			var last limit.Result
			for i := 0; i < 6; i++ {
				r, err := l.Allow(ctx, key, 1)
				if err != nil {
					t.Fatal(err)
				}
				checkTTL(t, l.Key(key), false)
				if r.Allowed {
					n++
				}
				last = r
			}
			return n, last
		}
		n, last := burst()
		// Six quick calls at 5/500ms: five at most, and at least four even
		// if the machine stalls for a whole emission interval.
		if n > 5 || n < 4 {
			t.Fatalf("%d admitted of 6 quick calls", n)
		}
		if last.Allowed {
			t.Fatalf("sixth call admitted")
		}
		if last.ResetAfter > 2*period+time.Millisecond {
			t.Fatalf("reset after %s, beyond two windows", last.ResetAfter)
		}
		// Once reset_after has passed, the key is idle: a full burst again.
		time.Sleep(last.ResetAfter)
		r, err := l.Allow(ctx, key, 5)
		if err != nil {
			t.Fatal(err)
		}
		if !r.Allowed {
			t.Fatalf("cost 5 refused %s after the refusal: %+v", last.ResetAfter, r)
		}
		// At most one more, if the machine stalled for an emission interval.
		if n, _ := burst(); n > 1 {
			t.Fatalf("%d admitted right after a full burst", n)
		}
		// Left alone, the key expires by itself.
		time.Sleep(2*period + 100*time.Millisecond)
		if n := srv.Int(t, "EXISTS", l.Key(key)); n != 0 {
			t.Fatalf("idle key still exists after two windows")
		}
	})
}

// A call made retry_after after a refusal is admitted.
func TestRetryAfterNeverEarly(t *testing.T) {
	t.Parallel()
	forEach(t, func(t *testing.T, algo limit.Algorithm) {
		l := newLimiter(t, algo, "3/500ms", 0)
		key := redistest.UniqueKey(t)
		ctx := redistest.Context(t)
		refusals := 0
		for i := 0; i < 30 && refusals < 6; i++ {
			cost := int64(1 + i%2)
			r, err := l.Allow(ctx, key, cost)
			if err != nil {
				t.Fatal(err)
			}
			if r.Allowed {
				continue
			}
			refusals++
			if r.RetryAfter <= 0 || r.RetryAfter > time.Second {
				t.Fatalf("retry after %s", r.RetryAfter)
			}
			time.Sleep(r.RetryAfter)
			r2, err := l.Allow(ctx, key, cost)
			if err != nil {
				t.Fatal(err)
			}
			if !r2.Allowed {
				t.Fatalf("refusal %d: cost %d refused again after waiting retry_after %s: %+v", refusals, cost, r.RetryAfter, r2)
			}
			checkTTL(t, l.Key(key), false)
		}
		if refusals < 6 {
			t.Fatalf("only %d refusals: the key was never exhausted", refusals)
		}
	})
}

func TestWait(t *testing.T) {
	t.Parallel()
	l := newLimiter(t, limit.GCRA, "2/200ms", 0)
	key := redistest.UniqueKey(t)
	ctx := redistest.Context(t)
	for i := 0; i < 5; i++ {
		r, err := limit.Wait(ctx, l, key, 1)
		if err != nil || !r.Allowed {
			t.Fatalf("wait %d: %+v %v", i, r, err)
		}
	}
	// Another rate is another key's: a key keeps the one it was written under.
	slow := newLimiter(t, limit.GCRA, "1/1h", 0)
	key = redistest.UniqueKey(t)
	if _, err := limit.Wait(ctx, slow, key, 1); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	r, err := limit.Wait(short, slow, key, 1)
	if !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, limit.ErrLimited) || r.Allowed {
		t.Fatalf("wait past deadline: %+v %v", r, err)
	}
	if _, err := limit.Wait(ctx, slow, key, 2); !errors.Is(err, limit.ErrNeverAllowed) {
		t.Fatalf("wait for cost over burst: %v", err)
	}
}

func TestFarFutureStateIsForeignData(t *testing.T) {
	// A GCRA state whose arrival time lies centuries ahead: no call of this
	// rate ever writes it, and a Wait on it would sleep for ever.
	l := newLimiter(t, limit.GCRA, "5/1s", 0)
	key := redistest.UniqueKey(t)
	if _, err := srv.Do("SET", l.Key(key), "99999999999999999:0"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(redistest.Context(t), 10*time.Second)
	defer cancel()
	start := time.Now()
	_, err := limit.Wait(ctx, l, key, 1)
	if !errors.Is(err, limit.ErrWrongType) {
		t.Fatalf("Wait on a far-future state: %v after %s; want ErrWrongType at once", err, time.Since(start))
	}
	// The honest longest wait passes: a full burst of a slow rate.
	slow := newLimiter(t, limit.SlidingWindow, "3/2s", 0)
	k2 := redistest.UniqueKey(t)
	for i := 0; i < 3; i++ {
		if _, err := slow.Allow(redistest.Context(t), k2, 1); err != nil {
			t.Fatal(err)
		}
	}
	r, err := slow.Allow(redistest.Context(t), k2, 1)
	if err != nil || r.Allowed || r.RetryAfter <= 0 {
		t.Fatalf("fourth call of 3/2s: %+v, %v; want a refusal with a retry", r, err)
	}
}

// The sliding log trims its stale entries and sets its TTL once per
// window-long stretch of time, not at every call: across several stretches
// the key must still outlive every admitted entry's window (PTTL never
// below ResetAfter), keep at most two windows' worth of entries, and expire
// by itself within two windows of its last write.
func TestSlidingLogTTLAndTrimAcrossStretches(t *testing.T) {
	t.Parallel()
	const limitN, window = 20, 200 * time.Millisecond
	l := newLimiter(t, limit.SlidingLog, "20/200ms", 0)
	key := redistest.UniqueKey(t)
	k := l.Key(key)
	ctx := redistest.Context(t)
	admitted := 0
	for start := time.Now(); time.Since(start) < 5*window; time.Sleep(3 * time.Millisecond) {
		sent := time.Now()
		r, err := l.Allow(ctx, key, 1+int64(admitted%2))
		if err != nil {
			t.Fatal(err)
		}
		if !r.Allowed {
			continue
		}
		admitted++
		// PTTL is read after the decision: it may have run down since by
		// as long as that took (and a millisecond of rounding), no more.
		pttl := time.Duration(srv.Int(t, "PTTL", k)) * time.Millisecond
		if pttl < r.ResetAfter-time.Since(sent)-time.Millisecond || pttl > 2*window {
			t.Fatalf("call %d: PTTL %s, reset after %s: the TTL must cover every entry's window and stay within two windows", admitted, pttl, r.ResetAfter)
		}
		// Entries and the configuration: at most two windows' worth.
		if n := srv.Int(t, "ZCARD", k); n > 2*limitN+1 {
			t.Fatalf("call %d: %d members kept; stale entries are not trimmed", admitted, n)
		}
	}
	if admitted < limitN {
		t.Fatalf("only %d calls admitted over five windows", admitted)
	}
	time.Sleep(2*window + 100*time.Millisecond)
	if n := srv.Int(t, "EXISTS", k); n != 0 {
		t.Fatal("idle sliding log still exists two windows after its last write")
	}
}
