package lock

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/redis/go-redis/v9"
)

// wait keeps trying until the lock is ours, the wait's deadline passes or
// ctx ends. It must not sleep through a release. On one server, Sentinel or
// Cluster a waiter sleeps on a wake-up stream of its own (streamSleeper),
// which the release that can let it in appends to: it is listed (in the
// queue, among the exclusive, shared or semaphore acquirers waiting) by the
// attempt that was refused, and reads the stream from its beginning, so a
// release between the two is not missed. It sleeps no later than the
// holder's TTL runs out (an expiry wakes nobody) and the wait's deadline,
// and wakes before its listing lapses to renew it (the queue's heartbeat).
// A Locker lets one waiter per lock sleep so (and a client half its pool);
// its other waiters, and Redlock's, listen on pub/sub instead (hubSleeper):
// such a waiter subscribes to the lock's channel first (and waits for the
// server's confirmation), then tries again, and polls no less often than
// PollInterval.
//
// retry false skips that first retry: the caller queued behind local
// waiters, one of which the next release wakes.
func (a *attempt) wait(ctx context.Context, o *AcquireOptions, retry bool) (*Lease, error) {
	return a.waitFrom(ctx, o, retry, nil)
}

// waitOut is wait after a first attempt that failed on the way to Redis
// with down (AcquireOptions.RetryFor).
func (a *attempt) waitOut(ctx context.Context, o *AcquireOptions, down error) (*Lease, error) {
	return a.waitFrom(ctx, o, true, down)
}

// transientDelay is the pause between attempts while Redis is unreachable.
const transientDelay = 200 * time.Millisecond

// transient tells a failure on the way to Redis, which a failover or a
// restart ends (AcquireOptions.RetryFor), from error replies and from
// lockctl's own refusals, which retrying cannot change.
func transient(err error) bool {
	var repl *ReplicationError
	if errors.As(err, &repl) {
		// The master granted, too few replicas acknowledged it in time,
		// and the grant was given back: replicas resyncing after a
		// failover catch up within seconds, so a waiter tries again.
		return true
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		// Replies a cluster or a server gives while it moves a slot
		// (TRYAGAIN), loads its dataset after a restart (LOADING), has
		// no master for a slot yet (CLUSTERDOWN, MASTERDOWN) or runs
		// another client's long script (BUSY, until it ends or SCRIPT
		// KILL ends it) pass, as a failover does.
		return transientReply(rerr.Error())
	}
	if err == nil || errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, context.Canceled) || isLate(err) {
		return false
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
}

// transientReplies are the error replies of a server or cluster in
// passing: a slot in migration, a dataset still loading, a slot without a
// master for the moment, a server blocked by someone's script. None of
// them ran the command, so trying it again is safe.
var transientReplies = []string{"TRYAGAIN ", "LOADING ", "CLUSTERDOWN ", "MASTERDOWN ", "BUSY "}

