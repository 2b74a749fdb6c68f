package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"math"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockctl/lockctl/internal/redisreply"
	"github.com/redis/go-redis/v9"
)

// backend is everything a Locker asks of the servers that keep its locks.
// Callers never see it: today one server (or a Sentinel-managed master, or
// a Redis Cluster, where every key a script touches shares the lock key's
// slot through AuxKey); a Redlock backend over a majority of independent
// masters can implement the same calls without changing Locker's API.
type backend interface {
	acquire(ctx context.Context, key string, a acquireArgs) (reply, error)
	renew(ctx context.Context, key, token string, ttl time.Duration) (reply, error)
	release(ctx context.Context, key, token string) (reply, error)
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
}

// reply is a decoded script reply. code means what each script's header
// says; typ, value, fields and pttl describe a holder when one refused us.
type reply struct {
	code   int64
	typ    string
	value  string
	fields map[string]string
	pttl   time.Duration
	fence  int64
	nowMS  int64
	acked  int   // replicas that acknowledged the write; -1 when not asked
	num    int64 // {code, n} replies: a renewal's ttl in ms, the holds left, a semaphore's limit

	holders int64 // semaphore refusal: live holders
	queue   int64 // FIFO refusal: waiters ahead
	arrival int64 // FIFO refusal: the waiter's arrival in the queue (server µs)
}

// holder turns a refusal into the Holder it describes, or a *WrongTypeError
// when the key is not a lock of any kind we know.
func (r reply) holder(key string) (Holder, error) {
	switch r.typ {
	case "string":
		h := ParseValue(key, r.value, r.pttl)
		h.Queue, h.arrival = r.queue, r.arrival
		return h, nil
	case "hash":
		if h, ok := ParseRedissonAny(key, r.fields, r.pttl); ok {
			h.Queue, h.arrival = r.queue, r.arrival
			return h, nil
		}
	case "semaphore", "shared":
		h := ParseValue(key, r.value, r.pttl)
		h.Kind, h.Holders = r.typ, r.holders
		h.Queue, h.arrival = r.queue, r.arrival
		return h, nil
	case "writers":
		// Shared: exclusive acquirers wait, and go first.
		return Holder{Key: key, Kind: "writers", TTL: -1, Holders: r.holders, Queue: r.num, arrival: r.arrival}, nil
	case "none":
		// FIFO: the lock is free, but earlier waiters go first. TTL -1
		// keeps waiters from timing their retry by it.
		return Holder{Key: key, Kind: "queue", TTL: -1, Queue: r.queue, arrival: r.arrival}, nil
	}
	return Holder{}, &WrongTypeError{Key: key, Type: r.typ}
}

var (
	//go:embed holder.lua
	holderLua string
	//go:embed acquire.lua
	acquireLua string
	//go:embed renew.lua
	renewLua string
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
	//go:embed wake.lua
	wakeLua string

	// The SHA-1 of each script is computed once, at first use (lazyScript);
	// EVALSHA falls back to EVAL on NOSCRIPT, which also reloads the script
	// into the server's cache, so SCRIPT FLUSH or a restart costs one extra
	// round trip.
	acquireScript   = lazyScript(func() string { return fenceLua + holderLua + acquireLua })
	renewScript     = lazyScript(func() string { return holderLua + renewLua })
	releaseScript   = lazyScript(func() string { return holderLua + wakeLua + releaseLua })
	inspectScript   = lazyScript(func() string { return holderLua + inspectLua })
	checkScript     = lazyScript(func() string { return fenceLua + checkLua })
	fenceNextScript = lazyScript(func() string { return fenceLua + fenceNextLua })
	reenterScript   = lazyScript(func() string { return holderLua + reenterLua })
)

// single is a backend on one logical Redis: a server, a Sentinel-managed
// master or a Cluster (through a redis.UniversalClient).
type single struct {
	c               redis.UniversalClient
	hub             *hub
	replicas        int
	replicasTimeout time.Duration

	// With replicas, a NOSCRIPT costs a whole WAIT timeout, since the WAIT
	// pipelined after the EVALSHA runs anyway: twice the time for the
	// write. After a failover (a promoted replica starts with an empty
	// script cache) that doubled renewal can outlast the lease's room for
	// renewals. So after a NOSCRIPT or a connection error (the usual sign
	// of a failover), writes send each script's source with EVAL until
	// the server has run it once: scriptGen counts such events, and
	// scriptSeen holds, per script, the scriptGen at which it last ran.
	scriptGen  atomic.Int64
	scriptSeen sync.Map // *redis.Script -> int64
}

