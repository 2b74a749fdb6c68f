package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/bsm/redislock"
	"github.com/go-redis/redis_rate/v10"
	"github.com/go-redsync/redsync/v4"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/testkit/benchcmp"
	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// ttl of every lock taken by the acquire+release workloads: long enough that
// no lock ever expires during a run, the same for every contender.
const ttl = 30 * time.Second

// maxWorkers bounds the goroutines of one workload (keys are made up front
// so that no contender pays for formatting them inside the measured op).
const maxWorkers = 64

// A contender builds one operation on a client. Each contender gets its own
// key space so that none sees another's keys.
type contender struct {
	name string
	make func(c *redis.Client) benchcmp.Op
}

// workerKeys are one key per worker under prefix.
func workerKeys(prefix string) []string {
	k := make([]string, maxWorkers)
	for i := range k {
		k[i] = prefix + strconv.Itoa(i)
	}
	return k
}

// lockContenders are acquire+release on the worker's own key: lockctl's
// pkg/lock (fence, server timestamp, compare-and-delete, wake-up message),
// redislock (SET NX in a script, compare-and-delete script), redsync (one
// pool: SET NX, compare-and-delete script) and the unsafe floor (SET NX PX,
// plain DEL) through the same go-redis client.
func lockContenders() []contender {
	return []contender{
		{"lockctl", func(c *redis.Client) benchcmp.Op {
			l := lock.New(c, nil)
			names := workerKeys("peers.lockctl.")
			return func(w int) error {
				lease, err := l.Acquire(context.Background(), names[w], ttl, nil)
				if err != nil {
					return err
				}
				return lease.Release(context.Background())
			}
		}},
		{"redislock", func(c *redis.Client) benchcmp.Op {
			rl := redislock.New(c)
			keys := workerKeys("peers:redislock:")
			return func(w int) error {
				lk, err := rl.Obtain(context.Background(), keys[w], ttl, nil)
				if err != nil {
					return err
				}
				return lk.Release(context.Background())
			}
		}},
		{"redsync", func(c *redis.Client) benchcmp.Op {
			rs := redsync.New(goredis.NewPool(c))
			keys := workerKeys("peers:redsync:")
			return func(w int) error {
				// A mutex per op, as its README uses it.
				m := rs.NewMutex(keys[w], redsync.WithExpiry(ttl), redsync.WithTries(1))
				if err := m.LockContext(context.Background()); err != nil {
					return err
				}
				if ok, err := m.UnlockContext(context.Background()); !ok {
					return fmt.Errorf("redsync unlock: %v", err)
				}
				return nil
			}
		}},
		{"floor", func(c *redis.Client) benchcmp.Op {
			keys := workerKeys("peers:floor:")
			return func(w int) error {
				tok := identity.Token()
				ok, err := c.SetNX(context.Background(), keys[w], tok, ttl).Result()
				if err != nil || !ok {
					return fmt.Errorf("SET NX: %v %v", ok, err)
				}
				return c.Del(context.Background(), keys[w]).Err()
			}
		}},
	}
}

// rateKeys gives each call the one hot key or the next of distinct keys,
// made up front for the same reason as workerKeys.
func rateKeys(hot bool) func() string {
	if hot {
		return func() string { return "hot" }
	}
	keys := make([]string, 100000)
	for i := range keys {
		keys[i] = "k" + strconv.Itoa(i)
	}
	var n atomic.Int64
	return func() string { return keys[n.Add(1)%int64(len(keys))] }
}

// rate admits nearly every call, so each decision writes: the same for every
// contender.
const rateN = 1000000

var trivial = redis.NewScript("return 1")

// limitContenders are one decision (cost 1) per op: every pkg/limit
// algorithm, go-redis/redis_rate (GCRA in one script) and the floor of one
// EVALSHA of an empty script.
func limitContenders(hot bool) []contender {
	var cs []contender
	for _, algo := range limit.Algorithms {
		cs = append(cs, contender{string(algo), func(c *redis.Client) benchcmp.Op {
			l, err := limit.New(c, limit.Rate{Limit: rateN, Period: time.Second},
				&limit.Options{Algorithm: algo, Prefix: "peers:limit:" + string(algo) + ":"})
			if err != nil {
				panic(err)
			}
			key := rateKeys(hot)
			return func(int) error {
				_, err := l.Allow(context.Background(), key(), 1)
				return err
			}
		}})
	}
	cs = append(cs, contender{"redis_rate", func(c *redis.Client) benchcmp.Op {
		l := redis_rate.NewLimiter(c)
		lim := redis_rate.Limit{Rate: rateN, Burst: rateN, Period: time.Second}
		key := rateKeys(hot) // redis_rate puts "rate:" before them
		return func(int) error {
			r, err := l.Allow(context.Background(), key(), lim)
			if err == nil && r.Allowed == 0 {
				err = errors.New("redis_rate refused a call under its rate")
			}
			return err
		}
	}})
	cs = append(cs, contender{"floor", func(c *redis.Client) benchcmp.Op {
		key := rateKeys(hot)
		return func(int) error {
			return trivial.Run(context.Background(), c, []string{key()}).Err()
		}
	}})
	return cs
}
