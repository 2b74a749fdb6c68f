package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/redis/go-redis/v9"
)

// A set of locks is several names taken in one step, all of them or none,
// as bsm/redislock's ObtainMulti takes several keys: a job that needs two
// resources at once takes both without holding one while it waits for the
// other, which is how two such jobs deadlock. One script decides for the
// whole set (multi_acquire.lua), so no other client ever sees part of it
// taken; each name gets a fence from its own counter, the counter a single
// Acquire of that name uses. The set is one lease: one token, one TTL, one
// script that renews every key or none (multi_renew.lua), so that losing
// any key loses the set, and one that releases every key still held
// (multi_release.lua).
//
// A script's keys must share a Redis Cluster slot, so on a Cluster every
// name of a set carries the same hash tag ({tag}); Redlock, whose masters
// each decide alone, cannot take a set in one step and refuses.

var (
	//go:embed multi_acquire.lua
	multiAcquireLua string
	//go:embed multi_renew.lua
	multiRenewLua string
	//go:embed multi_release.lua
	multiReleaseLua string

	multiAcquireScript = lazyScript("multiAcquire", func() string { return lockwire.ValueLua + fenceLua + holderLua + lockwire.WakeLua + multiAcquireLua })
	multiRenewScript   = lazyScript("multiRenew", func() string { return lockwire.ValueLua + holderLua + multiRenewLua })
	multiReleaseScript = lazyScript("multiRelease", func() string { return lockwire.ValueLua + holderLua + lockwire.WakeLua + multiReleaseLua })
)

// leaseSet is what a Lease of a set of locks holds beyond one lock's: its
// names, keys and fences, in the order AcquireMulti was given them.
type leaseSet struct {
	names, keys []string
	fences      []int64
}

// at is the key at place i (1-based) of a script's reply, or the first
// key when the reply names none that fits.
func (s *leaseSet) at(i int) string {
	if i >= 1 && i <= len(s.keys) {
		return s.keys[i-1]
	}
	return s.keys[0]
}

func (s *leaseSet) String() string { return strings.Join(s.keys, ", ") }

// AcquireMulti takes the locks called names as one set, for ttl, waiting
// as o.Wait says: all of them, or none. While any name is held by someone
// else nothing is taken, and a waiter waits for the whole set, woken by the
// release of any name it waits for. It returns one lease for the set:
// Release, Refresh, Watch and Done act on every name at once, and the set
// is lost when any one of its locks is (deleted, expired or taken). The
// lease's Name, Key and Fence are those of names[0]; FenceOf gives each
// name's fence, each from the counter Acquire of that name uses.
//
// o's Token, Owner, Note, JobURL, Wait, RetryFor and Observer work as
// for Acquire; Limit, FIFO and Shared are refused (ErrInvalid). A name the
// token holds already (a retry after a lost reply) keeps its fence. On a
// Redis Cluster every name must map to the same slot (give them one hash
// tag: {tag}a, {tag}b), else ErrInvalid before anything is sent; a Locker
// of NewRedlock refuses sets.
//
// Errors as Acquire; a *HeldError names the first name found held.
func (l *Locker) AcquireMulti(ctx context.Context, names []string, ttl time.Duration, o *AcquireOptions) (*Lease, error) {
	if o == nil {
		o = &AcquireOptions{}
	}
	a, err := l.newSetAttempt(names, ttl, o)
	if err != nil {
		return nil, err
	}
	lease, err := a.run(ctx, o)
	if lease == nil && a.listed {
		// Leave the lists of waiting exclusive acquirers at once, as
		// Acquire does, so that shared holders and the waiters behind
		// go on without delay.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		for _, key := range a.keys {
			_ = l.b.fifoLeave(lctx, key, a.args.token)
		}
		cancel()
	}
	if l.events != nil {
		var held *HeldError
		for i, name := range names {
			if lease == nil && errors.As(err, &held) && held.Holder.Key != a.keys[i] {
				// Refused by another name: this one was not busy.
				continue
			}
			l.recordAcquire(ctx, name, o.Wait, lease, err)
		}
	}
	return lease, notObtainedBy(ctx, err)
}

