package inspect

import "strings"

// RedissonChannel is the pub/sub channel on which Redisson's waiters for the
// lock at key listen, named as Redisson (3.x) names it:
// RedissonLock.getChannelName is prefixName("redisson_lock__channel", name),
// which puts the name in braces (so the channel hashes to the key's Cluster
// slot) unless the name already holds a '{', whose own hash tag then does.
// A release that publishes anywhere else wakes nobody: a Redisson lock()
// that saw no TTL sleeps until a message arrives.
func RedissonChannel(key string) string {
	if strings.Contains(key, "{") {
		return "redisson_lock__channel:" + key
	}
	return "redisson_lock__channel:{" + key + "}"
}

// RedissonUnlockMessage is what Redisson's unlock publishes on that channel
// (LockPubSub.UNLOCK_MESSAGE): each waiting process wakes one waiter, which
// tries again.
const RedissonUnlockMessage = "0"
