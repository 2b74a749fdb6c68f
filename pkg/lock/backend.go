package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/lib/luascript"
	"github.com/redis/go-redis/v9"
)

// backend is everything a Locker asks of the servers that keep its locks.
// Callers never see it: today one server (or a Sentinel-managed master, or
// a Redis Cluster, where every key a script touches shares the lock key's
// slot through lockwire.AuxKey); a Redlock backend over a majority of independent
// masters can implement the same calls without changing Locker's API.
type backend interface {
	acquire(ctx context.Context, key string, a acquireArgs) (reply, error)
	renew(ctx context.Context, key, token string, ttl time.Duration) (reply, error)
	// release frees key; ev, when not nil, is the event stream's share
	// of its script (release_events.go), which a backend may ignore.
	release(ctx context.Context, key, token string, ev *releaseEvents) (reply, error)
	// reenter adds a hold to the lease token holds at key (reenter.lua).
	reenter(ctx context.Context, key, token string) (reply, error)
	inspect(ctx context.Context, key string) (reply, error)
	// nextFence issues a fence from counter key (reply.fence, and
	// reply.acked as a lock write has).
	nextFence(ctx context.Context, key string) (reply, error)
	peek(ctx context.Context, key string) (int64, error)
	// check accepts fence n for the record at key (reply.code 1), or
	// refuses it with the highest fence recorded (code 0, reply.fence).
	// shared: a shared holder's check (check.lua).
	check(ctx context.Context, key string, n int64, token string, shared bool) (reply, error)
	publish(ctx context.Context, channel string) error
	// subscribe returns once the server has confirmed the subscription, so
	// that no release published after it returns can be missed.
	subscribe(ctx context.Context, channel string) (subscription, error)
	// queued counts this process's waiters on channel.
	queued(channel string) int

	// Semaphores (sem.go) and FIFO queues (fifo.go).
	semAcquire(ctx context.Context, key string, limit int, a acquireArgs) (reply, error)
	semRenew(ctx context.Context, key, token string, ttl time.Duration) (reply, error)
	semRelease(ctx context.Context, key, token string) (reply, error)
	fifoAcquire(ctx context.Context, key string, a acquireArgs, queueTTL time.Duration) (reply, error)
	fifoLeave(ctx context.Context, key, token string) error
	// slotValue is the stored value of token's semaphore or shared slot,
	// "" when it holds none.
	slotValue(ctx context.Context, key, token string) (string, error)
	// sharedAcquire takes a shared slot (shared.go); queueTTL > 0 for a
	// FIFO waiter.
	sharedAcquire(ctx context.Context, key string, a acquireArgs, queueTTL time.Duration) (reply, error)
}

type subscription interface {
	// C receives a value when the waiter should try again.
	C() <-chan struct{}
	// fifo marks the waiter as holding a place in the lock's FIFO queue
	// that arrived at arrival (server µs; 0 while not yet known), so that a
	// release wakes the local waiter nearest the head (see hub).
	fifo(token string, arrival int64)
	// named gives the waiter its token, by which a release that names the
	// waiter to wake (wake.lua) wakes it alone.
	named(token string)
	// passOn: the waiter took a shared hold, which the next local waiter
	// may be able to take too; Close then wakes it (a release message
	// wakes one local waiter only).
	passOn()
	Close() error
}

type acquireArgs struct {
	token string
	ttl   time.Duration
	rest  string // the stored value's members after the fence
	// intent > 0: an exclusive acquire that waits when refused; it is
	// listed as waiting for that long (see shared.go).
	intent time.Duration
	// keepOwner: the caller named no owner, so a re-acquire by the token
	// that holds the lock keeps the stored one (value.lua's withMembers).
	keepOwner bool
	// waiting > 0: a shared or semaphore acquire (not FIFO) that waits
	// when refused; it is listed as waiting for that long, so that a
	// release wakes it (wake.lua).
	waiting time.Duration
}

// keep is keepOwner as the acquire scripts take it.
func (a acquireArgs) keep() string {
	if a.keepOwner {
		return "1"
	}
	return "0"
}