// FenceOf is the fence the lease holds for the lock called name: for a
// set (AcquireMulti), that name's own; for one lock, Fence when name is
// the lease's Name. 0 when the lease holds no lock of that name, or is nil.
func (l *Lease) FenceOf(name string) int64 {
	switch {
	case l == nil:
		return 0
	case l.set == nil:
		if name == l.name {
			return l.fence
		}
		return 0
	}
	for i, n := range l.set.names {
		if n == name {
			return l.set.fences[i]
		}
	}
	return 0
}

// setAttempt is one AcquireMulti call.
type setAttempt struct {
	l           *Locker
	s           *single
	names, keys []string
	owner, note string
	args        acquireArgs
	start       time.Time
	deadline    time.Time // as attempt's
	listed      bool      // as attempt's
	slow        *LateError
	// The acquire script's keys and arguments, built once.
	scriptKeys []string
	scriptArgs []any
}

// newSetAttempt checks AcquireMulti's arguments: nothing is sent before
// they pass.
func (l *Locker) newSetAttempt(names []string, ttl time.Duration, o *AcquireOptions) (*setAttempt, error) {
	if len(names) == 0 {
		return nil, fmt.Errorf("%w: no lock names", ErrInvalid)
	}
	keys := make([]string, len(names))
	seen := make(map[string]bool, len(names))
	for i, name := range names {
		key, err := l.key(name)
		if err != nil {
			return nil, err
		}
		if seen[key] {
			return nil, fmt.Errorf("%w: lock name %q appears twice in the set", ErrInvalid, name)
		}
		seen[key], keys[i] = true, key
	}
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	ttl = ttl.Truncate(time.Millisecond)
	switch {
	case o.Limit != 0:
		return nil, fmt.Errorf("%w: a set of locks has no semaphore mode (limit %d)", ErrInvalid, o.Limit)
	case o.FIFO:
		return nil, fmt.Errorf("%w: a set of locks has no FIFO mode", ErrInvalid)
	case o.Shared:
		return nil, fmt.Errorf("%w: a set of locks has no shared mode", ErrInvalid)
	}
	s, ok := l.b.(*single)
	if !ok {
		return nil, fmt.Errorf("%w: a set of locks is taken in one script on one Redis (a server, Sentinel or Cluster); Redlock cannot", ErrInvalid)
	}
	if err := sameSlot(s.c, names, keys); err != nil {
		return nil, err
	}
	token, owner, err := tokenAndOwner(o)
	if err != nil {
		return nil, err
	}
	a := &setAttempt{l: l, s: s, names: names, keys: keys, owner: owner, note: o.Note,
		args: acquireArgs{token: token, ttl: ttl, rest: valueRest(o, ttl), keepOwner: o.Owner == ""}, start: l.clock.Now()}
	if o.Wait > 0 {
		a.deadline = a.start.Add(o.Wait)
	}
	if o.Wait != 0 {
		// As an exclusive Acquire: listed while refused (shared.go).
		a.args.intent = l.queueTTL()
	}
	a.scriptArgs = []any{token, ms(ttl), a.args.rest, ms(a.args.intent), a.args.keep()}
	for _, key := range keys {
		a.scriptKeys = append(a.scriptKeys, lockwire.WithAux(key, lockwire.KindFence, lockwire.KindSem, lockwire.KindSemVal,
			lockwire.KindWriters, lockwire.KindQueue, lockwire.KindQueueHB, lockwire.KindWaiting)...)
		a.scriptArgs = append(a.scriptArgs, lockwire.Channel(key), lockwire.AuxKey(lockwire.KindWake, key))
	}
	return a, nil
}

// sameSlot refuses, on a Redis Cluster, names whose keys lie in different
// slots: one script cannot touch them (CROSSSLOT), and saying so before
// anything is sent says how to fix it.
func sameSlot(c redis.UniversalClient, names, keys []string) error {
	if _, ok := c.(*redis.ClusterClient); !ok {
		return nil
	}
	return slotSpread(names, keys)
}

