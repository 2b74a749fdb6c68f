package limit_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/limit"
)

// A key keeps the configuration it was written under: a call with another
// rate, algorithm or burst is refused, naming the stored one, and changes
// nothing, until Reset replaces it on purpose.
func TestConfigKept(t *testing.T) {
	forEach(t, func(t *testing.T, algo limit.Algorithm) {
		ctx := redistest.Context(t)
		key := redistest.UniqueKey(t)
		first := newLimiter(t, algo, "10/1s", 0)
		if r, err := first.Allow(ctx, key, 1); err != nil || !r.Allowed {
			t.Fatalf("first call: %+v %v", r, err)
		}
		c := srv.Client(t)
		before := c.Dump(ctx, first.Key(key)).Val()
		others := []limit.Limiter{
			newLimiter(t, algo, "20/1s", 0),
			newLimiter(t, algo, "10/2s", 0),
			newLimiter(t, algo, "20/2s", 0),
		}
		if algo == limit.GCRA || algo == limit.TokenBucket {
			others = append(others, newLimiter(t, algo, "10/1s", 3))
		}
		for _, o := range others {
			_, err := o.Allow(ctx, key, 1)
			var ce *limit.ConfigError
			if !errors.As(err, &ce) || !errors.Is(err, limit.ErrInvalid) {
				t.Fatalf("%s on a key of %s: %v; want a ConfigError", o.Config(), first.Config(), err)
			}
			if ce.Stored != first.Config() || ce.Want != o.Config() || !strings.Contains(err.Error(), first.Config().String()) {
				t.Fatalf("ConfigError %+v (%v)", ce, err)
			}
			if after := c.Dump(ctx, first.Key(key)).Val(); after != before {
				t.Fatalf("a refused configuration changed the state")
			}
		}
		// The same configuration is fine, however it was spelled.
		if _, err := newLimiter(t, algo, "10/1000ms", 0).Allow(ctx, key, 1); err != nil {
			t.Fatalf("same rate: %v", err)
		}
		// Reset: the new configuration from now on, the old one refused.
		faster := others[0]
		if r, err := faster.Reset(ctx, key, 1); err != nil || !r.Allowed || r.Limit != 20 {
			t.Fatalf("reset: %+v %v", r, err)
		}
		checkTTL(t, first.Key(key), true)
		if _, err := faster.Allow(ctx, key, 1); err != nil {
			t.Fatalf("after reset: %v", err)
		}
		var ce *limit.ConfigError
		if _, err := first.Allow(ctx, key, 1); !errors.As(err, &ce) || ce.Stored != faster.Config() {
			t.Fatalf("old configuration after reset: %v", err)
		}
	})
}

// State written before configurations were stored (no configuration in
// it) is read as before and takes the configuration of its next write.
func TestConfigAdoptedByOldState(t *testing.T) {
	forEach(t, func(t *testing.T, algo limit.Algorithm) {
		ctx := redistest.Context(t)
		key := redistest.UniqueKey(t)
		l := newLimiter(t, algo, "5/1h", 0)
		k := l.Key(key)
		c := srv.Client(t)
		tm, err := c.Time(ctx).Result()
		if err != nil {
			t.Fatal(err)
		}
		us := tm.UnixMicro()
		// Two calls' worth of state, in the old format of each algorithm.
		switch algo {
		case limit.GCRA:
			// The TAT two emission intervals (12 min each) ahead.
			err = c.Set(ctx, k, strconv.FormatInt(us+2*720000000, 10)+":0", time.Hour).Err()
		case limit.SlidingLog:
			err = c.ZAdd(ctx, k, redis.Z{Score: float64(us - 2), Member: strconv.FormatInt(us-2, 10)},
				redis.Z{Score: float64(us - 1), Member: strconv.FormatInt(us-1, 10)}).Err()
		case limit.SlidingWindow:
			err = c.Set(ctx, k, strconv.FormatInt(us/3600000000, 10)+":2:0", 2*time.Hour).Err()
		case limit.TokenBucket:
			// 3 of 5 tokens, in units of 1/p token (p = 3600000000/5 µs).
			err = c.HSet(ctx, k, "tk", 3*720000000, "ts", us).Err()
		}
		if err == nil {
			err = c.Expire(ctx, k, time.Hour).Err()
		}
		if err != nil {
			t.Fatal(err)
		}
		r, err := l.Allow(ctx, key, 1)
		if err != nil || !r.Allowed || r.Remaining != 2 {
			t.Fatalf("old state: %+v %v; want allowed with 2 left", r, err)
		}
		// Adopted: another rate is refused now.
		if _, err := newLimiter(t, algo, "6/1h", 0).Allow(ctx, key, 1); !errors.As(err, new(*limit.ConfigError)) {
			t.Fatalf("another rate after the adopting write: %v", err)
		}
	})
}