func transientReply(msg string) bool {
	for _, p := range transientReplies {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

// waitFrom is wait; down is the error of the attempt before, when it
// failed on the way to Redis.
func (a *attempt) waitFrom(ctx context.Context, o *AcquireOptions, retry bool, down error) (*Lease, error) {
	var sl sleeper
	if s, ok := a.l.b.(*single); ok && a.l.realTime && retry && !a.hubFirst {
		// Not on an injected Clock: a blocked read sleeps in server time.
		// Not without a first attempt either: only that lists the waiter,
		// so that a release wakes it; one that queues behind the local
		// waiters (retry false) waits with them in the hub.
		if ss := s.streamSleeper(a.key, a.args.token, a.l.queueTTL(), a.l.poll); ss != nil {
			sl = ss
		}
	}
	if sl == nil {
		hs, err := a.hubSleeper(ctx, retry, down)
		if err != nil {
			return nil, err
		}
		sl, retry = hs, hs.retry
	}
	var downSince time.Time
	if down != nil {
		downSince = a.l.clock.Now()
	}
	w := a.waiting()
	if _, ok := sl.(*streamSleep); ok && retry && down == nil && a.refused != nil {
		// The first attempt listed the waiter, and its stream keeps every
		// wake-up since: a second attempt now would only be refused again.
		w.refused, retry = a.refused, false
	}
	lease, err := w.loop(ctx, o, retry, down, downSince, sl)
	sl.close()
	if s, ok := a.l.b.(*single); ok && lease == nil {
		// Leaving without the lock: the waiters of this Locker queued
		// behind this one, not listed yet, must not wait for a release
		// that names them.
		s.hub.wakeLocal(lockwire.Channel(a.key))
	}
	return lease, err
}

// sleeper is how a waiter sleeps between attempts.
type sleeper interface {
	// longest is the longest sleep between attempts, whatever else bounds
	// it; unheld (a refusal without a holder's TTL: earlier FIFO waiters or
	// exclusive acquirers go first) asks for the bound of such a refusal.
	longest(unheld bool) time.Duration
	// sleep returns once woken, after d, or when ctx ends (ctx.Err()).
	// again > 0 asks for the next attempt no later than that after this
	// one: the waiter is next in line behind one that was woken.
	sleep(ctx context.Context, d time.Duration) (again time.Duration, err error)
	// fifo and passOn tell the hub about FIFO places and shared holds.
	fifo(token string, arrival int64)
	passOn()
	// claim, before an attempt, returns a grant a release of this Locker
	// handed the waiter (handoff.go), or marks the attempt under way
	// until unclaim; it fails only when ctx ends.
	claim(ctx context.Context) (*handGrant, error)
	unclaim()
	close()
}

// waiting is what the wait loop needs of an attempt, a lock's or a set's.
type waiting struct {
	l        *Locker
	key      string // names the lock (a set's first) when ctx ends
	token    string
	deadline time.Time   // as attempt's
	slow     **LateError // as attempt's, kept up to date by try
	// fifo: the waiter keeps a FIFO place; shared: holders enter together.
	fifo, shared bool
	try          func(context.Context) (*Lease, Holder, error)
	// take is the lease of a grant handed over (handoff.go); nil when
	// nothing hands this waiter a grant.
	take func(context.Context, handGrant) (*Lease, Holder, error)
	// refused is the refusal of an attempt made just before the loop,
	// whose wake-ups the sleeper keeps (a wake-up stream read from its
	// start): the loop sleeps first, as after a refusal of its own.
	refused *Holder
}

// waiting is the attempt as the wait loop sees it.
func (a *attempt) waiting() *waiting {
	return &waiting{l: a.l, key: a.key, token: a.args.token, deadline: a.deadline, slow: &a.slow,
		fifo: a.fifo, shared: a.shared, try: a.try, take: a.take}
}

// loop tries, and sleeps on sl between tries, until the lock is ours, the
// wait's deadline passes or ctx ends. down is the error of the attempt
// before, when it failed on the way to Redis (at downSince).
func (w *waiting) loop(ctx context.Context, o *AcquireOptions, retry bool, down error, downSince time.Time, sl sleeper) (*Lease, error) {
	deadline := w.deadline
	if w.fifo {
		// Before the next attempt: a release after it must find this
		// waiter marked.
		sl.fifo(w.token, 0)
	}
	var held Holder
	var late error // the last attempt's grant came too late to count
	var again time.Duration
	first := w.refused
	for {
		delay := sl.longest(false)
		if first != nil {
			held, first = *first, nil
			delay = w.afterRefusal(delay, held, sl)
		}
		if retry {
			g, err := sl.claim(ctx)
			if err != nil {
				return nil, ctxErr(ctx, w.key)
			}
			var lease *Lease
			var h Holder
			if g != nil {
				// A release of this Locker handed the lock over.
				lease, h, err = w.take(ctx, *g)
			} else {
				lease, h, err = w.try(ctx)
				sl.unclaim()
			}
			switch {
			case err != nil && o.RetryFor > 0 && transient(err) && ctx.Err() == nil:
				now := w.l.clock.Now()
				if downSince.IsZero() {
					downSince = now
				}
				if now.Sub(downSince) >= o.RetryFor {
					return nil, err
				}
				down = err
				delay = min(delay, transientDelay)
			case isLate(err):
				// Given back already; try again like any waiter. A FIFO
				// waiter left the queue with the grant: its place is
				// unknown until it joins again.
				late, down, downSince = err, nil, time.Time{}
				o.observe(true, Holder{}, err)
				if w.fifo {
					sl.fifo(w.token, 0)
				}
			case lease != nil || err != nil:
				if lease != nil && w.shared {
					// Shared holders enter together: the release that
					// woke this one may let in the next local waiter too.
					sl.passOn()
				}
				return lease, err
			default:
				held, late, down, downSince = h, nil, nil, time.Time{}
				if w.fifo {
					sl.fifo(w.token, h.arrival)
				}
				o.observe(false, held, nil)
				delay = w.afterRefusal(delay, held, sl)
			}
		}
		if again > 0 {
			delay, again = min(delay, again), 0
		}
		retry = true
		if !deadline.IsZero() {
			left := deadline.Sub(w.l.clock.Now())
			if left <= 0 {
				return nil, w.giveUp(down, late, held)
			}
			delay = min(delay, left)
		}
		var err error
		if again, err = sl.sleep(ctx, delay); err != nil {
			return nil, ctxErr(ctx, w.key)
		}
		if !deadline.IsZero() && !w.l.clock.Now().Before(deadline) {
			// The wait is over: an attempt now would take the lock
			// after its bound.
			return nil, w.giveUp(down, late, held)
		}
		if again > 0 {
			// Next in line behind a waiter just woken: give it its grace
			// before looking, unless woken meanwhile.
			retry = false
		}
	}
}

// afterRefusal bounds the sleep after a refusal by held: retry as the
// holder's key expires (the extra millisecond covers PTTL's rounding
// down), or, refused without a holder's TTL, by sl's bound for that.
func (w *waiting) afterRefusal(delay time.Duration, held Holder, sl sleeper) time.Duration {
	if held.TTL >= 0 {
		return min(delay, held.TTL+time.Millisecond)
	}
	return min(delay, sl.longest(true))
}

// giveUp is the error of a wait that ended without the lock: the server
// that was down, a grant that came too late, else the holder that kept it.
func (w *waiting) giveUp(down, late error, held Holder) error {
	switch {
	case down != nil:
		return down
	case late != nil && *w.slow != nil:
		// The attempt at the deadline had no time to re-confirm; one
		// before it found why it was late.
		return *w.slow
	case late != nil:
		return late
	}
	return newHeldError(ErrNotObtained, held)
}

// hubSleeper subscribes a waiter to the lock's channel (and, for a listed
// exclusive waiter, to its own) on the Locker's shared pub/sub connection.
// Without pub/sub (an ACL without it, say) it polls: only hand-offs are
// slower. Its retry is the waiter's retry, which a failed subscription
// turns on.
func (a *attempt) hubSleeper(ctx context.Context, retry bool, down error) (*hubSleep, error) {
	deadline := a.deadline
	// The subscription is bounded by the wait too: on a link slower than
	// the wait, polling is all the time left allows.
	sctx, scancel := ctx, context.CancelFunc(func() {})
	if !deadline.IsZero() {
		// On the Locker's clock, as the deadline is.
		sctx, scancel = context.WithTimeout(ctx, deadline.Sub(a.l.clock.Now()))
	}
	defer scancel()
	h := &hubSleep{l: a.l, key: a.key, deadline: deadline, retry: retry}
	sub, err := a.l.b.subscribe(sctx, lockwire.Channel(a.key))
	if err == nil && a.args.intent > 0 {
		// An exclusive waiter is listed, and a release that names it
		// publishes on a channel of its own (wake.lua), so that only its
		// process wakes. Without it (refused, say), the common channel
		// and the poll still wake it. One that queues behind this
		// process's waiters (retry false) is not listed until its first
		// attempt is refused: it subscribes then (sleep).
		if !retry {
			h.ownLater = a.args.token
		} else {
			h.subscribeOwn(sctx, a.args.token)
		}
	}
	if down != nil && err != nil {
		// Unreachable still: poll until it answers.
		sub, err = nil, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			h.close()
			return nil, ctxErr(ctx, a.key)
		}
		sub, h.retry = nil, true
	}
	if sub != nil {
		h.sub = sub
		sub.named(a.args.token)
		if hs, ok := sub.(*hubSub); ok && a.limit == 0 && !a.shared && a.l.replicas <= 0 {
			if _, ok := a.l.b.(*single); ok {
				// A release of this Locker may hand it the lock.
				hs.offerable(a.args.token, a.args.rest, a.args.ttl)
				h.hand = hs
			}
		}
	}
	return h, nil
}

type hubSleep struct {
	l        *Locker
	key      string
	deadline time.Time
	sub, own subscription
	hand     *hubSub // sub, when a release of this Locker may hand it the lock
	retry    bool
	// ownLater is the token whose own channel the waiter subscribes to
	// once an attempt of its was refused (tried), which listed it.
	ownLater string
	tried    bool
}

func (h *hubSleep) subscribeOwn(ctx context.Context, token string) {
	var o subscription
	err := errNoConfirmation
	if s, ok := h.l.b.(*single); ok && !s.hub.noPattern.Load() {
		// One pattern for the own channels of this Locker's waiters of
		// the lock, subscribed once: no SUBSCRIBE per waiter.
		o, err = s.hub.psubscribe(ctx, globEscape(lockwire.WaiterChannel(h.key, ""))+"*")
		if err != nil && ctx.Err() == nil {
			// Refused (an ACL without PSUBSCRIBE, say): a channel per
			// waiter, from now on.
			s.hub.noPattern.Store(true)
		}
	}
	if err != nil && ctx.Err() == nil {
		o, err = h.l.b.subscribe(ctx, lockwire.WaiterChannel(h.key, token))
	}
	if err == nil {
		h.own = o
		o.named(token)
	}
}

// globEscape quotes the characters special to a Redis pattern.
func globEscape(s string) string {
	if !strings.ContainsAny(s, `*?[]\`) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

func (h *hubSleep) claim(ctx context.Context) (*handGrant, error) {
	if h.hand == nil {
		return nil, nil
	}
	return h.hand.claim(ctx)
}

func (h *hubSleep) unclaim() {
	h.tried = true
	if s, ok := h.sub.(*hubSub); ok {
		s.unclaim()
	}
}

func (h *hubSleep) longest(bool) time.Duration { return h.l.poll }

func (h *hubSleep) sleep(ctx context.Context, d time.Duration) (time.Duration, error) {
	if h.ownLater != "" && h.tried && h.sub != nil {
		// Listed now: subscribe to the channel that names this waiter,
		// then try again at once, as a release between the refusal and
		// the subscription went unheard.
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if !h.deadline.IsZero() {
			sctx, cancel = context.WithTimeout(ctx, h.deadline.Sub(h.l.clock.Now()))
		}
		h.subscribeOwn(sctx, h.ownLater)
		cancel()
		h.ownLater = ""
		return 0, ctx.Err()
	}
	var wake, named <-chan struct{} // nil (never ready) without pub/sub
	if h.sub != nil {
		wake = h.sub.C()
	}
	if h.own != nil {
		named = h.own.C()
	}
	return 0, sleepOn(ctx, h.l, d, wake, named)
}

// sleepOn returns after d, when a or b (nil: never) is ready, or when ctx
// ends (ctx.Err()).
func sleepOn(ctx context.Context, l *Locker, d time.Duration, a, b <-chan struct{}) error {
	t := l.clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-a:
	case <-b:
	case <-t.C():
	}
	return nil
}

func (h *hubSleep) fifo(token string, arrival int64) {
	if h.sub != nil {
		h.sub.fifo(token, arrival)
	}
}

func (h *hubSleep) passOn() {
	if h.sub != nil {
		h.sub.passOn()
	}
}

// close leaves the hub: waiting is over, and a failed close cannot change
// its outcome.
func (h *hubSleep) close() {
	if h.hand != nil {
		if g := h.hand.leave(); g != nil {
			// Handed the lock after the wait ended: free it for the
			// next waiter.
			h.l.giveBackHanded(context.Background(), h.key, h.hand.hand.token)
		}
	}
	if h.own != nil {
		_ = h.own.Close()
	}
	if h.sub != nil {
		_ = h.sub.Close()
	}
}
