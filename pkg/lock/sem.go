package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/redis/go-redis/v9"
)

// Semaphores: AcquireOptions.Limit = N turns a lock into a counting
// semaphore with up to N holders at once. The lock key itself is not used;
// the holders live in two auxiliary keys of the lock key (same cluster slot,
// outside the lock pattern):
//
//	AuxKey(KindSem, key)    ZSET  token -> expiry (server ms)
//	AuxKey(KindSemVal, key) HASH  token -> lockctl JSON value (as lockwire.ParseValue
//	                              reads it, with a "limit" member)
//
// Every script on them first drops members whose expiry has passed, so a
// holder that died frees its slot by its TTL without anyone noticing it,
// and both keys carry the TTL of the latest expiry, so nothing lingers once
// the last holder is gone. Renew and release address a slot by token.
// Every acquisition takes a fence from the lock's one fence counter.
//
// The limit is a property of the semaphore while it has holders: each
// holder's value records its N, and an acquire with another N than the live
// holders' is refused (*DataError matching ErrInvalid) rather than let in beyond their bound.
//
// A semaphore and a plain lock of the same name exclude each other: a plain
// (or FIFO) acquire counts live slots as held, and a semaphore acquire counts
// a lock at the key as held.

var (
	//go:embed members.lua
	auxLua string
	//go:embed sem_acquire.lua
	semAcquireLua string
	//go:embed sem_renew.lua
	semRenewLua string
	//go:embed sem_release.lua
	semReleaseLua string

	semAcquireScript = lazyScript("semAcquire", func() string { return lockwire.ValueLua + fenceLua + holderLua + auxLua + semAcquireLua })
	semRenewScript   = lazyScript("semRenew", func() string { return lockwire.ValueLua + holderLua + auxLua + semRenewLua })
	semReleaseScript = lazyScript("semRelease", func() string { return lockwire.ValueLua + holderLua + auxLua + lockwire.WakeLua + semReleaseLua })
)

func semKeys(key string) []string {
	return []string{lockwire.AuxKey(lockwire.KindSem, key), lockwire.AuxKey(lockwire.KindSemVal, key)}
}

func (s *single) semAcquire(ctx context.Context, key string, limit int, a acquireArgs) (reply, error) {
	r, err := s.writeRaw(ctx, semAcquireScript(), append(semKeys(key), lockwire.AuxKey(lockwire.KindFence, key), key, lockwire.AuxKey(lockwire.KindWaiting, key)), 0, lockwire.DecodeSemAcquire,
		a.token, ms(a.ttl), strconv.Itoa(limit), lockwire.ValuePrefix(a.token), a.rest, a.keep(), ms(a.waiting))
	if err == nil && r.Code == lockwire.SemAcquireLimit {
		return reply{}, limitMismatch(key, int(r.Num), limit)
	}
	return r, err
}

func (s *single) semRenew(ctx context.Context, key, token string, ttl time.Duration) (reply, error) {
	return s.writeRaw(ctx, semRenewScript(), semKeys(key), ttl, lockwire.DecodeSemRenew, token, ms(ttl))
}

func (s *single) semRelease(ctx context.Context, key, token string) (reply, error) {
	keys := lockwire.WithAux(key, lockwire.KindSem, lockwire.KindSemVal, lockwire.KindQueue, lockwire.KindQueueHB, lockwire.KindWriters, lockwire.KindWaiting, lockwire.KindChannel, lockwire.KindWake)
	keys, channel, base := keys[1:7], keys[7], keys[8]
	v, err := semReleaseScript().Run(ctx, s.c, keys, token, channel, base).Result()
	if err != nil {
		return reply{}, s.dataError(ctx, err, keys[:2]...)
	}
	return lockwire.DecodeSemRelease(v)
}

func (s *single) slotValue(ctx context.Context, key, token string) (string, error) {
	v, err := s.c.HGet(ctx, lockwire.AuxKey(lockwire.KindSemVal, key), token).Result()
	if errors.Is(err, redis.Nil) {
		return "", nil
	}
	return v, err
}

