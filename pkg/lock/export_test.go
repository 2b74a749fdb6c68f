package lock

import (
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

// Names the tests reach that are internal: the value's and Redisson's
// parsers as Holders, and the key scheme.
var (
	ParseValue       = parseValue
	ParseRedissonAny = parseRedissonAny
	AuxKey           = lockwire.AuxKey
	Channel          = lockwire.Channel
	IsRedissonAux    = lockwire.IsRedissonAux
)

const (
	KindFence     = lockwire.KindFence
	KindQueue     = lockwire.KindQueue
	KindQueueHB   = lockwire.KindQueueHB
	KindSem       = lockwire.KindSem
	KindSemVal    = lockwire.KindSemVal
	KindChannel   = lockwire.KindChannel
	KindWake      = lockwire.KindWake
	KindChecked   = lockwire.KindChecked
	KindWriters   = lockwire.KindWriters
	KindWaiting   = lockwire.KindWaiting
	RedissonRead  = lockwire.RedissonRead
	RedissonWrite = lockwire.RedissonWrite
)

// ParseRedisson describes the holder of a Redisson lock hash; false when
// fields are not one.
func ParseRedisson(key string, fields map[string]string, ttl time.Duration) (Holder, bool) {
	r, ok := lockwire.ParseRedisson(fields)
	if !ok {
		return Holder{}, false
	}
	return redissonHolder(key, r, ttl), true
}

// ParseRedissonRW describes every holder of a Redisson read-write lock hash.
func ParseRedissonRW(key string, fields map[string]string, ttl time.Duration) ([]Holder, bool) {
	rs, ok := lockwire.ParseRedissonRW(fields)
	if !ok {
		return nil, false
	}
	hs := make([]Holder, len(rs))
	for i, r := range rs {
		hs[i] = redissonHolder(key, r, ttl)
	}
	return hs, true
}
