package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// Detail is one lock in full.
type Detail struct {
	Name string
	Key  string
	// Lock is the holder, nil when the lock key does not exist (the lock
	// is free, or is a --limit lock whose holders are in Semaphore).
	Lock *Lock
	// Raw is the stored value of a string lock; Fields the hash of a
	// Redisson lock.
	Raw    string
	Fields map[string]string
	// Fence is the lock's fencing counter (0 when none was ever issued).
	FenceKey string
	Fence    int64
	// Subscribers wait on the release channel.
	Subscribers int64
	// Queue holds the FIFO waiters in queue order.
	QueueKey string
	Queue    []Member
	// Semaphore holds the holders of a counting (--limit) lock.
	SemKey    string
	Semaphore []Member
}

// Held reports whether anyone holds the lock.
func (d *Detail) Held() bool { return d.Lock != nil || len(d.Semaphore) > 0 }

// Member is one entry of a queue or semaphore: the stored member, its score
// (sorted sets only) and the holder it describes when it is a lock value.
type Member struct {
	Value string
	Score float64
	// Owner is the owner recorded in a lockctl value, or "" when the
	// member is a bare token.
	Owner string
	Token string
}

// Lock describes the lock called name in full. A free lock is not an error:
// Detail.Lock is nil. Errors: *lock.WrongTypeError when the key holds
// something that is not a lock; lock.ErrInvalid; Redis errors.
func (in *Inspector) Lock(ctx context.Context, name string) (*Detail, error) {
	if name == "" {
		return nil, fmt.Errorf("%w: empty lock name", lock.ErrInvalid)
	}
	key := in.Key(name)
	d := &Detail{Name: name, Key: key, FenceKey: lock.AuxKey(lock.KindFence, key),
		QueueKey: lock.AuxKey(lock.KindQueue, key), SemKey: lock.AuxKey(lock.KindSem, key)}
	clk, err := serverClock(ctx, in.c)
	if err != nil {
		return nil, fmt.Errorf("inspect: %s: %w", key, err)
	}
	p := in.c.Pipeline()
	typ := p.Type(ctx, key)
	pttl := p.PTTL(ctx, key)
	get := p.Get(ctx, key)
	hs := redisson(ctx, p, key)
	fence := p.Get(ctx, d.FenceKey)
	qt := p.Type(ctx, d.QueueKey)
	st := p.Type(ctx, d.SemKey)
	numsub := p.PubSubNumSub(ctx, lock.Channel(key))
	if _, err := p.Exec(ctx); pipeErr(err) != nil {
		return nil, fmt.Errorf("inspect: %s: %w", key, err)
	}
	for _, c := range []redis.Cmder{typ, pttl, get, fence, qt, st, numsub} {
		if err := cmdErr(c); err != nil {
			return nil, fmt.Errorf("inspect: %s: %w", key, err)
		}
	}
	d.Fence, _ = fence.Int64()
	d.Subscribers = numsub.Val()[lock.Channel(key)]
	ttl := ttlOf(pttl.Val())
	switch t := typ.Val(); t {
	case "none":
	case "string":
		d.Raw = get.Val()
		l := in.record(lock.ParseValue(key, d.Raw, ttl), clk, d.Subscribers, 0)
		d.Lock = &l
	case "hash":
		fields, ok := redissonFields(hs)
		h, ok2 := lock.ParseRedisson(key, fields, ttl)
		if !ok || !ok2 {
			return nil, &lock.WrongTypeError{Key: key, Type: t}
		}
		d.Fields = fields
		l := in.record(h, clk, d.Subscribers, 0)
		d.Lock = &l
	default:
		return nil, &lock.WrongTypeError{Key: key, Type: t}
	}
	if d.Queue, err = members(ctx, in.c, d.QueueKey, qt.Val()); err != nil {
		return nil, err
	}
	if d.Semaphore, err = members(ctx, in.c, d.SemKey, st.Val()); err != nil {
		return nil, err
	}
	if d.Lock != nil {
		d.Lock.Queued = int64(len(d.Queue))
	}
	return d, nil
}

// members reads a queue or semaphore key in order: a sorted set by score,
// a list head first.
func members(ctx context.Context, c redis.UniversalClient, key, typ string) ([]Member, error) {
	var out []Member
	switch typ {
	case "zset":
		zs, err := c.ZRangeWithScores(ctx, key, 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("inspect: %s: %w", key, err)
		}
		for _, z := range zs {
			out = append(out, member(key, fmt.Sprint(z.Member), z.Score))
		}
	case "list":
		vs, err := c.LRange(ctx, key, 0, -1).Result()
		if err != nil {
			return nil, fmt.Errorf("inspect: %s: %w", key, err)
		}
		for _, v := range vs {
			out = append(out, member(key, v, 0))
		}
	}
	return out, nil
}

func member(key, v string, score float64) Member {
	m := Member{Value: v, Score: score}
	h := lock.ParseValue(key, v, time.Duration(-1))
	m.Token = h.Token
	if h.Kind == "lockctl" {
		m.Owner = h.Owner
	}
	return m
}
