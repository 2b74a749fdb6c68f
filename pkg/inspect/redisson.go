package inspect

import "strings"

// RedissonChannel is the pub/sub channel on which Redisson's waiters for the
// lock at key listen, named as Redisson (3.x) names it:
// RedissonLock.getChannelName is prefixName("redisson_lock__channel", name),
// which puts the name in braces (so the channel hashes to the key's Cluster
// slot) unless the name already holds a '{', whose own hash tag then does.
// A release that publishes anywhere else wakes nobody: a Redisson lock()
// that saw no TTL sleeps until a message arrives.
func RedissonChannel(key string) string { return redissonPrefixed("redisson_lock__channel", key) }

// redissonPrefixed is Redisson's prefixName(prefix, key).
func redissonPrefixed(prefix, key string) string {
	if strings.Contains(key, "{") {
		return prefix + ":" + key
	}
	return prefix + ":{" + key + "}"
}

// RedissonRWChannel is the channel on which the waiters for Redisson's
// read-write lock at key listen (RedissonReadLock.getChannelName,
// prefixName("redisson_rwlock", name)).
func RedissonRWChannel(key string) string { return redissonPrefixed("redisson_rwlock", key) }

// RedissonQueue and RedissonTimeouts are the keys of a Redisson fair lock's
// (RFairLock) waiters: a list of their thread names ("<uuid>:<threadId>")
// in arrival order, and a sorted set of the same names scored by the time
// (client ms) each gives up its place. Both are in key's Cluster slot.
func RedissonQueue(key string) string { return redissonPrefixed("redisson_lock_queue", key) }

// RedissonTimeouts is the key of the sorted set of a Redisson fair lock's
// waiters scored by when each gives up its place (see RedissonQueue).
func RedissonTimeouts(key string) string { return redissonPrefixed("redisson_lock_timeout", key) }

// RedissonWaiterChannel is the channel on which the fair-lock waiter named
// waiter (a thread name of RedissonQueue) listens: Redisson's fair lock
// wakes its waiters one by one, the head of the queue on its own channel.
func RedissonWaiterChannel(key, waiter string) string { return RedissonChannel(key) + ":" + waiter }

// RedissonUnlockMessage is what Redisson's unlock publishes on that channel
// (LockPubSub.UNLOCK_MESSAGE): each waiting process wakes one waiter, which
// tries again.
const RedissonUnlockMessage = "0"
