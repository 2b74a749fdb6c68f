package lock

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// hub shares one pub/sub connection among all waiters of a Locker, so that
// waiting costs no connection per Acquire and a release wakes one local
// waiter, not all of them.
//
// Waiters of one channel queue in arrival order; a release message wakes
// the first of them that has no wake-up pending. A waiter that leaves with
// an unused wake-up hands it on, so a release is never lost to a waiter that
// gave up. The connection closes when the last waiter leaves.
//
// A release that knows which waiter can take the lock (wake.lua) names it
// ("next <token>"): only that waiter wakes, in whichever process it waits,
// and every other waiter in every process sleeps on. A release that names
// nobody ("released") wakes one waiter per process, as follows.
//
// FIFO waiters are ordered by the lock's queue in Redis instead, which alone
// decides who may take the lock: a release wakes the FIFO waiter that
// arrived there first. Waking any other would be wasted, and the head would
// sleep until its polling timer. A FIFO waiter whose arrival is not known
// yet (its attempt is on its way) is woken too, since it may be the head.
type hub struct {
	c   redis.UniversalClient
	mu  sync.Mutex
	cur *hubConn
	// noPattern: the server refused a pattern subscription (psubscribe);
	// waiters subscribe to their own channels one by one.
	noPattern atomic.Bool
}

// hubConn is one pub/sub connection's state; a new connection starts from
// scratch, so a dispatcher that outlives its connection touches only its own.
type hubConn struct {
	ps     *redis.PubSub
	refs   int
	topics map[string]*topic
}

type topic struct {
	ready   chan struct{} // closed when the server confirmed the subscription
	isReady bool
	err     error // set before ready is closed when SUBSCRIBE failed
	waiters []*hubSub
}

type hubSub struct {
	h       *hub
	hc      *hubConn
	t       *topic
	channel string
	wake    chan struct{}
	closed  bool

	// A FIFO waiter's place in the queue: its arrival (server µs, 0 when
	// not known yet) and token, the tie-break ZRANK uses.
	isFIFO  bool
	arrival int64
	token   string

	// hand: a release of this Locker may hand the waiter the lock
	// (handoff.go); nil when it may not. tried: an attempt of the waiter
	// was made since it subscribed (handoff.go's wakeLocal).
	hand  *handSlot
	tried bool
}

// maxIdleTopics bounds the channels kept subscribed without waiters; below
// it they stay, so the next waiter on a busy lock needs no SUBSCRIBE.
const maxIdleTopics = 64

// confirmTimeout bounds the wait for a subscription confirmation; a waiter
// that does not get one polls instead.
const confirmTimeout = 5 * time.Second

// healthInterval is how long the connection may stay silent before a PING
// checks it.
const healthInterval = 10 * time.Second

var errNoConfirmation = errors.New("no subscription confirmation")

func (s *hubSub) C() <-chan struct{} { return s.wake }

// passOn leaves a wake-up pending, which Close hands on to the next waiter.
func (s *hubSub) passOn() { s.signal() }

// named gives the waiter its token, by which a release may wake it alone.
func (s *hubSub) named(token string) {
	s.h.mu.Lock()
	s.token = token
	s.h.mu.Unlock()
}

func (s *hubSub) fifo(token string, arrival int64) {
	s.h.mu.Lock()
	s.isFIFO, s.token, s.arrival = true, token, arrival
	s.h.mu.Unlock()
}

// queued is the number of waiters of channel in this process.
func (h *hub) queued(channel string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil {
		return 0
	}
	if t := h.cur.topics[channel]; t != nil && t.isReady {
		return len(t.waiters)
	}
	return 0
}

func (h *hub) subscribe(ctx context.Context, channel string) (subscription, error) {
	return h.join(ctx, channel)
}

// patternTopic starts the name of a topic that is a pattern subscription
// (psubscribe): no channel starts so.
const patternTopic = "\x00"

// psubscribe subscribes to the channels that match pattern, for the
// waiter to which a message on one of them names (next <token>), as
// subscribe does for one channel: the waiters of one lock in one process
// share one pattern for their own channels (lockwire.WaiterChannel),
// subscribed once, rather than subscribing to a channel each.
func (h *hub) psubscribe(ctx context.Context, pattern string) (subscription, error) {
	return h.join(ctx, patternTopic+pattern)
}

// failPatterns ends the wait of every pattern topic of hc not confirmed
// yet with err.
func (h *hub) failPatterns(hc *hubConn, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for name, t := range hc.topics {
		if strings.HasPrefix(name, patternTopic) && !t.isReady && t.err == nil {
			t.err = err
			delete(hc.topics, name)
			close(t.ready)
		}
	}
}

