package lock

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Semaphores: AcquireOptions.Limit = N turns a lock into a counting
// semaphore with up to N holders at once. The lock key itself is not used;
// the holders live in two auxiliary keys of the lock key (same cluster slot,
// outside the lock pattern):
//
//	AuxKey(KindSem, key)    ZSET  token -> expiry (server ms)
//	AuxKey(KindSemVal, key) HASH  token -> lockctl JSON value (as ParseValue
//	                              reads it, with a "limit" member)
//
// Every script on them first drops members whose expiry has passed, so a
// holder that died frees its slot by its TTL without anyone noticing it,
// and both keys carry the TTL of the latest expiry, so nothing lingers once
// the last holder is gone. Renew and release address a slot by token.
// Every acquisition takes a fence from the lock's one fence counter.
//
// The limit is not stored as a property of the semaphore: each acquire
// compares the number of live holders with its own N. Every user of a
// semaphore must therefore pass the same N; a larger N lets more in.

var (
	//go:embed members.lua
	auxLua string
	//go:embed sem_acquire.lua
	semAcquireLua string
	//go:embed sem_renew.lua
	semRenewLua string
	//go:embed sem_release.lua
	semReleaseLua string

	semAcquireScript = redis.NewScript(auxLua + semAcquireLua)
	semRenewScript   = redis.NewScript(auxLua + semRenewLua)
	semReleaseScript = redis.NewScript(auxLua + semReleaseLua)
)

func semKeys(key string) []string {
	return []string{AuxKey(KindSem, key), AuxKey(KindSemVal, key)}
}

func (s *single) semAcquire(ctx context.Context, key string, limit int, a acquireArgs) (reply, error) {
	return s.writeRaw(ctx, semAcquireScript, append(semKeys(key), AuxKey(KindFence, key)), decodeSemAcquire,
		a.token, ms(a.ttl), strconv.Itoa(limit), valuePrefix(a.token), a.rest)
}

func (s *single) semRenew(ctx context.Context, key, token string, ttl time.Duration) (reply, error) {
	return s.write(ctx, semRenewScript, semKeys(key), token, ms(ttl))
}

func (s *single) semRelease(ctx context.Context, key, token string) (reply, error) {
	v, err := semReleaseScript.Run(ctx, s.c, semKeys(key), token, Channel(key)).Result()
	if err != nil {
		return reply{}, err
	}
	return decode(v)
}

func decodeSemAcquire(v any) (reply, error) {
	if r, ok := decodeSem(v); ok {
		return r, nil
	}
	return decode(v)
}

// decodeSem reads a semaphore refusal: {0, 'semaphore', value, pttl, holders}.
func decodeSem(v any) (reply, bool) {
	a, ok := v.([]any)
	if !ok || len(a) != 5 {
		return reply{}, false
	}
	code, _ := a[0].(int64)
	typ, _ := a[1].(string)
	val, _ := a[2].(string)
	pttl, ok1 := a[3].(int64)
	n, ok2 := a[4].(int64)
	if code != 0 || typ != "semaphore" || !ok1 || !ok2 {
		return reply{}, false
	}
	return reply{code: 0, typ: typ, value: val, pttl: pttlDuration(pttl), holders: n, acked: -1}, true
}

// semRenewer renews semaphore slots for a Watchdog.
type semRenewer struct{ l *Locker }

func (r semRenewer) Renew(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error) {
	key, err := r.l.key(name)
	if err != nil {
		return 0, err
	}
	return r.l.renewSem(ctx, key, token, ttl)
}

func (l *Locker) renewSem(ctx context.Context, key, token string, ttl time.Duration) (time.Duration, error) {
	if err := checkTTL(ttl); err != nil {
		return 0, err
	}
	ttl = ttl.Truncate(time.Millisecond)
	r, err := l.b.semRenew(ctx, key, token, ttl)
	if err != nil {
		return 0, fmt.Errorf("lock: renew %s: %w", AuxKey(KindSem, key), err)
	}
	if r.code != 1 {
		return 0, fmt.Errorf("%w: %s (semaphore slot)", ErrNotHeld, key)
	}
	return ttl, l.replicated(key, r)
}

func (l *Locker) releaseSem(ctx context.Context, key, token string) error {
	r, err := l.b.semRelease(ctx, key, token)
	if err != nil {
		return fmt.Errorf("lock: release %s: %w", AuxKey(KindSem, key), err)
	}
	if r.code != 1 {
		return fmt.Errorf("%w: %s", ErrNotHeld, key)
	}
	return nil
}

// Renewer returns what renews lease: the Locker itself for a lock, or a
// renewer of its semaphore slot. Hand it to StartWatchdog.
func (l *Locker) Renewer(lease *Lease) Renewer {
	if lease.Limit > 0 {
		return semRenewer{l}
	}
	return l
}

// ReleaseLease releases lease, whether a lock or a semaphore slot.
// Errors as Release.
func (l *Locker) ReleaseLease(ctx context.Context, lease *Lease) error {
	if lease.Limit > 0 {
		return l.releaseSem(ctx, lease.Key, lease.Token)
	}
	return l.ReleaseKey(ctx, lease.Key, lease.Token)
}
