package inspect

import (
	"time"

	"github.com/lockctl/lockctl/internal/lockwire"
	"github.com/lockctl/lockctl/pkg/lock"
)

// The stored values and Redisson hashes a scan reads, as lock.Holders
// (internal/lockwire parses them).

func parseValue(key, value string, ttl time.Duration) lock.Holder {
	v := lockwire.ParseValue(value)
	return lock.Holder{Key: key, TTL: ttl, Format: lock.Format(v.Format), Token: v.Token, Fence: v.Fence, Owner: v.Owner,
		Note: v.Note, CI: v.CI, Limit: v.Limit, LeaseTTL: v.LeaseTTL, Shared: v.Shared, Reentry: v.Holds, AcquiredAt: v.AcquiredAt}
}

func redissonHolder(key string, r lockwire.Redisson, ttl time.Duration) lock.Holder {
	return lock.Holder{Key: key, TTL: ttl, Format: lock.FormatRedisson, Token: r.Field, Owner: r.Owner, RWMode: r.Mode,
		Reentry: r.Count, Holders: r.Holders}
}

func parseRedisson(key string, fields map[string]string, ttl time.Duration) (lock.Holder, bool) {
	r, ok := lockwire.ParseRedisson(fields)
	if !ok {
		return lock.Holder{}, false
	}
	return redissonHolder(key, r, ttl), true
}

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

func parseRedissonAny(key string, fields map[string]string, ttl time.Duration) (lock.Holder, bool) {
	r, ok := lockwire.ParseRedissonAny(fields)
	if !ok {
		return lock.Holder{}, false
	}
	return redissonHolder(key, r, ttl), true
}
