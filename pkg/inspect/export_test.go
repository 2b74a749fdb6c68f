package inspect

// Names the package's external tests reach that are not part of its
// surface: Redisson's key and channel names, the clock step doctor
// tolerates, the staleness rule and the commands the ACL check asks about.
var (
	RedissonChannel           = redissonChannel
	RedissonQueue             = redissonQueue
	RedissonRWChannel         = redissonRWChannel
	RedissonRWTimeout         = redissonRWTimeout
	RedissonTimeouts          = redissonTimeouts
	RedissonWaiterChannel     = redissonWaiterChannel
	RedissonUnlockMessage     = redissonUnlockMessage
	RedissonReadUnlockMessage = redissonReadUnlockMessage
	EscapeGlob                = escapeGlob
	NotRenewing               = notRenewing
)

const ClockStep = clockStep

// Commands are the commands lockctl sends, as doctor's ACL check asks
// ACL DRYRUN about them.
func (in *Inspector) Commands() [][]string { return in.commands() }