// join subscribes the waiter to topic: a channel, or a pattern after
// patternTopic.
func (h *hub) join(ctx context.Context, channel string) (subscription, error) {
	h.mu.Lock()
	hc := h.cur
	if hc == nil {
		hc = &hubConn{ps: h.c.Subscribe(context.WithoutCancel(ctx)), topics: map[string]*topic{}}
		h.cur = hc
		go h.dispatch(hc)
	}
	hc.refs++
	s := &hubSub{h: h, hc: hc, channel: channel, wake: make(chan struct{}, 1)}
	t := hc.topics[channel]
	if t == nil {
		t = &topic{ready: make(chan struct{})}
		hc.topics[channel] = t
		// Written under the lock so that SUBSCRIBE and UNSUBSCRIBE of one
		// channel reach the server in the order the hub decided them.
		subscribe := hc.ps.Subscribe
		name, isPattern := strings.CutPrefix(channel, patternTopic)
		if isPattern {
			subscribe = hc.ps.PSubscribe
		}
		if err := subscribe(ctx, name); err != nil {
			delete(hc.topics, channel)
			t.err = err
			close(t.ready)
		}
	}
	s.t = t
	t.waiters = append(t.waiters, s)
	h.mu.Unlock()

	timer := time.NewTimer(confirmTimeout)
	defer timer.Stop()
	select {
	case <-t.ready:
		if t.err != nil {
			// The subscription failed: its error is the one to report, not
			// whatever closing the half-made connection says.
			_ = s.Close()
			return nil, t.err
		}
		return s, nil
	case <-ctx.Done():
		_ = s.Close() // as above: the context's end is what counts
		return nil, ctx.Err()
	case <-timer.C:
		_ = s.Close() // as above: the missing confirmation is what counts
		return nil, errNoConfirmation
	}
}

// dispatch reads the connection itself rather than through
// PubSub.Channel: one goroutine hop less between a release and the waiter
// it wakes. Receive reconnects and resubscribes after a broken connection.
func (h *hub) dispatch(hc *hubConn) {
	ctx := context.Background()
	for {
		m, err := hc.ps.ReceiveTimeout(ctx, healthInterval)
		if err != nil {
			if errors.Is(err, redis.ErrClosed) {
				return
			}
			var rerr redis.Error
			if errors.As(err, &rerr) {
				// A refused subscription (an ACL): the reply names no
				// topic. The pattern topics not confirmed yet fail at
				// once, as their waiters subscribe to their own channels
				// instead; a channel's waits for its confirmation.
				h.failPatterns(hc, rerr)
				continue
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				// Quiet for a while: a PING finds a dead connection
				// (its write fails and the next Receive reconnects).
				_ = hc.ps.Ping(ctx)
			} else {
				time.Sleep(100 * time.Millisecond)
			}
			continue
		}
		switch m := m.(type) {
		case *redis.Subscription:
			topic := m.Channel
			switch m.Kind {
			case "subscribe":
			case "psubscribe":
				topic = patternTopic + m.Channel
			default:
				continue
			}
			h.mu.Lock()
			if t := hc.topics[topic]; t != nil {
				if !t.isReady {
					t.isReady = true
					close(t.ready)
				} else {
					// A resubscription after a reconnect: releases may
					// have been published while the connection was down.
					for _, s := range t.waiters {
						s.signal()
					}
				}
			}
			h.mu.Unlock()
		case *redis.Message:
			topic := m.Channel
			if m.Pattern != "" {
				topic = patternTopic + m.Pattern
			}
			h.mu.Lock()
			if t := hc.topics[topic]; t != nil {
				if token, ok := strings.CutPrefix(m.Payload, "next "); ok {
					t.wakeToken(token)
				} else {
					t.wakeOne()
				}
			}
			h.mu.Unlock()
		}
	}
}

// wakeOne wakes the first plain waiter without a pending wake-up, and the
// FIFO waiter nearest the head of the queue with every FIFO waiter whose
// place is not known yet. Called with h.mu.
func (t *topic) wakeOne() {
	plain := false
	var head *hubSub
	for _, s := range t.waiters {
		switch {
		case !s.isFIFO:
			if !plain {
				plain = s.signal()
			}
		case s.arrival == 0:
			s.signal()
		case head == nil || s.arrival < head.arrival || (s.arrival == head.arrival && s.token < head.token):
			head = s
		}
	}
	if head != nil {
		head.signal()
	}
}

// wakeToken wakes the waiter a release named (wake.lua), if it waits in
// this process; the others sleep on. Called with h.mu.
func (t *topic) wakeToken(token string) {
	for _, s := range t.waiters {
		if s.token == token {
			s.signal()
			return
		}
	}
}

func (s *hubSub) signal() bool {
	select {
	case s.wake <- struct{}{}:
		return true
	default:
		return false
	}
}

func (s *hubSub) Close() error {
	h := s.h
	h.mu.Lock()
	if s.closed {
		h.mu.Unlock()
		return nil
	}
	s.closed = true
	t, hc := s.t, s.hc
	for i, w := range t.waiters {
		if w == s {
			t.waiters = append(t.waiters[:i], t.waiters[i+1:]...)
			break
		}
	}
	select {
	case <-s.wake:
		t.wakeOne() // hand on a wake-up this waiter will not use
	default:
	}
	if len(t.waiters) == 0 && t.isReady && hc.topics[s.channel] == t && len(hc.topics) > maxIdleTopics {
		delete(hc.topics, s.channel)
		if p, ok := strings.CutPrefix(s.channel, patternTopic); ok {
			_ = hc.ps.PUnsubscribe(context.Background(), p)
		} else {
			_ = hc.ps.Unsubscribe(context.Background(), s.channel)
		}
	}
	hc.refs--
	if hc.refs > 0 {
		h.mu.Unlock()
		return nil
	}
	if h.cur == hc {
		h.cur = nil
	}
	h.mu.Unlock()
	return hc.ps.Close()
}
