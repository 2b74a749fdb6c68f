package inspect

import (
	"context"

	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/redis/go-redis/v9"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/lock"
)

// The stored values and Redisson hashes a scan reads (internal/lib/lockwire
// parses them), as lock.Holders.

// parseValue describes the holder whose stored value at key is value; ttl
// is the key's remaining time (-1 for none).
func parseValue(key, value string, ttl time.Duration) lock.Holder {
	v := lockwire.ParseValue(value)
	return lock.Holder{Key: key, TTL: ttl, Format: lock.Format(v.Format), Token: v.Token, Fence: v.Fence, Owner: v.Owner,
		Note: v.Note, JobURL: v.CI, Limit: v.Limit, LeaseTTL: v.LeaseTTL, Shared: v.Shared, Reentry: v.Holds, AcquiredAt: v.AcquiredAt,
		RenewedAt: v.RenewedAt, RenewEvery: v.RenewEvery, PIDStart: v.PIDStart}
}

func redissonHolder(key string, r lockwire.Redisson, ttl time.Duration) lock.Holder {
	return lock.Holder{Key: key, TTL: ttl, Format: lock.FormatRedisson, Token: r.Field, Owner: r.Owner, RWMode: r.Mode,
		Reentry: r.Count, Holders: r.Holders}
}

// parseRedisson describes the holder of a Redisson lock hash; false when
// fields are not one.
func parseRedisson(key string, fields map[string]string, ttl time.Duration) (lock.Holder, bool) {
	r, ok := lockwire.ParseRedisson(fields)
	if !ok {
		return lock.Holder{}, false
	}
	return redissonHolder(key, r, ttl), true
}

// parseRedissonAny is parseRedisson for a plain or a read-write lock hash.
func parseRedissonAny(key string, fields map[string]string, ttl time.Duration) (lock.Holder, bool) {
	r, ok := lockwire.ParseRedissonAny(fields)
	if !ok {
		return lock.Holder{}, false
	}
	return redissonHolder(key, r, ttl), true
}

// parseRedissonRW describes every holder of a Redisson read-write lock
// hash; false when fields are not one.
func parseRedissonRW(key string, fields map[string]string, ttl time.Duration) ([]lock.Holder, bool) {
	rs, ok := lockwire.ParseRedissonRW(fields)
	if !ok {
		return nil, false
	}
	hs := make([]lock.Holder, len(rs))
	for i, r := range rs {
		hs[i] = redissonHolder(key, r, ttl)
	}
	return hs, true
}

// dataError turns a data reply (WRONGTYPE, a counter that is no integer)
// to a call on a lock's keys into a *lock.DataError naming the key at
// fault; other errors pass through unchanged.
func dataError(ctx context.Context, c redis.Cmdable, err error, keys ...string) error {
	if !redisreply.IsData(err) {
		return err
	}
	m := lockwire.FindMisfit(ctx, c, keys...)
	return &lock.DataError{Keys: keys, Key: m.Key, Type: m.Type, Value: m.Value, Want: m.Want, Err: err}
}
