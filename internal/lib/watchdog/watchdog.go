// Package watchdog keeps a lease alive: it renews it in the background and
// decides locally, by the lease rule of internal/lib/leasetime, when it is lost.
// pkg/lock's Lease.Watch runs one; pkg/once's claims and lockctl's runner
// run theirs directly.
package watchdog

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/events"
)

// Renewer extends a lease. Renew returns the TTL the lease now has; an
// error matching lock.ErrNotHeld, ErrNotOwner, ErrWrongType or ErrInvalid
// (or a *PanicError) means the lease is gone for good.
type Renewer interface {
	Renew(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error)
}

// RenewFunc is a function as a Renewer.
type RenewFunc func(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error)

// Renew calls f.
func (f RenewFunc) Renew(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error) {
	return f(ctx, name, token, ttl)
}

// Options tune a Watchdog; pkg/lock's WatchdogOptions carries the first
// ones. A nil *Options takes every default.
type Options struct {
	// RenewEvery is the renewal period; 0 means leasetime.DefaultRenewEvery(ttl). It
	// must leave room for at least one renewal before the deadline:
	// RenewEvery < ttl-Margin.
	RenewEvery time.Duration
	// Margin is how long before the lease would expire on the server the
	// lease already counts as lost; 0 means leasetime.DefaultMargin(ttl).
	Margin time.Duration
	// Clock drives the watchdog's schedules; nil is the real, monotonic clock.
	Clock leasetime.Clock
	// RetryMin and RetryMax bound the back-off between attempts after a
	// failed renewal; 0 means 100ms and min(1s, RenewEvery, Margin/3).
	RetryMin, RetryMax time.Duration
	// OnRenewError, if set, is called (from the watchdog's goroutine) with
	// every renewal error that does not lose the lease.
	OnRenewError func(error)
	// Events, if set, receives renew_failed and lease_lost.
	Events events.Sink
	// RenewNow asks, at each receive, for a renewal at once (RenewNow).
	RenewNow <-chan struct{}
	// OnRenew, if set, is called (from the watchdog's goroutine) after each
	// renewal that counts, with the lease's new local deadline.
	OnRenew func(deadline time.Time)
	// Lost builds the error a loss is reported with: expired says the
	// deadline passed, err is the refusal or the last error seen. Nil
	// builds a plain error.
	Lost func(expired bool, err error) error
	// OnLost, if set, is called once, from the watchdog's goroutine, after
	// the loss is recorded (Err) and delivered (Lost).
	OnLost func()
}

// Watchdog keeps a lease alive by renewing it in the background and decides
// locally when it is lost.
//
// The lease counts as held until deadline = S + ttl - margin, where S is the
// send time of the last successful renewal (or of the acquire). Counting
// from the send time is what makes the rule safe: the server applied the
// renewal at or after S, so its copy of the lease outlives the deadline by
// at least the margin, however long the reply took. For the same reason a
// reply processed after the deadline is no proof of anything (the process
// may have been stopped, or the network slow, while the server's lease ran
// out and someone else took and released the lock) and the lease is lost.
// The clock is monotonic, so a process that was SIGSTOPped past the
// deadline finds it passed at its first wake-up after SIGCONT and reports
// the loss before anything else.
//
// A renewal answered "not held", "not owner" or "wrong type" is a loss at
// once. Other errors (Redis unreachable, timeouts, a failover under way)
// are retried with a short back-off until the deadline.
//
// Each attempt's context ends at the deadline (or, if sooner, two periods
// and at least ttl/3 after it was sent): no renewal call outlives the lease. After a failed
// attempt the next goes out at once (a failover, a redirect or a closed
// connection is usually over by the next call, which dials afresh), then
// with the back-off.
//
// A *ReplicationError (Options.WaitReplicas) means the master applied the
// renewal but fewer replicas than asked acknowledged it. Such a renewal
// does not count: the master that took it may be one that a failover has
// already replaced (cut off from its replicas and Sentinels, it still takes
// writes), where a second client holds the lock on the promoted replica.
// It is retried with the short back-off and reported through OnRenewError,
// and the deadline stays where the last acknowledged renewal put it: if
// no renewal is acknowledged before it, the lease is lost.
type Watchdog struct {
	r                  Renewer
	name, token        string
	ttl, every, margin time.Duration
	retryMin, retryMax time.Duration
	onErr              func(error)
	onRenew            func(time.Time)
	lostErr            func(expired bool, err error) error
	events             events.Sink
	clk                leasetime.Clock
	lost               chan error
	kick               chan struct{}
	stop               chan struct{}
	stopOnce           sync.Once
	done               chan struct{}
	mu                 sync.Mutex
	renewals           int64
	deadline           time.Time
	err                error
	renewNow           <-chan struct{}
	onLost             func()
}

