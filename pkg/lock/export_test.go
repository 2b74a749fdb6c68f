package lock

import "github.com/lockctl/lockctl/internal/lockwire"

// Names the tests reach that are internal: the value's and Redisson's
// parsers as Holders, and the key scheme.
var (
	ParseValue       = parseValue
	ParseRedisson    = parseRedisson
	ParseRedissonRW  = parseRedissonRW
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
