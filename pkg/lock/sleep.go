package lock

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/redis/go-redis/v9"
)

// blockedOn bounds the waiters on one client that sleep on a wake-up stream
// of their own, each blocking a pooled connection while it sleeps (a lockctl
// process waits once, with one connection): to half the client's pool, so
// that the others always find a connection. Waiters beyond it share their
// Locker's one pub/sub connection (hub.go), so that a crowd of goroutines
// waiting in one process never drains the pool. Lockers on one client share
// the bound.
var blockedOn sync.Map // redis.UniversalClient -> chan struct{}

func blockedFor(c redis.UniversalClient) chan struct{} {
	if ch, ok := blockedOn.Load(c); ok {
		return ch.(chan struct{})
	}
	pool := 10 * runtime.GOMAXPROCS(0) // go-redis's default
	switch c := c.(type) {
	case *redis.Client:
		pool = c.Options().PoolSize
	case *redis.ClusterClient:
		pool = c.Options().PoolSize
	}
	ch, _ := blockedOn.LoadOrStore(c, make(chan struct{}, max(1, pool/2)))
	return ch.(chan struct{})
}

// wakeGrace is wake.lua's wakeGraceMS, with room for the woken waiter's
// attempt to arrive: a waiter told it is next in line ('2') looks again
// after it, in case the one woken before it died.
const wakeGrace = 500*time.Millisecond + 20*time.Millisecond

// streamSleep is a waiter sleeping on its wake-up stream (lockwire.WakeKey)
// with XREAD BLOCK: a release that can let it in appends to the stream
// (wake.lua), and the entries it has not read yet wake it at once, so a
// wake-up between a refusal and the read is not lost. It sleeps on the
// connection its attempts use: one per waiting process, and no pub/sub.
type streamSleep struct {
	s       *single
	channel string // the lock's, which names it in single.sleeping
	key     string
	last    string        // the ID of the last entry read
	beat    time.Duration // the listing's life: the waiter renews it in time
	// broken: the server refused XREAD (an ACL): the waiter sleeps on a
	// timer instead, bounded as a poll. Written by the read, read only
	// when no read is pending.
	broken bool
	poll   time.Duration
	// pending is a read still blocked when the last sleep ended (its timer
	// or its ctx), closed when the read returns woke; the next sleep waits
	// for it, and close frees the slot after it.
	pending  chan struct{}
	again    time.Duration
	timedOut bool
}