// slotSpread is the refusal of names whose keys lie in different Redis
// Cluster slots, with the fix (a hash tag), or nil when they share one.
func slotSpread(names, keys []string) error {
	slot := lockwire.Slot(keys[0])
	for i, key := range keys[1:] {
		if s := lockwire.Slot(key); s != slot {
			return fmt.Errorf("%w: lock names %q and %q map to different Redis Cluster slots (%d and %d); a set of locks is taken in one script, whose keys must share a slot: give every name the same hash tag, e.g. {tag}%s and {tag}%s (Redis hashes only what is between the first { and the next })",
				ErrInvalid, names[0], names[i+1], slot, s, names[0], names[i+1])
		}
	}
	return nil
}

// clusterRedirect reports whether err is a Cluster node's refusal of keys
// it does not serve together: CROSSSLOT, or MOVED/ASK.
func clusterRedirect(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	return strings.HasPrefix(msg, "CROSSSLOT") || strings.HasPrefix(msg, "MOVED") || strings.HasPrefix(msg, "ASK ")
}

// once runs the acquire script once. It returns a lease (whether or not
// its reply came in time), or the holder that refused it, or an error.
func (a *setAttempt) once(ctx context.Context) (*Lease, Holder, error) {
	var (
		fences []int64
		at     int
	)
	decode := func(v any) (reply, error) {
		r, f, i, err := lockwire.DecodeMultiAcquire(v)
		fences, at = f, i
		return r, err
	}
	sent := a.l.clock.Now()
	r, err := a.s.writeRaw(ctx, multiAcquireScript(), a.scriptKeys, 0, decode, a.scriptArgs...)
	if err != nil {
		if spread := slotSpread(a.names, a.keys); spread != nil && clusterRedirect(err) {
			// A client of one Cluster node (not a cluster client, which
			// sameSlot answers before sending): the node refused keys
			// of several slots. The same refusal and fix as with one.
			return nil, Holder{}, fmt.Errorf("%w (the server is a Redis Cluster node: %w)", spread, err)
		}
		return nil, Holder{}, fmt.Errorf("lock: acquire %s: %w", strings.Join(a.keys, ", "), err)
	}
	set := &leaseSet{names: a.names, keys: a.keys, fences: fences}
	if r.Code != lockwire.MultiAcquireAcquired {
		if a.args.intent > 0 {
			a.listed = true
		}
		h, err := holderOf(r, set.at(at))
		return nil, h, err
	}
	if len(fences) != len(a.keys) {
		return nil, Holder{}, fmt.Errorf("lock: acquire %s: %w", set, redisreply.Unexpected("script reply", fences))
	}
	now := time.UnixMilli(r.NowMS).UTC()
	lease := &Lease{name: a.names[0], key: a.keys[0], token: a.args.token, owner: a.owner, note: a.note, fence: fences[0],
		ttl: a.args.ttl, acquiredAt: now, expiresAt: now.Add(a.args.ttl), sent: sent, holds: 1, l: a.l, set: set}
	lease.waited = a.l.clock.Now().Sub(a.start)
	if err := a.l.replicated(a.keys[0], r); err != nil {
		a.giveBack(ctx, lease)
		return nil, Holder{}, err
	}
	return lease, Holder{}, nil
}

// try is attempt.try for a set: a grant whose reply came too late to
// count is re-confirmed once (the same token re-confirms its own set),
// else given back.
func (a *setAttempt) try(ctx context.Context) (*Lease, Holder, error) {
	return confirm(ctx, a.l, a, a.keys[0], a.deadline, &a.slow)
}

// giveBack releases a set the attempt will not hand out, as
// attempt.giveBack does.
func (a *setAttempt) giveBack(ctx context.Context, lease *Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_, _, _ = a.l.releaseSet(rctx, lease.set, lease.token)
}