// semRenewer renews semaphore slots for a watchdog.
type semRenewer struct{ l *Locker }

func (r semRenewer) Renew(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error) {
	key, err := r.l.key(name)
	if err != nil {
		return 0, err
	}
	return r.l.renewSem(ctx, key, token, ttl)
}

func (l *Locker) renewSem(ctx context.Context, key, token string, ttl time.Duration) (time.Duration, error) {
	ttl, err := renewTTL(ttl)
	if err != nil {
		return 0, err
	}
	sent := l.clock.Now()
	r, err := l.b.semRenew(ctx, key, token, ttl)
	if err != nil {
		return 0, fmt.Errorf("lock: renew %s: %w", lockwire.AuxKey(lockwire.KindSem, key), err)
	}
	switch r.Code {
	case lockwire.SemRenewRenewed:
		ttl = renewed(ttl, r)
		if err := l.late("renew", key, sent, ttl); err != nil {
			return 0, err
		}
		return ttl, l.replicated(key, r)
	case lockwire.SemRenewNoTTL:
		return 0, noLeaseTTL(key)
	}
	return 0, fmt.Errorf("%w: %s (semaphore slot)", ErrNotHeld, key)
}

// releaseSem releases one hold of token's slot and returns how many remain.
func (l *Locker) releaseSem(ctx context.Context, key, token string) (int, error) {
	r, err := l.b.semRelease(ctx, key, token)
	if err != nil {
		return 0, fmt.Errorf("lock: release %s: %w", lockwire.AuxKey(lockwire.KindSem, key), err)
	}
	switch r.Code {
	case lockwire.SemReleaseReleased:
		return 0, nil
	case lockwire.SemReleaseNotWoken:
		return 0, notWoken(key, r)
	case lockwire.SemReleaseHoldsLeft:
		return int(r.Num), nil
	}
	return 0, fmt.Errorf("%w: %s", ErrNotHeld, key)
}

// renewerFor returns what renews lease: a renewer of a lock, or a
// renewer of its semaphore slot. Watchdogs renew with it.
func (l *Locker) renewerFor(lease *Lease) renewer {
	if lease.set != nil {
		return setRenewer{l, lease.set}
	}
	if lease.limit > 0 || lease.shared {
		return semRenewer{l}
	}
	return lockRenewer{l}
}

// releaseHoldRecorded releases lease, whether a lock or a semaphore slot,
// recorded (Options.Events), and reports how many holds of lease's token
// remain: 0 when the lock (or slot) is now free, more when re-entered holds
// were not given back yet (the lock then stays until its TTL unless they
// are). Errors as Release.
func (l *Locker) releaseHoldRecorded(ctx context.Context, lease *Lease) (int, error) {
	if lease.set != nil {
		return l.releaseSetRecorded(ctx, lease)
	}
	if l.events == nil {
		return l.releaseHold(ctx, lease, nil)
	}
	name := lease.name
	if name == "" {
		name = l.nameOf(lease.key)
	}
	held := l.heldFor(lease)
	var ev *releaseEvents
	if lease.limit == 0 && !lease.shared {
		ev = l.releaseEventsFor(name, held)
	}
	left, err := l.releaseHold(ctx, lease, ev)
	ev.settle()
	if !ev.recordedRelease() {
		l.recordRelease(ctx, name, held, left, err)
	}
	return left, err
}

// releaseHold releases lease; ev (a plain lock's release only) is what
// its script may write to the event stream.
func (l *Locker) releaseHold(ctx context.Context, lease *Lease, ev *releaseEvents) (int, error) {
	if lease.set != nil {
		left, _, err := l.releaseSet(ctx, lease.set, lease.token)
		return left, err
	}
	if lease.limit > 0 || lease.shared {
		return l.releaseSem(ctx, lease.key, lease.token)
	}
	return l.releaseKey(ctx, lease.key, lease.token, ev)
}
