package inspect

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// Detail is one lock in full.
type Detail struct {
	Name string
	Key  string
	// Lock is the holder, nil when the lock key does not exist (the lock
	// is free, or is a --limit lock whose holders are in Holders).
	Lock *Lock
	// Raw is the stored value of a string lock; Fields the hash of a
	// Redisson lock.
	Raw    string
	Fields map[string]string
	// Fence is the lock's fencing counter (0 when none was ever issued).
	FenceKey string
	Fence    int64
	// Subscribers wait on the release channel (and Redisson's, for a
	// Redisson lock).
	Subscribers int64
	// Queue holds the FIFO waiters in arrival order.
	QueueKey string
	Queue    []Waiter
	// Holders are the live holders of a counting (--limit) lock (Kind
	// "semaphore") or the shared holders of a lock taken in shared mode
	// (Kind "shared"), earliest acquisition first; Limit is the largest
	// bound semaphore holders passed (every holder should pass the same;
	// Holders[i].Limit has each one's), 0 for shared holders.
	SemKey    string
	SemValKey string
	Holders   []Lock
	Limit     int64
	// Writers are the exclusive acquirers waiting for the lock, soonest
	// expiry first. While any is listed no new shared holder gets in (see
	// lock.AcquireOptions.Shared), so they explain a shared acquire that
	// waits though only shared holders, or nobody, hold the lock.
	WritersKey string
	Writers    []Writer
	// RedissonQueueKey is where a Redisson fair lock (RFairLock) keeps its
	// waiters; RedissonQueued counts those still waiting (whose place has
	// not timed out).
	RedissonQueueKey string
	RedissonQueued   int64
	// RWHolds are the holds of a Redisson read-write lock, one per holding
	// thread and mode (Mode ModeRead or ModeWrite), in field order; Lock
	// then sums them up (Owner every holding thread, Mode the lock's).
	RWHolds []Lock
}

// Held reports whether anyone holds the lock.
func (d *Detail) Held() bool { return d.Lock != nil || len(d.Holders) > 0 }

// Mode is how the lock is held: ModeExclusive, ModeShared or ModeSemaphore
// (see Lock.Mode); "" when it is free.
func (d *Detail) Mode() string {
	switch {
	case d.Lock != nil:
		return d.Lock.Mode()
	case len(d.Holders) > 0:
		return d.Holders[0].Mode()
	}
	return ""
}

// Writer is one exclusive acquirer waiting for a lock. The list stores only
// its token and an expiry that each of its attempts pushes on, so a writer
// is known by its token hash and how long it stays listed.
type Writer struct {
	TokenHash string
	// Expires is the server time it drops off the list unless it tries
	// again; TTL is how long that is from now.
	Expires time.Time
	TTL     time.Duration
}

// Waiter is one entry of a FIFO queue. The queue stores only the waiter's
// token (its owner is written when it acquires), so a waiter is known by
// its token hash, its arrival and its heartbeat.
type Waiter struct {
	TokenHash string
	// Arrived is the server time it joined the queue; Waiting how long ago.
	Arrived time.Time
	Waiting time.Duration
	// Heartbeat is how long it keeps its place without another attempt;
	// 0 when it has stopped trying (dead) and will be dropped by the next
	// attempt of anyone; -1 when no heartbeat is recorded.
	Heartbeat time.Duration
}

