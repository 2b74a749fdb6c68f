package inspect

import (
	"strconv"
	"strings"
)

// redissonChannel is the pub/sub channel on which Redisson's waiters for the
// lock at key listen, named as Redisson (3.x) names it:
// RedissonLock.getChannelName is prefixName("redisson_lock__channel", name),
// which puts the name in braces (so the channel hashes to the key's Cluster
// slot) unless the name already holds a '{', whose own hash tag then does.
// A release that publishes anywhere else wakes nobody: a Redisson lock()
// that saw no TTL sleeps until a message arrives.
func redissonChannel(key string) string { return redissonPrefixed("redisson_lock__channel", key) }

// redissonPrefixed is Redisson's prefixName(prefix, key).
func redissonPrefixed(prefix, key string) string {
	if strings.Contains(key, "{") {
		return prefix + ":" + key
	}
	return prefix + ":{" + key + "}"
}

// redissonRWChannel is the channel on which the waiters for Redisson's
// read-write lock at key listen (RedissonReadLock.getChannelName,
// prefixName("redisson_rwlock", name)).
func redissonRWChannel(key string) string { return redissonPrefixed("redisson_rwlock", key) }

// redissonRWTimeout is the key of the n-th re-entry of a read hold of
// Redisson's read-write lock at key, held by thread ("<uuid>:<threadId>"):
// RedissonReadLock's getReadWriteTimeoutNamePrefix, suffixName(name,
// thread) + ":rwlock_timeout", then ":<n>". Each carries that re-entry's
// lease; the hash lives as long as the longest of them.
func redissonRWTimeout(key, thread string, n int64) string {
	return redissonSuffixBase(key) + ":" + thread + ":rwlock_timeout:" + strconv.FormatInt(n, 10)
}

// redissonSuffixBase is what Redisson's suffixName(key, suffix) puts
// before ":"+suffix: key in braces (so that the name hashes to key's
// Cluster slot) unless it already holds a '{'.
func redissonSuffixBase(key string) string {
	if strings.Contains(key, "{") {
		return key
	}
	return "{" + key + "}"
}

// redissonQueue and redissonTimeouts are the keys of a Redisson fair lock's
// (RFairLock) waiters: a list of their thread names ("<uuid>:<threadId>")
// in arrival order, and a sorted set of the same names scored by the time
// (client ms) each gives up its place. Both are in key's Cluster slot.
func redissonQueue(key string) string { return redissonPrefixed("redisson_lock_queue", key) }

// redissonTimeouts is the key of the sorted set of a Redisson fair lock's
// waiters scored by when each gives up its place (see redissonQueue).
func redissonTimeouts(key string) string { return redissonPrefixed("redisson_lock_timeout", key) }

// redissonWaiterChannel is the channel on which the fair-lock waiter named
// waiter (a thread name of redissonQueue) listens: Redisson's fair lock
// wakes its waiters one by one, the head of the queue on its own channel.
func redissonWaiterChannel(key, waiter string) string { return redissonChannel(key) + ":" + waiter }

// redissonUnlockMessage is what Redisson's unlock publishes on that channel
// (LockPubSub.UNLOCK_MESSAGE): each waiting process wakes one waiter, which
// tries again. The unlock of a read-write lock's last read hold publishes
// it too, on redissonRWChannel.
const redissonUnlockMessage = "0"

// redissonReadUnlockMessage is what the unlock of a read-write lock's write
// hold publishes on redissonRWChannel (LockPubSub.READ_UNLOCK_MESSAGE):
// each waiting process wakes every waiter, since readers may all come in.
const redissonReadUnlockMessage = "1"