var (
	//go:embed holder.lua
	holderLua string
	//go:embed acquire_fast.lua
	acquireFastLua string
	//go:embed acquire.lua
	acquireLua string
	//go:embed renew.lua
	renewLua string
	//go:embed release_fast.lua
	releaseFastLua string
	//go:embed release.lua
	releaseLua string
	//go:embed inspect.lua
	inspectLua string
	//go:embed check.lua
	checkLua string
	//go:embed fence.lua
	fenceLua string
	//go:embed fence_next.lua
	fenceNextLua string
	//go:embed reenter.lua
	reenterLua string

	// The SHA-1 of each script is computed once, at first use (lazyScript);
	// EVALSHA falls back to EVAL on NOSCRIPT, which also reloads the script
	// into the server's cache, so SCRIPT FLUSH or a restart costs one extra
	// round trip. Every script that builds, reads or edits a stored value
	// starts with lockwire.ValueLua (value.lua), the value's Lua side.
	acquireScript = lazyScript("acquire", func() string {
		return lockwire.ValueHeadLua + acquireFastLua + lockwire.ValueRestLua + fenceLua + holderLua + acquireLua
	})
	renewScript   = lazyScript("renew", func() string { return lockwire.ValueLua + holderLua + renewLua })
	releaseScript = lazyScript("release", func() string {
		return lockwire.ValueHeadLua + releaseFastLua + lockwire.ValueRestLua + holderLua + lockwire.WakeLua + releaseLua
	})
	inspectScript   = lazyScript("inspect", func() string { return lockwire.ValueLua + holderLua + inspectLua })
	checkScript     = lazyScript("check", func() string { return fenceLua + checkLua })
	fenceNextScript = lazyScript("fenceNext", func() string { return fenceLua + fenceNextLua })
	reenterScript   = lazyScript("reenter", func() string { return lockwire.ValueLua + holderLua + reenterLua })
)

// single is a backend on one logical Redis: a server, a Sentinel-managed
// master or a Cluster (through a redis.UniversalClient).
type single struct {
	c               redis.UniversalClient
	hub             *hub
	replicas        int
	replicasTimeout time.Duration
	// blocked holds a token per waiter sleeping on its wake-up stream
	// (sleep.go); nil under Redlock, whose waiters use the hub. sleeping
	// marks, by channel, the locks one of them waits for.
	blocked  chan struct{}
	mu       sync.Mutex
	sleeping map[string]bool
	// noReleaseEvents: the server refused a release script naming the
	// event stream (an ACL without it); releases leave it out since.
	noReleaseEvents atomic.Bool

	// With replicas, a NOSCRIPT costs a whole WAIT timeout, since the WAIT
	// pipelined after the EVALSHA runs anyway: twice the time for the
	// write. After a failover (a promoted replica starts with an empty
	// script cache) that doubled renewal can outlast the lease's room for
	// renewals. So after a NOSCRIPT or a connection error (the usual sign
	// of a failover), writes send each script's source with EVAL until
	// the server has run it once: scriptGen counts such events, and
	// scriptSeen holds, per script, the scriptGen at which it last ran.
	scriptGen  atomic.Int64
	scriptSeen sync.Map // *luascript.Script -> int64
}

// sendSource reports whether a write should carry sc's source (EVAL)
// rather than its SHA.
func (s *single) sendSource(sc *luascript.Script) bool {
	gen := s.scriptGen.Load()
	if gen == 0 {
		return false
	}
	seen, _ := s.scriptSeen.Load(sc)
	n, _ := seen.(int64)
	return n < gen
}

func ms(d time.Duration) string { return strconv.FormatInt(d.Milliseconds(), 10) }

func (s *single) acquire(ctx context.Context, key string, a acquireArgs) (reply, error) {
	keys := lockwire.WithAux(key, lockwire.KindFence, lockwire.KindSem, lockwire.KindSemVal, lockwire.KindWriters)
	return s.writeRaw(ctx, acquireScript(), keys, 0, lockwire.DecodeAcquire, a.token, ms(a.ttl), a.rest, ms(a.intent), a.keep())
}

func (s *single) reenter(ctx context.Context, key, token string) (reply, error) {
	return s.writeRaw(ctx, reenterScript(), append([]string{key}, semKeys(key)...), 0, lockwire.DecodeReenter, token, lockwire.ValuePrefix(token))
}

func (s *single) renew(ctx context.Context, key, token string, ttl time.Duration) (reply, error) {
	r, err := s.writeRaw(ctx, renewScript(), lockwire.WithAux(key, lockwire.KindSem), ttl, lockwire.DecodeRenew, token, ms(ttl))
	if err != nil {
		s.reloadSlots(err)
	}
	return r, err
}