// sendSource reports whether a write should carry sc's source (EVAL)
// rather than its SHA.
func (s *single) sendSource(sc *redis.Script) bool {
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
	return s.writeRaw(ctx, acquireScript(), withAux(key, KindFence, KindSem, KindSemVal, KindWriters), 0, decodeSemAcquire,
		a.token, ms(a.ttl), a.rest, ms(a.intent))
}

func (s *single) reenter(ctx context.Context, key, token string) (reply, error) {
	return s.writeRaw(ctx, reenterScript(), append([]string{key}, semKeys(key)...), 0, decodeReenter, token, valuePrefix(token))
}

// decodeReenter reads reenter.lua's {1|3, value, pttl, server ms}, else the
// usual shapes.
func decodeReenter(v any) (reply, error) {
	if a, ok := v.([]any); ok && len(a) == 4 {
		code, _ := a[0].(int64)
		val, ok1 := a[1].(string)
		pttl, ok2 := a[2].(int64)
		now, ok3 := a[3].(int64)
		if (code == 1 || code == 3) && ok1 && ok2 && ok3 {
			return reply{code: code, value: val, pttl: time.Duration(pttl) * time.Millisecond, nowMS: now, acked: -1}, nil
		}
	}
	return decode(v)
}

func (s *single) renew(ctx context.Context, key, token string, ttl time.Duration) (reply, error) {
	return s.write(ctx, renewScript(), withAux(key, KindSem), ttl, token, ms(ttl))
}

func (s *single) release(ctx context.Context, key, token string) (reply, error) {
	// The channel is no key, but is built with them: one allocation.
	keys := withAux(key, KindSem, KindQueue, KindQueueHB, KindWriters, KindChannel, KindWake)
	keys, channel, base := keys[:5], keys[5], keys[6]
	v, err := releaseScript().Run(ctx, s.c, keys, token, channel, base).Result()
	if err != nil {
		return reply{}, s.dataError(ctx, err, keys...)
	}
	return decode(v)
}

func (s *single) inspect(ctx context.Context, key string) (reply, error) {
	v, err := inspectScript().Run(ctx, s.c, append([]string{key}, semKeys(key)...)).Result()
	if err != nil {
		return reply{}, err
	}
	return decodeSemAcquire(v)
}

// write runs a script that writes a lease. With WaitReplicas set, WAIT goes
// in the same pipeline: WAIT counts replicas that caught up with writes made
// on its own connection, so on any other pooled connection it would report
// success for writes it never waited for. renewTTL is the TTL a renewal
// sets, 0 for an acquire (see waitTimeout).
func (s *single) write(ctx context.Context, sc *redis.Script, keys []string, renewTTL time.Duration, args ...any) (reply, error) {
	return s.writeRaw(ctx, sc, keys, renewTTL, decode, args...)
}

// waitTimeout bounds WAIT: the configured timeout, and for a renewal at
// most ttl/6. While no replica is in sync (a failover, a resync) every
// WAIT runs to its timeout, and a lease's deadline leaves ttl*3/4 for
// renewals: a sixth leaves room for several attempts, so that the lease
// rides through on the master (a renewal's *ReplicationError keeps it)
// instead of being lost waiting. An acquire, whose shortfall gives the
// lock back, waits the whole timeout.
func (s *single) waitTimeout(renewTTL time.Duration) time.Duration {
	if renewTTL <= 0 {
		return s.replicasTimeout
	}
	return max(min(s.replicasTimeout, renewTTL/6), time.Millisecond)
}

