package lock

import (
	"context"
	_ "embed"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

// Shared mode: AcquireOptions.Shared takes a lock as one of any number of
// shared holders (readers), as flock -s does and Redisson's read-write lock
// does for its read lock, while an exclusive holder (every other acquire of
// the name: plain or FIFO) excludes everyone.
//
// Shared holders keep their slots where a semaphore's holders do, in the
// semaphore zset and values hash of the lock key (sem.go), their values
// marked "mode":"shared" and carrying no limit. So everything that already
// keeps a semaphore and a plain lock of one name apart keeps shared and
// exclusive holders apart: an exclusive acquire counts live slots as held,
// a shared one counts a lock at the key as held, and a slot frees itself by
// its expiry when its holder dies. Renewal, release, re-entry, inspection
// and force-release find a shared slot by its token, as a semaphore's. A
// semaphore and shared holders of one name exclude each other
// (*DataError matching ErrInvalid).
//
// Writers never starve: an exclusive acquire that is refused and goes on
// waiting lists itself in AuxKey(KindWriters, key), a zset token -> expiry
// (server ms) refreshed by every attempt and kept for the queue TTL (3× the
// polling interval, at least 3s), and a shared acquire is refused while
// anyone is listed, though the lock may be free or held only by shared
// holders. The exclusive acquirer leaves the list when it gets the lock or
// gives up (waking the shared waiters); one that dies drops off by expiry.
// Under FIFO (AcquireOptions.FIFO), where every waiter has a place in the
// queue, a shared waiter waits only for the exclusive ones ahead of it.
//
// Fences: a shared holder gets the counter's current value, the fence of
// the last exclusive acquisition (or Fences.Next), and does not increment
// it; the next exclusive acquisition's fence is greater. So all shared
// holders between two exclusive ones hold the same fence, and a resource
// compares a reader's fence with Fences.CheckShared, which accepts a fence
// equal to the highest it has seen from any number of holders and records
// nothing. Only a counter that is missing (never used, or lost to a
// restart, failover or eviction) is started by a shared acquire, from the
// clock floor like any fence, so that it still orders after everything
// issued before.
//
// Redlock does not support shared mode.

var (
	//go:embed shared_acquire.lua
	sharedAcquireLua string

	sharedAcquireScript = lazyScript("sharedAcquire", func() string { return lockwire.ValueLua + fenceLua + holderLua + auxLua + sharedAcquireLua })
)

func (s *single) sharedAcquire(ctx context.Context, key string, a acquireArgs, queueTTL time.Duration) (reply, error) {
	keys := append(append(semKeys(key), lockwire.AuxKey(lockwire.KindFence, key), key, lockwire.AuxKey(lockwire.KindWriters, key)), queueKeys(key)...)
	keys = append(keys, lockwire.AuxKey(lockwire.KindWaiting, key))
	dec := func(v any) (reply, error) { return lockwire.DecodeSharedAcquire(v, queueTTL > 0) }
	r, err := s.writeRaw(ctx, sharedAcquireScript(), keys, 0, dec,
		a.token, ms(a.ttl), lockwire.ValuePrefix(a.token), a.rest, ms(queueTTL), a.keep(), ms(a.waiting))
	if err == nil && r.Code == lockwire.SharedAcquireLimit {
		return reply{}, limitMismatch(key, int(r.Num), 0)
	}
	return r, err
}