// Start starts renewing name's lease, held with token, with r, for ttl at
// a time. since is the send time of the command that acquired (or last
// renewed) the lease; zero means "now", which is later than the truth and
// so gives a later deadline: callers pass the time they took just before
// sending the acquire. opt may be nil. Cancelling ctx stops it like Stop
// (cancellation is not a loss).
func Start(ctx context.Context, r Renewer, name, token string, ttl time.Duration, since time.Time, opt *Options) (*Watchdog, error) {
	w, since, err := newWatchdog(r, name, token, ttl, since, opt)
	if err != nil {
		return nil, err
	}
	go w.run(ctx, since)
	return w, nil
}

// newWatchdog is Start without the start: the watchdog and the
// send time its schedule counts from.
func newWatchdog(r Renewer, name, token string, ttl time.Duration, since time.Time, opt *Options) (*Watchdog, time.Time, error) {
	if opt == nil {
		opt = &Options{}
	}
	w := &Watchdog{
		r: r, name: name, token: token, ttl: ttl,
		every: opt.RenewEvery, margin: opt.Margin,
		retryMin: opt.RetryMin, retryMax: opt.RetryMax,
		onErr: opt.OnRenewError, onRenew: opt.OnRenew,
		lostErr: opt.Lost, onLost: opt.OnLost, renewNow: opt.RenewNow,
		clk:  opt.Clock,
		lost: make(chan error, 1),
		kick: make(chan struct{}, 1),
		stop: make(chan struct{}),
		done: make(chan struct{}),
	}
	w.events = opt.Events
	if r == nil || token == "" {
		return nil, time.Time{}, fmt.Errorf("%w: watchdog needs a renewer and a token", lockwire.ErrInvalid)
	}
	if ttl <= 0 {
		return nil, time.Time{}, fmt.Errorf("%w: ttl %v", lockwire.ErrInvalid, ttl)
	}
	if w.clk == nil {
		w.clk = leasetime.Real()
	}
	if w.margin == 0 {
		w.margin = leasetime.DefaultMargin(ttl)
	}
	if w.every == 0 {
		w.every = leasetime.DefaultRenewEvery(ttl)
	}
	if w.margin < 0 || w.margin >= ttl {
		return nil, time.Time{}, fmt.Errorf("%w: margin %v must be in [0, ttl %v)", lockwire.ErrInvalid, w.margin, ttl)
	}
	if w.every <= 0 || w.every >= ttl-w.margin {
		return nil, time.Time{}, fmt.Errorf("%w: renew period %v must be shorter than ttl-margin %v", lockwire.ErrInvalid, w.every, ttl-w.margin)
	}
	if w.retryMin <= 0 {
		w.retryMin = 100 * time.Millisecond
	}
	if w.retryMax <= 0 {
		w.retryMax = max(min(time.Second, w.every, w.margin/3), w.retryMin)
	}
	if since.IsZero() {
		since = w.clk.Now()
	}
	w.deadline = leasetime.Deadline(since, ttl, w.margin)
	return w, since, nil
}

// Lost delivers one *LostError when the lease is lost. It is never closed,
// so it stays quiet after Stop.
func (w *Watchdog) Lost() <-chan error { return w.lost }

// Err is the *LostError once the lease is lost, else nil.
func (w *Watchdog) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// Renewals counts successful renewals.
func (w *Watchdog) Renewals() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.renewals
}

// Deadline is the moment the lease counts as lost unless renewed before.
func (w *Watchdog) Deadline() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.deadline
}

// Margin is the safety margin in use: at the deadline the server still
// holds the lease for at least this long.
func (w *Watchdog) Margin() time.Duration { return w.margin }

// Held reports whether the lease still counts as held right now. Callers
// that are about to release can use it to tell "released" from "was
// already lost".
func (w *Watchdog) Held() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err == nil && w.clk.Now().Before(w.deadline)
}

// RenewNow asks for a renewal at once, or, while one is in flight, for
// another as soon as it is answered (the one in flight may have gone to a
// server that is no longer the master). A caller that learns the master
// changed uses it: renewals the old master took after the promotion never
// reach the new one, whose copy of the lease runs out at its TTL from the
// last renewal it did get, so waiting for the next period can lose a lease
// that a renewal now would keep. It never blocks.
func (w *Watchdog) RenewNow() {
	select {
	case w.kick <- struct{}{}:
	default:
	}
}

