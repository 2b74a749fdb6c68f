package lock

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

// run is AcquireMulti's first attempt, then its wait (o.Wait), as
// attempt.run is Acquire's.
func (a *setAttempt) run(ctx context.Context, o *AcquireOptions) (*Lease, error) {
	lease, held, err := a.try(ctx)
	late := isLate(err)
	switch {
	case lease != nil:
		return lease, nil
	case err != nil && o.Wait != 0 && o.RetryFor > 0 && transient(err) && ctx.Err() == nil:
		return a.wait(ctx, o, err)
	case err != nil && !late:
		return nil, err
	}
	o.observe(late, held, err)
	if o.Wait == 0 || (!a.deadline.IsZero() && !a.l.clock.Now().Before(a.deadline)) {
		if late {
			return nil, err
		}
		return nil, newHeldError(ErrNotObtained, held)
	}
	return a.wait(ctx, o, nil)
}

// wait is attempt.waitFrom for a set: it subscribes to the release channel
// of every name and to this waiter's own channel of every name (a release
// that picks this waiter wakes it alone, wake.lua) before trying again, so
// that no release between the refusal and the subscriptions is missed, and
// sleeps until one of them, the poll, or the refusing holder's TTL. down is
// the first attempt's error when it failed on the way to Redis.
func (a *setAttempt) wait(ctx context.Context, o *AcquireOptions, down error) (*Lease, error) {
	var downSince time.Time
	if down != nil {
		downSince = a.l.clock.Now()
	}
	wake, stop := a.subscribe(ctx)
	sl := &setSleep{l: a.l, wake: wake, stop: stop}
	defer sl.close()
	w := &waiting{l: a.l, key: a.keys[0], token: a.args.token, deadline: a.deadline, slow: &a.slow, try: a.try}
	return w.loop(ctx, o, true, down, downSince, sl)
}

// setSleep is a set's sleeper: it sleeps until a release on one of the
// set's channels, or the poll. A set keeps no FIFO place and has no
// shared holders to pass a wake-up on to.
type setSleep struct {
	l    *Locker
	wake <-chan struct{}
	stop func()
}

func (s *setSleep) longest(bool) time.Duration { return s.l.poll }

func (s *setSleep) sleep(ctx context.Context, d time.Duration) (time.Duration, error) {
	return 0, sleepOn(ctx, s.l, d, s.wake, nil)
}

func (s *setSleep) fifo(string, int64) {}
func (s *setSleep) passOn()            {}
func (s *setSleep) close()             { s.stop() }

// A set is never handed its locks: each attempt takes them all at once.
func (s *setSleep) claim(context.Context) (*handGrant, error) { return nil, nil }
func (s *setSleep) unclaim()                                  {}

// subscribe subscribes to every channel a release of one of the set's
// names may wake this waiter on, and merges their wake-ups into one
// channel. Without pub/sub (an ACL without it, say) the channel never
// fires and the wait polls; so it does for the names after a subscription
// that failed. stop closes the subscriptions.
func (a *setAttempt) subscribe(ctx context.Context) (wake <-chan struct{}, stop func()) {
	sctx, cancel := ctx, context.CancelFunc(func() {})
	if !a.deadline.IsZero() {
		sctx, cancel = context.WithTimeout(ctx, a.deadline.Sub(a.l.clock.Now()))
	}
	defer cancel()
	merged := make(chan struct{}, 1)
	done := make(chan struct{})
	var subs []subscription
subscribing:
	for _, key := range a.keys {
		for _, ch := range []string{lockwire.Channel(key), lockwire.WaiterChannel(key, a.args.token)} {
			sub, err := a.l.b.subscribe(sctx, ch)
			if err != nil {
				// Refused, or Redis unreachable (each further attempt
				// would wait for its confirmation in vain): the
				// subscriptions made still wake, the poll does the rest.
				break subscribing
			}
			sub.named(a.args.token)
			subs = append(subs, sub)
			go func(c <-chan struct{}) {
				for {
					select {
					case <-c:
						select {
						case merged <- struct{}{}:
						default:
						}
					case <-done:
						return
					}
				}
			}(sub.C())
		}
	}
	return merged, func() {
		close(done)
		for _, sub := range subs {
			// Waiting is over; a failed close cannot change its outcome.
			_ = sub.Close()
		}
	}
}
