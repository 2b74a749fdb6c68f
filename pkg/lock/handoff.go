package lock

import (
	"context"
	_ "embed"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

// Hand-off: a release by a Locker whose own waiters wait for the lock (in
// its hub, hub.go) names one of them, and the release script grants that
// waiter the lock in the same call when it is the one a release would let
// in (handoff.lua): the FIFO queue's live head, or, for a plain waiter,
// one with nobody listed before it. The releaser then passes the grant's
// fence to the waiter in memory. A hand-off costs the release's round trip
// only, where a wake-up costs the release, the wake-up's delivery and the
// woken waiter's own attempt.
//
// The grant is made for a waiter that is alive by construction: it waits
// in the releasing process, and is marked offered before the script runs,
// which keeps its own attempts (and its giving up) out of the way until
// the releaser says how the call ended. A waiter that gave up meanwhile
// leaves its grant to the releaser, which releases it at once, handing it
// on in turn. The lease's deadline counts from the release's send time,
// which comes before the grant, as an attempt's counts from its own.

var (
	//go:embed handoff_fast.lua
	handoffFastLua string
	//go:embed handoff.lua
	handoffLua string

	handoffScript = lazyScript("handoff", func() string {
		return lockwire.ValueHeadLua + handoffFastLua + lockwire.ValueRestLua + fenceLua + holderLua + auxLua + lockwire.WakeLua + handoffLua
	})
)

// handSlot is a hub waiter's readiness to take the lock from a release of
// its Locker. token, rest and ttl are its attempt's; the rest is guarded
// by the hub's mu.
type handSlot struct {
	token, rest string
	ttl         time.Duration

	state handState
	// trying: the waiter's own attempt is on its way; no release offers
	// it the lock meanwhile, as the attempt may take it too.
	trying  bool
	settled chan struct{} // closed when the offer under way ends
	grant   handGrant
}

type handState uint8

const (
	handIdle    handState = iota
	handOffered           // a release is handing the lock to the waiter
	handGranted           // and did: grant is the waiter's, not taken yet
	handGone              // the waiter left while offered: the releaser gives a grant back
)

// handGrant is a grant made by a release: its fence, the server's time
// of it, and the release's send time on the Locker's clock.
type handGrant struct {
	fence, ms int64
	sent      time.Time
}

// offerable lets a release hand this waiter the lock (a plain exclusive
// waiter of a single-server backend).
func (s *hubSub) offerable(token, rest string, ttl time.Duration) {
	s.h.mu.Lock()
	s.hand = &handSlot{token: token, rest: rest, ttl: ttl}
	s.h.mu.Unlock()
}

// offer picks the waiter of channel that a release may hand the lock to
// and marks it offered: the FIFO waiter nearest the head of the queue
// when any waits in FIFO order, else the first waiter; nil when none can
// take it (none offerable, or the one in turn is trying on its own).
func (h *hub) offer(channel string) (s *hubSub, fifo bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil {
		return nil, false
	}
	t := h.cur.topics[channel]
	if t == nil || !t.isReady {
		return nil, false
	}
	for _, w := range t.waiters {
		fifo = fifo || w.isFIFO
	}
	for _, w := range t.waiters {
		if fifo {
			if w.isFIFO && w.arrival > 0 && (s == nil || w.arrival < s.arrival || (w.arrival == s.arrival && w.token < s.token)) {
				s = w
			}
			continue
		}
		s = w
		break
	}
	if s == nil || s.closed || s.hand == nil || s.hand.state != handIdle || s.hand.trying {
		return nil, false
	}
	s.hand.state, s.hand.settled = handOffered, make(chan struct{})
	return s, fifo
}

// settle ends the offer to s: handed says whether the release granted it
// g. It reports a grant that s left behind, which the caller gives back.
func (h *hub) settle(s *hubSub, handed bool, g handGrant) (orphan bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	hs := s.hand
	close(hs.settled)
	gone := hs.state == handGone
	hs.state = handIdle
	if !handed {
		return false
	}
	if gone {
		return true
	}
	hs.state, hs.grant = handGranted, g
	s.signal()
	return false
}

// wakeLocal wakes the first waiter of channel that has made no attempt
// yet, and so is not listed (it queued behind this Locker's waiters): a
// release names only listed waiters, and need not publish when nobody is
// listed, so a release of this Locker, or a waiter of it that leaves
// without the lock, wakes it.
func (h *hub) wakeLocal(channel string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cur == nil {
		return
	}
	if t := h.cur.topics[channel]; t != nil && t.isReady {
		for _, s := range t.waiters {
			if !s.tried && !s.closed {
				s.signal()
				return
			}
		}
	}
}

// claim is called before the waiter's own attempt: it returns a grant
// handed to the waiter, if any, or marks the attempt under way (unclaim
// ends it). An offer under way is waited for; ctx ending meanwhile leaves
// the offer's grant, if any, to the releaser.
func (s *hubSub) claim(ctx context.Context) (*handGrant, error) {
	hs := s.hand
	if hs == nil {
		return nil, nil
	}
	h := s.h
	for {
		h.mu.Lock()
		switch hs.state {
		case handGranted:
			g := hs.grant
			hs.state = handIdle
			h.mu.Unlock()
			return &g, nil
		case handOffered:
			ch := hs.settled
			h.mu.Unlock()
			select {
			case <-ch:
				continue
			case <-ctx.Done():
				h.mu.Lock()
				if hs.state == handOffered {
					hs.state = handGone
				}
				h.mu.Unlock()
				return nil, ctx.Err()
			}
		default:
			hs.trying = true
			h.mu.Unlock()
			return nil, nil
		}
	}
}

// unclaim ends an attempt of the waiter, which listed it if refused.
func (s *hubSub) unclaim() {
	s.h.mu.Lock()
	s.tried = true
	if s.hand != nil {
		s.hand.trying = false
	}
	s.h.mu.Unlock()
}

// leave takes the waiter out of the hand-offs before it closes: an offer
// under way leaves its grant to the releaser, and a grant not taken is
// returned for the caller to give back.
func (s *hubSub) leave() *handGrant {
	hs := s.hand
	if hs == nil {
		return nil
	}
	s.h.mu.Lock()
	defer s.h.mu.Unlock()
	switch hs.state {
	case handOffered:
		hs.state = handGone
	case handGranted:
		g := hs.grant
		hs.state = handIdle
		return &g
	}
	return nil
}

// releaseHanding is a plain lock's release by token on a single-server
// backend, which hands the lock to a waiter of this Locker when one may
// take it (handoff.lua), and otherwise wakes whom a release wakes, this
// Locker's first waiter included.
func (l *Locker) releaseHanding(ctx context.Context, s *single, key, token string) (reply, error) {
	channel := lockwire.Channel(key)
	w, fifo := s.hub.offer(channel)
	if w == nil {
		return s.release(ctx, key, token, nil)
	}
	hs := w.hand
	keys := lockwire.WithAux(key, lockwire.KindSem, lockwire.KindQueue, lockwire.KindQueueHB, lockwire.KindWriters,
		lockwire.KindWaiting, lockwire.KindChannel, lockwire.KindWake, lockwire.KindFence)
	base, fence := keys[7], keys[8]
	keys = append(keys[:6:6], fence)
	flag := "0"
	if fifo {
		flag = "1"
	}
	sent := l.clock.Now()
	v, err := handoffScript().Run(ctx, s.c, keys, token, channel, base, hs.token, ms(hs.ttl), hs.rest, flag).Result()
	var r reply
	if err != nil {
		err = s.dataError(ctx, err, keys[:6]...)
	} else {
		r, err = lockwire.DecodeRelease(v)
	}
	handed := err == nil && r.Code == lockwire.ReleaseReleased && r.Fence > 0
	if s.hub.settle(w, handed, handGrant{fence: r.Fence, ms: r.NowMS, sent: sent}) {
		// The waiter gave up meanwhile: free its grant, for the next one.
		l.giveBackHanded(ctx, key, hs.token)
	}
	switch {
	case err != nil || handed:
	case (r.Code == lockwire.ReleaseReleased && r.Num == 0) || r.Code == lockwire.ReleaseNotWoken:
		// Nobody listed was woken by name: wake this Locker's waiter
		// that is not listed yet.
		s.hub.wakeLocal(channel)
	case r.Code == lockwire.ReleaseReleased:
		// A waiter listed before this Locker's was woken by name. This
		// Locker's first waiter not listed yet tries once the woken one
		// had its grace: refused, it is listed, and the release that
		// follows names it, wherever it is made (one with nobody listed
		// need not publish); else the one woken has died.
		time.AfterFunc(wakeGrace, func() { s.hub.wakeLocal(channel) })
	}
	r.Fence, r.NowMS, r.Num = 0, 0, 0
	return r, err
}

// giveBackHanded releases a grant that its waiter will not take.
func (l *Locker) giveBackHanded(ctx context.Context, key, token string) {
	gctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	_, _ = l.releaseKey(gctx, key, token, nil)
}

// take is the lease of a grant a release handed to the attempt, as once
// builds it from the acquire script's: the fence and the server's time of
// the grant, and the release's send time, before the grant, for its
// deadline. A grant that came too late to count is given back (a
// *LateError), and the wait goes on.
func (a *attempt) take(ctx context.Context, g handGrant) (*Lease, Holder, error) {
	now := time.UnixMilli(g.ms).UTC()
	lease := &Lease{name: a.name, key: a.key, token: a.args.token, ttl: a.args.ttl, sent: g.sent, holds: 1, l: a.l,
		owner: a.owner, note: a.note, fence: g.fence, acquiredAt: now, expiresAt: now.Add(a.args.ttl)}
	lease.waited = a.l.clock.Now().Sub(a.start)
	if err := a.l.late("acquire", a.key, lease.sent, lease.ttl); err != nil {
		a.giveBack(ctx, lease)
		return nil, Holder{}, err
	}
	return lease, Holder{}, nil
}