// reloadSlots asks a Cluster client to reload its slot map after a renewal
// failed on the way to the server (a timeout, a reset connection) or met a
// slot in motion: after a failover the slot's master is another node, and
// the watchdog's next attempt, sent at once, should go there. The client
// reloads in the background; on other clients it does nothing.
func (s *single) reloadSlots(err error) {
	cc, ok := s.c.(*redis.ClusterClient)
	if !ok {
		return
	}
	var rerr redis.Error
	if errors.As(err, &rerr) && !transientReply(rerr.Error()) &&
		!redis.HasErrorPrefix(err, "MOVED") && !redis.HasErrorPrefix(err, "ASK") {
		return
	}
	cc.ReloadState(context.Background())
}

func (s *single) release(ctx context.Context, key, token string, ev *releaseEvents) (reply, error) {
	// The channel is no key, but is built with them: one allocation.
	keys := lockwire.WithAux(key, lockwire.KindSem, lockwire.KindQueue, lockwire.KindQueueHB, lockwire.KindWriters, lockwire.KindWaiting, lockwire.KindChannel, lockwire.KindWake)
	keys, channel, base := keys[:6], keys[6], keys[7]
	if !s.noReleaseEvents.Load() {
		if stream, args, ok := ev.args(s.c); ok {
			v, err := releaseScript().Run(ctx, s.c, append(keys[:6:6], stream), append([]any{token, channel, base}, args...)...).Result()
			if err == nil {
				if v, err = ev.ran(v); err != nil {
					return reply{}, err
				}
				return s.woke(channel)(lockwire.DecodeRelease(v))
			}
			if !redis.HasErrorPrefix(err, "NOPERM") {
				return reply{}, s.dataError(ctx, err, keys...)
			}
			// An ACL that grants the lock's keys but not the event
			// stream refuses the script before it runs (every write in
			// it comes after what can be refused): release without
			// the events, here and from now on, and let the sink
			// write them as it would have.
			s.noReleaseEvents.Store(true)
		}
	}
	v, err := releaseScript().Run(ctx, s.c, keys, token, channel, base).Result()
	if err != nil {
		return reply{}, s.dataError(ctx, err, keys...)
	}
	return s.woke(channel)(lockwire.DecodeRelease(v))
}

// woke wakes this Locker's first waiter for channel after a release
// decoded as r: the release need not publish when nobody is listed, and
// this process's waiters behind the one that tried are not.
func (s *single) woke(channel string) func(reply, error) (reply, error) {
	return func(r reply, err error) (reply, error) {
		if err == nil && (r.Code == lockwire.ReleaseReleased || r.Code == lockwire.ReleaseNotWoken) {
			s.hub.wakeLocal(channel)
		}
		return r, err
	}
}

func (s *single) inspect(ctx context.Context, key string) (reply, error) {
	keys := append([]string{key}, semKeys(key)...)
	v, err := inspectScript().Run(ctx, s.c, keys).Result()
	if err != nil {
		// WRONGTYPE: a *DataError naming the key that holds what.
		return reply{}, s.dataError(ctx, err, keys...)
	}
	return lockwire.DecodeInspect(v)
}

// waitTimeout bounds WAIT: the configured timeout, and for a renewal at
// most ttl/6. While no replica is in sync (a failover, a resync) every
// WAIT runs to its timeout, and a lease's deadline leaves ttl*3/4 for
// renewals: a sixth leaves room for several attempts, so that a renewal
// the replicas acknowledge once they catch up still comes before the
// deadline (a renewal's *ReplicationError does not move it). An acquire,
// whose shortfall gives the lock back, waits the whole timeout.
func (s *single) waitTimeout(renewTTL time.Duration) time.Duration {
	if renewTTL <= 0 {
		return s.replicasTimeout
	}
	return max(min(s.replicasTimeout, renewTTL/6), time.Millisecond)
}