// streamSleeper returns a sleeper on token's wake-up stream, or nil when
// the client's waiters blocking a connection each are at their bound.
// listing is how long the waiter stays listed without a new attempt.
//
// A Locker lets one waiter per lock sleep so; its other waiters for that
// lock queue behind it in the hub, as they did behind each other (see
// attempt.run), so that a goroutine that releases and acquires again does
// not barge in ahead of the waiters of its own process.
func (s *single) streamSleeper(key, token string, listing, poll time.Duration) *streamSleep {
	if s.blocked == nil {
		return nil
	}
	channel := lockwire.Channel(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.sleeping[channel] {
		return nil
	}
	select {
	case s.blocked <- struct{}{}:
	default:
		return nil
	}
	if s.sleeping == nil {
		s.sleeping = map[string]bool{}
	}
	s.sleeping[channel] = true
	return &streamSleep{s: s, channel: channel, key: lockwire.WakeKey(key, token), last: "0-0", beat: listing, poll: poll}
}

// queued counts this Locker's waiters for the lock whose channel is
// channel: the hub's and the one asleep on its wake-up stream.
func (s *single) queued(channel string) int {
	n := s.hub.queued(channel)
	s.mu.Lock()
	if s.sleeping[channel] {
		n++
	}
	s.mu.Unlock()
	return n
}

// longest renews the listing (the queue's heartbeat) before it lapses: at
// two thirds of its life, or a third after a refusal without a holder's
// TTL, as a poll did, so that a waiter ahead that died costs no more than
// its listing's life.
func (w *streamSleep) longest(unheld bool) time.Duration {
	if unheld {
		return w.beat / 3
	}
	return w.beat * 2 / 3
}

func (w *streamSleep) sleep(ctx context.Context, d time.Duration) (time.Duration, error) {
	d = max(d, time.Millisecond)
	if w.pending == nil && w.broken {
		d = min(d, w.poll)
	}
	// The server ends a blocked read at its next cron tick after the block
	// time (every 100 ms at the default hz), not at the block time itself:
	// a timer of our own ends the sleep on time, and the read, still
	// blocked, carries on into the next sleep, which waits for it rather
	// than reading the stream twice at once.
	t := time.NewTimer(d)
	defer t.Stop()
	end := time.Now().Add(d)
	for {
		if w.pending == nil && w.broken {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-t.C:
				return 0, nil
			}
		}
		if w.pending == nil {
			w.pending = make(chan struct{})
			go func(done chan struct{}, d time.Duration) {
				defer close(done)
				w.again, w.timedOut = w.read(ctx, d)
			}(w.pending, max(time.Until(end), time.Millisecond))
		}
		select {
		case <-w.pending:
			w.pending = nil
			if w.timedOut && time.Until(end) > 0 {
				// A read left over from the last sleep ended on its
				// own time: sleep on for the rest of this one.
				continue
			}
			return w.again, nil
		case <-t.C:
			if d >= w.longest(false) {
				return w.settle(ctx)
			}
			return 0, nil
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
}

// settleFor is how long a sleep that only renews the listing waits for its
// read to end: the server ends it at its next cron tick after the block
// time.
const settleFor = 150 * time.Millisecond

// settle ends a sleep of the listing's whole renewal period, which nothing
// needs on time: it lets the read, which ends at the server's next cron
// tick, give its connection back first, so that the renewal's attempt
// takes that connection rather than opening another (a process waits with
// one connection).
func (w *streamSleep) settle(ctx context.Context) (time.Duration, error) {
	t := time.NewTimer(settleFor)
	defer t.Stop()
	select {
	case <-w.pending:
		w.pending = nil
		return w.again, nil
	case <-t.C:
		return 0, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

// read blocks up to d on the stream and says what woke it: 0 to try at
// once (a wake-up, the time out, an error), or, for a waiter next in line,
// the grace after which to look again; timedOut when nothing did.
func (w *streamSleep) read(ctx context.Context, d time.Duration) (again time.Duration, timedOut bool) {
	res, err := w.s.c.XRead(context.WithoutCancel(ctx), &redis.XReadArgs{Streams: []string{w.key, w.last}, Count: 4, Block: d}).Result()
	if errors.Is(err, redis.Nil) {
		return 0, true
	}
	if err != nil {
		var rerr redis.Error
		if errors.As(err, &rerr) && !transientReply(rerr.Error()) {
			// Refused (an ACL without XREAD or the key): polling still
			// works, only hand-offs are slower.
			w.broken = true
		} else {
			// Unreachable, say: the next attempt finds out, not at once.
			time.Sleep(min(d, transientDelay))
		}
		return 0, false
	}
	next := false
	for _, st := range res {
		for _, m := range st.Messages {
			w.last = m.ID
			if m.Values["w"] == "2" {
				next = true
				continue
			}
			return 0, false
		}
	}
	if next {
		return wakeGrace, false
	}
	return 0, false
}

func (w *streamSleep) fifo(string, int64) {}
func (w *streamSleep) passOn()            {}

func (w *streamSleep) claim(context.Context) (*handGrant, error) { return nil, nil }
func (w *streamSleep) unclaim()                                  {}

// close gives the slot back, after a read still blocked has ended.
func (w *streamSleep) close() {
	w.s.mu.Lock()
	delete(w.s.sleeping, w.channel)
	w.s.mu.Unlock()
	if w.pending == nil {
		<-w.s.blocked
		return
	}
	go func() {
		<-w.pending
		<-w.s.blocked
	}()
}