// writeRaw is write with the script's own reply decoder.
func (s *single) writeRaw(ctx context.Context, sc *redis.Script, keys []string, renewTTL time.Duration, decode func(any) (reply, error), args ...any) (reply, error) {
	if s.replicas <= 0 {
		v, err := sc.Run(ctx, s.c, keys, args...).Result()
		if err != nil {
			return reply{}, s.dataError(ctx, err, keys...)
		}
		r, err := decode(v)
		r.acked = -1
		return r, err
	}
	for attempt := 0; ; attempt++ {
		pipe := s.c.Pipeline()
		var ev *redis.Cmd
		gen := s.scriptGen.Load()
		sha := attempt == 0 && !s.sendSource(sc)
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
		if sha && redis.HasErrorPrefix(ev.Err(), "NOSCRIPT") {
			s.scriptGen.CompareAndSwap(gen, gen+1)
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
		r.acked = int(n)
		return r, nil
	}
}

func (s *single) nextFence(ctx context.Context, key string) (reply, error) {
	return s.write(ctx, fenceNextScript(), []string{key}, 0)
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
	r, err := s.writeRaw(ctx, checkScript(), []string{key}, 0, decodeCheck, strconv.FormatInt(n, 10), token, mode)
	if err != nil {
		return r, err
	}
	// The record's fence, as the script read it: someone else's data
	// there is no number.
	if r.fence, err = strconv.ParseInt(r.value, 10, 64); err != nil {
		return reply{}, s.counterError(ctx, key, err)
	}
	return r, nil
}

// decodeCheck reads check.lua's replies: {code, fence}, the fence (the
// caller's when accepted, the record's when refused) left in value.
func decodeCheck(v any) (reply, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return reply{}, redisreply.Unexpected("fence check reply", v)
	}
	code, _ := a[0].(int64)
	return reply{code: code, value: fmt.Sprint(a[1]), acked: -1}, nil
}

// fenceOf reads a fence from a script reply: scripts return fences as
// decimal strings (see fence.lua), which no Lua double ever rounded.
func fenceOf(v any) (int64, error) {
	switch f := v.(type) {
	case string:
		return strconv.ParseInt(f, 10, 64)
	case int64:
		return f, nil
	}
	return 0, fmt.Errorf("not a fence: %v", v)
}

func (s *single) publish(ctx context.Context, channel string) error {
	return s.c.Publish(ctx, channel, "released").Err()
}

func (s *single) subscribe(ctx context.Context, channel string) (subscription, error) {
	return s.hub.subscribe(ctx, channel)
}

func (s *single) queued(channel string) int { return s.hub.queued(channel) }

// pttlDuration turns a PTTL reply into a duration: -1 when the key has no
// TTL (the lock never frees itself). A TTL someone set centuries ahead
// saturates at half the range, so that callers' small additions (a waiter
// retries at TTL+1ms) cannot overflow into the past.
func pttlDuration(ms int64) time.Duration {
	const most = math.MaxInt64 / 2 / int64(time.Millisecond)
	switch {
	case ms < 0:
		return -1
	case ms > most:
		ms = most
	}
	return time.Duration(ms) * time.Millisecond
}

func isInt(v any) bool {
	_, ok := v.(int64)
	return ok
}

// decode reads the reply shapes the lock scripts document.
func decode(v any) (reply, error) {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return reply{}, redisreply.Unexpected("script reply", v)
	}
	r := reply{acked: -1}
	r.code, ok = a[0].(int64)
	if !ok || r.code < 0 || r.code > 5 { // the scripts' codes are 0..5 (5: a release whose wake-up was refused)
		return reply{}, redisreply.Unexpected("script reply", v)
	}
	bad := func() (reply, error) { return reply{}, redisreply.Unexpected("script reply", v) }
	switch {
	case len(a) == 2 && isInt(a[1]): // {code, n}
		r.num = a[1].(int64)
	case len(a) == 3 && r.code == 1: // acquired: fence, ms
		var err error
		if r.fence, err = fenceOf(a[1]); err != nil {
			return bad()
		}
		if r.nowMS, ok = a[2].(int64); !ok {
			return bad()
		}
	case len(a) == 3 && r.code == 2: // same token: value, ms
		if r.value, ok = a[1].(string); !ok {
			return bad()
		}
		if r.nowMS, ok = a[2].(int64); !ok {
			return bad()
		}
	case len(a) >= 2: // held: type[, value|fields, pttl]
		if r.typ, ok = a[1].(string); !ok {
			return bad()
		}
		if len(a) == 4 {
			switch p := a[2].(type) {
			case string:
				r.value = p
			case []any:
				r.fields = make(map[string]string, len(p)/2)
				for i := 0; i+1 < len(p); i += 2 {
					r.fields[fmt.Sprint(p[i])] = fmt.Sprint(p[i+1])
				}
			default:
				return bad()
			}
			pttl, ok := a[3].(int64)
			if !ok {
				return bad()
			}
			r.pttl = pttlDuration(pttl)
		}
	}
	return r, nil
}

// lazyScript defers a script's source concatenation and SHA-1 to its first
// use: every lockctl invocation links all the scripts, and most run one or
// two of them.
func lazyScript(src func() string) func() *redis.Script {
	return sync.OnceValue(func() *redis.Script { return redis.NewScript(src()) })
}