// Stop ends renewals and waits until no renewal is in flight, so a release
// that follows cannot race a renewal. It is safe to call more than once and
// after a loss.
func (w *Watchdog) Stop() {
	w.stopOnce.Do(func() { close(w.stop) })
	<-w.done
}

type renewal struct {
	sent time.Time
	ttl  time.Duration
	err  error
}

// fatal errors mean the lease is gone for good: retrying cannot help. A
// late renewal reply is not one of them: the watchdog's own deadline, which
// has passed by then too, decides.
func fatal(err error) bool {
	if errors.Is(err, lockwire.ErrLate) {
		return false
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		return true
	}
	return errors.Is(err, lockwire.ErrNotHeld) || errors.Is(err, lockwire.ErrNotOwner) ||
		errors.Is(err, lockwire.ErrWrongType) || errors.Is(err, lockwire.ErrInvalid)
}

// schedule is the renewal loop's state between wake-ups: when to renew
// next, the run of failures behind it, and a RenewNow that came while a
// renewal was in flight.
type schedule struct {
	next     time.Time
	failures int
	lastErr  error
	kicked   bool
}

func (w *Watchdog) run(ctx context.Context, since time.Time) {
	defer close(w.done)
	defer w.recoverLoss()
	results := make(chan renewal, 1)
	var cancel context.CancelFunc // non-nil while a renewal is in flight
	defer func() {
		if cancel != nil {
			cancel()
			<-results
		}
	}()
	s := &schedule{next: since.Add(w.every)}
	for {
		// The deadline check comes first on every wake-up: after a
		// SIGSTOP/SIGCONT nothing else may be trusted before it.
		now := w.clk.Now()
		w.mu.Lock()
		deadline := w.deadline
		w.mu.Unlock()
		if !now.Before(deadline) {
			if cancel != nil {
				// The renewal in flight can no longer count.
				w.record(ctx, events.RenewFailed)
			}
			w.lose(ctx, w.lossOf(true, s.lastErr))
			return
		}
		if cancel == nil && !now.Before(s.next) {
			cancel = w.startRenewal(ctx, results, now, deadline)
		}
		wake := deadline
		if cancel == nil && s.next.Before(wake) {
			wake = s.next
		}
		t := w.clk.NewTimer(wake.Sub(now))
		select {
		case <-t.C():
		case <-w.stop:
			t.Stop()
			return
		case <-ctx.Done():
			t.Stop()
			return
		case <-w.kick:
			t.Stop()
			w.kicked(s, cancel != nil)
		case <-w.renewNow:
			t.Stop()
			w.kicked(s, cancel != nil)
		case res := <-results:
			t.Stop()
			cancel()
			cancel = nil
			if !w.settle(ctx, res, deadline, s) {
				return
			}
		}
	}
}

// recoverLoss, deferred by run, turns a panic of the watchdog into the
// lease's loss: nobody renews any more, so the holder must stop now, not
// die with its work still running.
func (w *Watchdog) recoverLoss() {
	r := recover()
	if r == nil {
		return
	}
	err := w.lossOf(false, &PanicError{Where: "watchdog", Value: r, Stack: debug.Stack()})
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	select {
	case w.lost <- err:
	default: // a loss was delivered already
	}
	if w.onLost != nil {
		w.onLost()
	}
}

// startRenewal sends a renewal in the background, its reply (or its
// panic) to results, and returns what cancels it.
//
// No renewal outlives the deadline; one that hangs (a stalled node, a dead
// connection) gives way to a fresh attempt after two periods, and never
// sooner than ttl/3, which leaves a renewal's WAIT (at most ttl/6) its
// time. (A timeout rather than a deadline: w.clk may not be the wall
// clock.)
func (w *Watchdog) startRenewal(ctx context.Context, results chan<- renewal, now, deadline time.Time) context.CancelFunc {
	rctx, cancel := context.WithTimeout(ctx, earliest(deadline, now.Add(max(2*w.every, w.ttl/3))).Sub(now))
	go func(sent time.Time) {
		defer func() {
			if r := recover(); r != nil {
				results <- renewal{sent: sent, err: &PanicError{Where: "renewal", Value: r, Stack: debug.Stack()}}
			}
		}()
		ttl, err := w.r.Renew(rctx, w.name, w.token, w.ttl)
		results <- renewal{sent: sent, ttl: ttl, err: err}
	}(now)
	return cancel
}