// writeRaw runs a script that writes a lease. With WaitReplicas set, WAIT goes
// in the same pipeline: WAIT counts replicas that caught up with writes made
// on its own connection, so on any other pooled connection it would report
// success for writes it never waited for. renewTTL is the TTL a renewal
// sets, 0 for an acquire (see waitTimeout);
// decode is the script's reply decoder.
func (s *single) writeRaw(ctx context.Context, sc *luascript.Script, keys []string, renewTTL time.Duration, decode func(any) (reply, error), args ...any) (reply, error) {
	if s.replicas <= 0 {
		v, err := sc.Run(ctx, s.c, keys, args...).Result()
		if err != nil {
			return reply{}, s.dataError(ctx, err, keys...)
		}
		r, err := decode(v)
		r.Acked = -1
		return r, err
	}
	for attempt := 0; ; attempt++ {
		pipe := s.c.Pipeline()
		var ev *redis.Cmd
		gen := s.scriptGen.Load()
		// A server that refuses EVAL (renamed, ACL) gets EVALSHA, the
		// script loaded first after a NOSCRIPT; one that refuses EVALSHA
		// gets EVAL (see luascript). A refused command ran nothing.
		evalRefused := luascript.EvalRefused(s.c)
		sha := (attempt == 0 && !s.sendSource(sc) || evalRefused) && !luascript.ShaRefused(s.c)
		if sha {
			ev = sc.EvalSha(ctx, pipe, keys, args...)
		} else {
			ev = sc.Eval(ctx, pipe, keys, args...)
		}
		// The client's read timeout must exceed replicasTimeout. After a
		// NOSCRIPT (a promoted replica starts with an empty script cache)
		// this WAIT has waited in vain; a renewal's ttl/6 bound keeps the
		// two within the lease's room for renewals.
		wait := pipe.Do(ctx, "WAIT", s.replicas, s.waitTimeout(renewTTL).Milliseconds())
		_, _ = pipe.Exec(ctx)
		if sha && redis.HasErrorPrefix(ev.Err(), "NOSCRIPT") && attempt < 3 {
			s.scriptGen.CompareAndSwap(gen, gen+1)
			if evalRefused {
				if err := sc.Load(ctx, s.c).Err(); err != nil {
					return reply{}, s.dataError(ctx, err, keys...)
				}
			}
			continue
		}
		if attempt < 3 && (sha && luascript.Refused(s.c, ev.Err(), "evalsha") ||
			!sha && luascript.Refused(s.c, ev.Err(), "eval") && !luascript.ShaRefused(s.c)) {
			continue
		}
		v, err := ev.Result()
		if err != nil {
			var rerr redis.Error
			if !errors.As(err, &rerr) {
				s.scriptGen.CompareAndSwap(gen, gen+1)
			}
			return reply{}, s.dataError(ctx, err, keys...)
		}
		s.scriptSeen.Store(sc, gen)
		r, err := decode(v)
		if err != nil {
			return r, err
		}
		n, err := wait.Int64()
		if err != nil {
			return r, fmt.Errorf("wait for replicas: %w", err)
		}
		r.Acked = int(n)
		return r, nil
	}
}

func (s *single) nextFence(ctx context.Context, key string) (reply, error) {
	return s.writeRaw(ctx, fenceNextScript(), []string{key}, 0, lockwire.DecodeFenceNext)
}

func (s *single) peek(ctx context.Context, key string) (int64, error) {
	n, err := s.c.Get(ctx, key).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, s.counterError(ctx, key, err)
	}
	return n, nil
}

func (s *single) check(ctx context.Context, key string, n int64, token string, shared bool) (reply, error) {
	mode := "0"
	if shared {
		mode = "1"
	}
	r, err := s.writeRaw(ctx, checkScript(), []string{key}, 0, lockwire.DecodeCheck, strconv.FormatInt(n, 10), token, mode)
	if err != nil {
		return r, err
	}
	// The record's fence, as the script read it: someone else's data
	// there is no number.
	if r.Fence, err = strconv.ParseInt(r.Value, 10, 64); err != nil {
		return reply{}, s.counterError(ctx, key, err)
	}
	return r, nil
}

func (s *single) publish(ctx context.Context, channel string) error {
	return s.c.Publish(ctx, channel, "released").Err()
}

func (s *single) subscribe(ctx context.Context, channel string) (subscription, error) {
	return s.hub.subscribe(ctx, channel)
}

// lazyScript is the script called name, whose source src builds. Its
// SHA1 comes from scriptHash (script_hashes.go, generated), so running it
// by EVALSHA never builds or hashes the source; only EVAL and SCRIPT LOAD
// send it. TestScriptHashes keeps the hashes true to the sources.
func lazyScript(name string, src func() string) func() *luascript.Script {
	scriptSources = append(scriptSources, namedSource{name, src})
	return sync.OnceValue(func() *luascript.Script {
		if h := scriptHash(name); h != "" {
			return luascript.Hashed(h, src)
		}
		return luascript.New(src())
	})
}

// namedSource is a script's name and source, for TestScriptHashes.
type namedSource struct {
	name string
	src  func() string
}

// scriptSources lists every script lazyScript made.
var scriptSources []namedSource