// Lock describes the lock called name in full. A free lock is not an error:
// Detail.Held is false. Errors: *lock.DataError (lock.ErrWrongType) when the key holds
// something that is not a lock; lock.ErrInvalid; Redis errors.
func (in *Inspector) Lock(ctx context.Context, name string) (*Detail, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty lock name", lock.ErrInvalid)
	}
	key := in.Key(name)
	d := &Detail{Name: name, Key: key, FenceKey: lockwire.AuxKey(lockwire.KindFence, key),
		QueueKey: lockwire.AuxKey(lockwire.KindQueue, key), SemKey: lockwire.AuxKey(lockwire.KindSem, key),
		SemValKey: lockwire.AuxKey(lockwire.KindSemVal, key), WritersKey: lockwire.AuxKey(lockwire.KindWriters, key),
		RedissonQueueKey: redissonQueue(key)}
	clk, err := serverClock(ctx, in.c)
	if err != nil {
		return nil, fmt.Errorf("inspect: %s: %w", key, err)
	}
	// One round trip; all these keys share the lock key's cluster slot.
	p := in.c.Pipeline()
	typ := p.Type(ctx, key)
	pttl := p.PTTL(ctx, key)
	get := p.Get(ctx, key)
	hs := redisson(ctx, p, key)
	fence := p.Get(ctx, d.FenceKey)
	queue := p.ZRangeWithScores(ctx, d.QueueKey, 0, -1)
	hb := p.ZRangeWithScores(ctx, lockwire.AuxKey(lockwire.KindQueueHB, key), 0, -1)
	sem := liveHolders(ctx, p, key, clk.now())
	semVals := p.HGetAll(ctx, d.SemValKey)
	writers := liveMembers(ctx, p, d.WritersKey, clk.now())
	fair := fairWaiters(ctx, p, key, clk)
	listed := announced(ctx, p, key)
	numsub := p.PubSubNumSub(ctx, lockwire.Channel(key), redissonChannel(key), redissonRWChannel(key))
	shardsub := p.PubSubShardNumSub(ctx, redissonChannel(key), redissonRWChannel(key))
	if _, err := p.Exec(ctx); pipeErr(err) != nil {
		return nil, fmt.Errorf("inspect: %s: %w", key, err)
	}
	for _, c := range []redis.Cmder{typ, pttl, get, fence, queue, hb, sem, semVals, writers, numsub} {
		if err := cmdErr(c); err != nil {
			return nil, fmt.Errorf("inspect: %s: %w", key, err)
		}
	}
	// Redisson's fair-lock queue lives outside lockctl's key patterns: a
	// user whose ACL has only those still sees the lock, without the count
	// of Redisson's queue.
	if err := cmdErr(fair); err != nil && !isNoPerm(err) {
		return nil, fmt.Errorf("inspect: %s: %w", key, err)
	}
	d.Fence, _ = fence.Int64()
	d.Subscribers = max(numsub.Val()[lockwire.Channel(key)], listed.Val())
	d.Queue = waiters(queue.Val(), hb.Val(), clk)
	d.Writers = writersOf(writers.Val(), clk)
	d.RedissonQueued = fair.Val()
	queued := int64(len(d.Queue)) + d.RedissonQueued
	ttl := ttlOf(pttl.Val())
	switch t := typ.Val(); t {
	case "none":
	case "string":
		d.Raw = get.Val()
		l := in.record(parseValue(key, d.Raw, ttl), clk, d.Subscribers, queued)
		d.Lock = &l
	case "hash":
		fields, ok := redissonFields(hs)
		h, ok2 := parseRedissonAny(key, fields, ttl)
		if !ok || !ok2 {
			return nil, &lock.DataError{Key: key, Type: t, Want: "a lock", Err: lock.ErrWrongType}
		}
		d.Fields = fields
		// Redisson's own waiters, on its channel (sharded on a Redis 7
		// Cluster; SHARDNUMSUB fails before Redis 7, counting none); a
		// read-write lock's on a channel of its own.
		ch := redissonChannel(key)
		if h.RWMode != "" {
			ch = redissonRWChannel(key)
		}
		d.Subscribers += numsub.Val()[ch] + shardsub.Val()[ch]
		l := in.record(h, clk, d.Subscribers, queued)
		d.Lock = &l
		if hs, ok := parseRedissonRW(key, fields, ttl); ok {
			for _, h := range hs {
				d.RWHolds = append(d.RWHolds, in.record(h, clk, d.Subscribers, queued))
			}
		}
	default:
		return nil, &lock.DataError{Key: key, Type: t, Want: "a lock", Err: lock.ErrWrongType}
	}
	d.Holders = in.semHolders(key, sem.Val(), semVals.Val(), clk, d.Subscribers, queued)
	for i, h := range d.Holders {
		d.Limit = max(d.Limit, h.Limit)
		d.Holders[i].Process = checkProcess(h)
	}
	if d.Lock != nil {
		d.Lock.Process = checkProcess(*d.Lock)
	}
	return d, nil
}

// fairWaiters queues a count of the waiters of a Redisson fair lock at key
// whose place has not timed out (Redisson drops those at its next
// attempt): its timeouts hold one member per waiter of its queue, scored
// by the time it gives up (Redisson's clients' clocks in ms; the server's
// stands in).
func fairWaiters(ctx context.Context, p redis.Pipeliner, key string, clk clock) *redis.IntCmd {
	return p.ZCount(ctx, redissonTimeouts(key), "("+strconv.FormatInt(clk.now().UnixMilli(), 10), "+inf")
}

// waiters turns the queue (token -> arrival in server µs) and heartbeats
// (token -> expiry in server ms) into Waiters in arrival order.
func waiters(queue, hb []redis.Z, clk clock) []Waiter {
	if len(queue) == 0 {
		return nil
	}
	now := clk.now()
	beats := make(map[string]float64, len(hb))
	for _, z := range hb {
		if s, ok := z.Member.(string); ok {
			beats[s] = z.Score
		}
	}
	out := make([]Waiter, 0, len(queue))
	for _, z := range queue {
		token, _ := z.Member.(string)
		w := Waiter{TokenHash: TokenHash(token), Arrived: time.UnixMicro(int64(z.Score)).UTC(), Heartbeat: -1}
		if w.Waiting = now.Sub(w.Arrived); w.Waiting < 0 {
			w.Waiting = 0
		}
		if exp, ok := beats[token]; ok {
			w.Heartbeat = max(0, time.UnixMilli(int64(exp)).Sub(now))
		}
		out = append(out, w)
	}
	return out
}

// writersOf turns the live members of the writers list (token -> expiry in
// server ms) into Writers, soonest expiry first (the zset's order).
func writersOf(zs []redis.Z, clk clock) []Writer {
	if len(zs) == 0 {
		return nil
	}
	now := clk.now()
	out := make([]Writer, 0, len(zs))
	for _, z := range zs {
		token, _ := z.Member.(string)
		exp := time.UnixMilli(int64(z.Score)).UTC()
		out = append(out, Writer{TokenHash: TokenHash(token), Expires: exp, TTL: max(0, exp.Sub(now))})
	}
	return out
}