// settle applies a renewal's reply, given while the lease's deadline was
// deadline, to the schedule s. It returns false when the loop ends: the
// lease is lost for good, or ctx is done.
func (w *Watchdog) settle(ctx context.Context, res renewal, deadline time.Time, s *schedule) bool {
	if !w.clk.Now().Before(deadline) {
		// Too late to count, whatever it says: the loop top reports the
		// loss.
		if res.err != nil {
			s.lastErr = res.err
		}
		w.record(ctx, events.RenewFailed)
		return true
	}
	switch {
	case res.err == nil:
		s.next = w.renewed(res)
		s.failures, s.lastErr = 0, nil
	case errors.Is(res.err, lockwire.ErrNotReplicated):
		// Applied on a master whose replicas did not confirm it: no
		// proof that the lock is still this lease's anywhere a failover
		// would look. The deadline stays; ask again soon.
		s.failures++
		s.lastErr = res.err
		s.next = w.clk.Now().Add(w.backoff(s.failures))
		w.report(res.err)
		w.record(ctx, events.RenewFailed)
	case fatal(res.err):
		w.record(ctx, events.RenewFailed)
		w.lose(ctx, w.lossOf(false, res.err))
		return false
	case ctx.Err() != nil:
		return false
	default:
		s.failures++
		s.lastErr = res.err
		s.next = w.clk.Now().Add(w.backoff(s.failures))
		if s.failures == 1 {
			// The first failure of a run is retried at once: a closed or
			// reset connection (a Sentinel client closes those to a
			// demoted master), a MOVED or ASK the client could not
			// follow, a timeout on a node that a failover replaced: the
			// next call dials afresh and follows the new slot map or
			// master, so it costs one round trip and can save the lease.
			// Failures after it back off.
			s.next = w.clk.Now()
		}
		w.report(res.err)
		w.record(ctx, events.RenewFailed)
	}
	if s.kicked {
		s.kicked = false
		s.next = w.clk.Now()
	}
	return true
}

// renewed moves the deadline on by a successful renewal (by the TTL the
// server reports when it is shorter than the lease's) and returns when to
// renew next.
func (w *Watchdog) renewed(res renewal) time.Time {
	ttl := w.ttl
	if res.ttl > 0 && res.ttl < ttl {
		ttl = res.ttl
	}
	w.mu.Lock()
	if d := leasetime.Deadline(res.sent, ttl, w.margin); d.After(w.deadline) {
		w.deadline = d
	}
	w.renewals++
	d := w.deadline
	w.mu.Unlock()
	if w.onRenew != nil {
		w.onRenew(d)
	}
	return res.sent.Add(w.every)
}

func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (w *Watchdog) backoff(failures int) time.Duration {
	d := w.retryMin
	for i := 1; i < failures && d < w.retryMax; i++ {
		d *= 2
	}
	return min(d, w.retryMax)
}

func (w *Watchdog) report(err error) {
	if w.onErr != nil {
		w.onErr(err)
	}
}

func (w *Watchdog) record(ctx context.Context, kind string) {
	if w.events != nil {
		w.events.Record(ctx, events.Event{Kind: kind, Name: w.name})
	}
}

func (w *Watchdog) lose(ctx context.Context, err error) {
	w.mu.Lock()
	w.err = err
	w.mu.Unlock()
	w.record(ctx, events.LeaseLost)
	w.lost <- err
	if w.onLost != nil {
		w.onLost()
	}
}

// kicked schedules the renewal RenewNow asks for: at once, or, while one
// is in flight, as soon as it is answered.
func (w *Watchdog) kicked(s *schedule, inFlight bool) {
	if inFlight {
		s.kicked = true
	} else {
		s.next = w.clk.Now()
	}
}

// lossOf builds the error a loss is reported with (Options.Lost).
func (w *Watchdog) lossOf(expired bool, err error) error {
	if w.lostErr != nil {
		return w.lostErr(expired, err)
	}
	if expired {
		return fmt.Errorf("%s lost: no renewal succeeded before the lease's local deadline (last error: %v)", w.name, err)
	}
	return fmt.Errorf("%s lost: renewal refused: %w", w.name, err)
}

// PanicError reports that code a Watchdog runs in the background (its
// loop, or the renewal it calls) panicked. The Watchdog then reports the
// lease as lost with it, so that the caller stops the protected work
// instead of the process dying with it still running: a bug, in lockctl or
// in what a watchdog renews with.
type PanicError struct {
	Where string // "watchdog" or "renewal"
	Value any    // what was passed to panic
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("lock: panic in the %s: %v (a bug)", e.Where, e.Value)
}