// renewSet renews every key of set, or none (the set is lost), as
// renewKey renews one.
func (l *Locker) renewSet(ctx context.Context, set *leaseSet, token string, ttl time.Duration) (time.Duration, error) {
	ttl, err := renewTTL(ttl)
	if err != nil {
		return 0, err
	}
	s, ok := l.b.(*single)
	if !ok {
		return 0, fmt.Errorf("%w: a set of locks needs one Redis, not Redlock", ErrInvalid)
	}
	var at int
	decode := func(v any) (reply, error) {
		r, i, err := lockwire.DecodeMultiRenew(v)
		at = i
		return r, err
	}
	sent := l.clock.Now()
	r, err := s.writeRaw(ctx, multiRenewScript(), set.keys, ttl, decode, token, ms(ttl))
	if err != nil {
		s.reloadSlots(err)
		return 0, fmt.Errorf("lock: renew %s: %w", set, err)
	}
	switch r.Code {
	case lockwire.RenewRenewed:
		ttl = renewed(ttl, r)
		if err := l.late("renew", set.keys[0], sent, ttl); err != nil {
			return 0, err
		}
		return ttl, l.replicated(set.keys[0], r)
	case lockwire.RenewNotHeld:
		return 0, fmt.Errorf("%w: %s (so the set %s is lost)", ErrNotHeld, set.at(at), set)
	case lockwire.RenewNoTTL:
		return 0, noLeaseTTL(set.at(at))
	}
	return 0, refused(set.at(at), r)
}

// releaseSet releases every key of set that token still holds, and
// returns the holds left (re-entry) and, when a key was lost, its place.
func (l *Locker) releaseSet(ctx context.Context, set *leaseSet, token string) (left, at int, err error) {
	s, ok := l.b.(*single)
	if !ok {
		return 0, 0, fmt.Errorf("%w: a set of locks needs one Redis, not Redlock", ErrInvalid)
	}
	keys := make([]string, 0, 4*len(set.keys))
	args := make([]any, 0, 1+2*len(set.keys))
	args = append(args, token)
	for _, key := range set.keys {
		keys = append(keys, lockwire.WithAux(key, lockwire.KindQueue, lockwire.KindQueueHB, lockwire.KindWriters, lockwire.KindWaiting)...)
		args = append(args, lockwire.Channel(key), lockwire.AuxKey(lockwire.KindWake, key))
	}
	v, err := multiReleaseScript().Run(ctx, s.c, keys, args...).Result()
	if err != nil {
		return 0, 0, fmt.Errorf("lock: release %s: %w", set, s.dataError(ctx, err, keys...))
	}
	r, at, err := lockwire.DecodeMultiRelease(v)
	if err != nil {
		return 0, 0, fmt.Errorf("lock: release %s: %w", set, err)
	}
	switch r.Code {
	case lockwire.ReleaseReleased:
		return 0, 0, nil
	case lockwire.ReleaseHoldsLeft:
		return int(r.Num), 0, nil
	case lockwire.ReleaseNotWoken:
		return 0, 0, notWoken(set.keys[0], r)
	case lockwire.ReleaseNotHeld:
		return 0, at, fmt.Errorf("%w: %s (the rest of the set %s was released)", ErrNotHeld, set.at(at), set)
	}
	err = refused(set.at(at), r)
	if err == nil {
		err = fmt.Errorf("%w: %s", ErrNotHeld, set.at(at))
	}
	return 0, at, err
}

// releaseSetRecorded is releaseSet for lease, recorded (Options.Events)
// per name: the name found lost as such, the others as released.
func (l *Locker) releaseSetRecorded(ctx context.Context, lease *Lease) (int, error) {
	left, at, err := l.releaseSet(ctx, lease.set, lease.token)
	if l.events != nil {
		held := l.heldFor(lease)
		for i, name := range lease.set.names {
			if at != 0 && i+1 != at && gone(err) {
				l.recordRelease(ctx, name, held, left, nil)
				continue
			}
			l.recordRelease(ctx, name, held, left, err)
		}
	}
	return left, err
}

// setRenewer renews a set of locks for a watchdog.
type setRenewer struct {
	l   *Locker
	set *leaseSet
}

func (r setRenewer) Renew(ctx context.Context, _, token string, ttl time.Duration) (time.Duration, error) {
	return r.l.renewSet(ctx, r.set, token, ttl)
}
