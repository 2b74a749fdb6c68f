package lock

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lockwire"
	"github.com/redis/go-redis/v9"
)

// wait keeps trying until the lock is ours, the wait's deadline passes or
// ctx ends. It must not sleep through a release: it subscribes to the
// lock's channel first (and waits for the server's confirmation), then
// tries again, so a release between the failed attempt and the
// subscription is seen by that retry and a release after it arrives as a
// message. Between messages it polls no later than the holder's TTL runs
// out (an expiry publishes nothing) and no less often than PollInterval.
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
	var downSince time.Time
	if down != nil {
		downSince = a.l.clock.Now()
	}
	deadline := a.deadline
	// The subscription is bounded by the wait too: on a link slower than
	// the wait, polling is all the time left allows.
	sctx, scancel := ctx, context.CancelFunc(func() {})
	if !deadline.IsZero() {
		// On the Locker's clock, as the deadline is.
		sctx, scancel = context.WithTimeout(ctx, deadline.Sub(a.l.clock.Now()))
	}
	sub, err := a.l.b.subscribe(sctx, lockwire.Channel(a.key))
	var own subscription
	if err == nil && a.args.intent > 0 {
		// An exclusive waiter is listed, and a release that names it
		// publishes on a channel of its own (wake.lua), so that only its
		// process wakes. Without it (refused, say), the common channel
		// and the poll still wake it.
		if o, oerr := a.l.b.subscribe(sctx, lockwire.WaiterChannel(a.key, a.args.token)); oerr == nil {
			own = o
			// Waiting is over when this returns; a failed close cannot
			// change its outcome.
			defer func() { _ = own.Close() }()
			own.named(a.args.token)
		}
	}
	scancel()
	if down != nil && err != nil {
		// Unreachable still: poll until it answers.
		sub, err = nil, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctxErr(ctx, a.key)
		}
		// No pub/sub (an ACL without it, say): polling still works, only
		// hand-offs are slower.
		sub, retry = nil, true
	}
	var wake <-chan struct{} // nil (never ready) without pub/sub
	if sub != nil {
		defer func() { _ = sub.Close() }() // as for own above
		wake = sub.C()
		sub.named(a.args.token)
		if a.fifo {
			// Before the next attempt: a release after it must find
			// this waiter marked.
			sub.fifo(a.args.token, 0)
		}
	}
	var named <-chan struct{} // nil (never ready) without a channel of its own
	if own != nil {
		named = own.C()
	}
	var held Holder
	var late error // the last attempt's grant came too late to count
	for {
		delay := a.l.poll
		if retry {
			lease, h, err := a.try(ctx)
			switch {
			case err != nil && o.RetryFor > 0 && transient(err) && ctx.Err() == nil:
				now := a.l.clock.Now()
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
				if o.OnLate != nil {
					o.OnLate(err)
				}
				if a.fifo && sub != nil {
					sub.fifo(a.args.token, 0)
				}
			case lease != nil || err != nil:
				if lease != nil && a.shared && sub != nil {
					// Shared holders enter together: the release that
					// woke this one may let in the next local waiter too.
					sub.passOn()
				}
				return lease, err
			default:
				held, late, down, downSince = h, nil, nil, time.Time{}
				if a.fifo && sub != nil {
					sub.fifo(a.args.token, h.arrival)
				}
				if o.OnBusy != nil {
					o.OnBusy(held)
				}
				if held.TTL >= 0 {
					// Retry as the key expires; the extra millisecond
					// covers PTTL's rounding down.
					delay = min(delay, held.TTL+time.Millisecond)
				}
			}
		}
		retry = true
		if !deadline.IsZero() {
			left := deadline.Sub(a.l.clock.Now())
			if left <= 0 {
				if down != nil {
					return nil, down
				}
				if late != nil && a.slow != nil {
					// The attempt at the deadline had no time to
					// re-confirm; one before it found why it was late.
					return nil, a.slow
				}
				if late != nil {
					return nil, late
				}
				return nil, newHeldError(ErrNotObtained, held)
			}
			delay = min(delay, left)
		}
		t := a.l.clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctxErr(ctx, a.key)
		case <-wake:
		case <-named:
		case <-t.C():
		}
		t.Stop()
	}
}
