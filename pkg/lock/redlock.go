package lock

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/redis/go-redis/v9"
)

// Redlock: a lock that lives on a majority of N independent masters (no
// replication between them), so that losing a minority of them, by a crash,
// a restart without persistence or a partition, neither loses the lock nor
// blocks it.
//
// Every call runs the single-server script on all N nodes in parallel, each
// bounded by a per-node timeout (Options.NodeTimeout), so a dead or paused
// node costs at most that long and never stalls the call. The quorum is
// N/2+1. What each call means under Redlock:
//
//   - Acquire succeeds when a quorum acquired (or already held the lock with
//     the same token) and the lease still counts as held by the rule every
//     lease follows (Lease.Deadline: the acquire's send time + ttl - margin
//     has not passed when the quorum's answers, fence write-back included,
//     are in). The margin, at least ttl/4 for leases of 200ms and more, is
//     also the allowance for the nodes' clocks running faster than ours.
//     A grant that comes too late is re-confirmed once, else released (see
//     Acquire). Otherwise Acquire releases whatever it took on every node and
//     reports the most common holder among the refusing nodes (*HeldError),
//     or *QuorumError when too few nodes answered.
//   - Renew succeeds when a quorum renewed. Otherwise ErrNotOwner (with the
//     holder) when a quorum reports another holder, *QuorumError when fewer
//     than a quorum answered, ErrNotHeld otherwise.
//   - Release deletes the token's key on every node that has it and
//     succeeds when any node deleted it (the rest expire by their TTL). When
//     none did: *QuorumError when fewer than a quorum answered, ErrNotOwner
//     when most answering nodes have another holder, ErrNotHeld otherwise.
//   - Get reports the lock free when a quorum of nodes has no lock (then an
//     Acquire can succeed), otherwise the most common holder, which may hold
//     only a minority: the lock is then unusable until those keys expire.
//   - Fences.Check accepts a fence only when a quorum of nodes accepted it.
//     Since each of them then refuses any lower fence, and the same fence
//     from any other token, every later check of such a fence by anyone but
//     its holder is refused by at least one node of every quorum, and so is
//     every lower fence, by everyone.
//   - Release wake-ups are published on every node and a waiter subscribes
//     on every node that answers: a message from any of them wakes it.
//
// Fencing. Each node keeps its own fence counter, and the counters drift
// apart (a node that was down missed increments). Taking the maximum of the
// fences a quorum returned is not enough: with counters A=10, B=1, C=1, a
// quorum {A,B} yields 11 and a later quorum {B,C} yields 2. So after a
// quorum acquired, Acquire writes the chosen fence F (the maximum) back:
// every acquiring node raises its counter to at least F and rewrites the
// stored value's fence to F, and a quorum must confirm that it still holds
// the token, or the acquire fails. Why that suffices: take a later
// acquisition that succeeds with its own write-back quorum Q2, and the
// write-back quorum Q1 of ours. Q1 and Q2 intersect in some node X (two
// majorities of the same N always do). X held our token at our write-back,
// so the later acquirer took X only after our key left X, after our
// write-back had raised X's counter to at least F; its new fence on X is
// more than F, and its own fence, the maximum over its quorum, is greater
// than F. Fences.Next does the same: a new fence on all nodes, F = the
// maximum of a quorum's answers, and F written back to a quorum before it
// returns.
//
// Each node issues max(its counter + 1, its clock in µs) (fence.lua), so a
// node restarted without persistence starts above what it issued before;
// the nodes' fences differ by their clocks, and the write-back evens them.
//
// Redlock's safety assumes bounded clock drift between the nodes and the
// client and bounded process pauses; a holder paused beyond its lease is not
// stopped by any of this. Fencing is what makes it safe.
//
// Semaphores (AcquireOptions.Limit), FIFO waiting (AcquireOptions.FIFO) and
// Options.WaitReplicas are not supported with Redlock.

var (
	//go:embed redlock_raise.lua
	raiseLua string

	raiseScript = lazyScript("raise", func() string { return lockwire.ValueLua + fenceLua + raiseLua })
)

// QuorumError reports that a Redlock call could not reach a quorum of nodes
// in time. It
// wraps every node's error, so errors.Is and errors.As find network errors
// and context.DeadlineExceeded among them.
type QuorumError struct {
	Reason string  // what fell short
	Errs   []error // the nodes' errors, each naming its node
}

func (e *QuorumError) Error() string {
	if len(e.Errs) == 0 {
		return "lock: " + e.Reason
	}
	msgs := make([]string, len(e.Errs))
	for i, err := range e.Errs {
		msgs[i] = err.Error()
	}
	return "lock: " + e.Reason + ": " + strings.Join(msgs, "; ")
}

// Unwrap returns ErrUnavailable, which a *QuorumError matches, and the
// nodes' errors.
func (e *QuorumError) Unwrap() []error { return causes(ErrUnavailable, e.Errs...) }

// NewRedlock returns a Locker whose locks live on a majority of the given
// independent masters. At least 3 are required, since with 2 the quorum is
// both and losing either stops every lock; an odd number is best (4
// tolerate the loss of one node, as 3 do). Each client must address a
// different server; go-redis retries (MaxRetries) should be off so that a
// node's reply comes within Options.NodeTimeout. opts may be nil;
// Options.WaitReplicas is refused, since Redlock's masters are meant to have
// no replicas to fail over to.
func NewRedlock(clients []redis.UniversalClient, opts *Options) (*Locker, error) {
	if opts == nil {
		opts = &Options{}
	}
	if len(clients) < 3 {
		return nil, fmt.Errorf("%w: Redlock needs at least 3 independent masters, got %d", ErrInvalid, len(clients))
	}
	if opts.WaitReplicas > 0 {
		return nil, fmt.Errorf("%w: WaitReplicas does not apply to Redlock (its masters have no replicas)", ErrInvalid)
	}
	if opts.NodeTimeout < 0 {
		return nil, fmt.Errorf("%w: negative node timeout %s", ErrInvalid, opts.NodeTimeout)
	}
	r := &redlock{quorum: len(clients)/2 + 1, timeout: opts.NodeTimeout}
	seen := map[string]bool{}
	for i, c := range clients {
		if c == nil {
			return nil, fmt.Errorf("%w: Redlock client %d is nil", ErrInvalid, i+1)
		}
		name := nodeName(c, i)
		if seen[name] {
			// The same server twice would count one vote as two.
			return nil, fmt.Errorf("%w: Redlock server %s is given twice", ErrInvalid, name)
		}
		seen[name] = true
		r.nodes = append(r.nodes, &single{c: c, hub: &hub{c: c}})
		r.names = append(r.names, name)
	}
	l := newLocker(opts)
	l.b = r
	return l, nil
}

func nodeName(c redis.UniversalClient, i int) string {
	if rc, ok := c.(*redis.Client); ok {
		return rc.Options().Addr
	}
	return fmt.Sprintf("node %d", i+1)
}

type redlock struct {
	nodes   []*single
	names   []string
	quorum  int
	timeout time.Duration // Options.NodeTimeout; 0 derives it
}

// leaseTimeout bounds each node's reply to a call that writes a lease of
// ttl: a tenth of it, so that one slow node leaves most of the lease valid,
// but at least 50ms, so that a busy but healthy node still counts, and at
// most 1s.
func (r *redlock) leaseTimeout(ttl time.Duration) time.Duration {
	if r.timeout > 0 {
		return r.timeout
	}
	return min(max(ttl/10, 50*time.Millisecond), time.Second)
}

// callTimeout bounds each node's reply to a call without a lease.
func (r *redlock) callTimeout() time.Duration {
	if r.timeout > 0 {
		return r.timeout
	}
	return time.Second
}

type nodeResult[T any] struct {
	node int
	v    T
	err  error
}

// each runs fn on the nodes numbered in idx (all when nil) in parallel and
// returns their results in that order. A node that has not answered within
// d counts as failed; its call is abandoned rather than awaited, whatever
// the client's own timeouts, and late, if set, receives a result that
// arrives after that.
func each[T any](ctx context.Context, r *redlock, idx []int, d time.Duration, fn func(context.Context, *single) (T, error), late func(T)) []nodeResult[T] {
	if idx == nil {
		idx = make([]int, len(r.nodes))
		for i := range idx {
			idx[i] = i
		}
	}
	res := make([]nodeResult[T], len(idx))
	var wg sync.WaitGroup
	for j, i := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			nctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			ch := make(chan nodeResult[T], 1)
			go func() {
				v, err := fn(nctx, r.nodes[i])
				ch <- nodeResult[T]{v: v, err: err}
			}()
			select {
			case x := <-ch:
				res[j] = x
			case <-nctx.Done():
				err := nctx.Err()
				if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
					err = fmt.Errorf("no reply within %s: %w", d, err)
				}
				res[j] = nodeResult[T]{err: err}
				if late != nil {
					go func() {
						if x := <-ch; x.err == nil {
							late(x.v)
						}
					}()
				}
			}
			res[j].node = i
			if res[j].err != nil {
				res[j].err = fmt.Errorf("%s: %w", r.names[i], res[j].err)
			}
		}()
	}
	wg.Wait()
	return res
}

// noQuorum reports a call that got fewer than a quorum of answers, with
// every node's error.
func noQuorum[T any](r *redlock, op string, res []nodeResult[T]) error {
	var errs []error
	for _, x := range res {
		if x.err != nil {
			errs = append(errs, x.err)
		}
	}
	return &QuorumError{
		Reason: fmt.Sprintf("%s: %d of %d Redlock nodes answered, %d needed", op, len(res)-len(errs), len(r.nodes), r.quorum),
		Errs:   errs,
	}
}

func answered[T any](res []nodeResult[T]) int {
	n := 0
	for _, x := range res {
		if x.err == nil {
			n++
		}
	}
	return n
}

func (r *redlock) acquire(ctx context.Context, key string, a acquireArgs) (reply, error) {
	d := r.leaseTimeout(a.ttl)
	// Shared mode does not exist under Redlock, so no shared acquirer
	// ever looks at waiting exclusive ones.
	a.intent = 0
	res := each(ctx, r, nil, d, func(ctx context.Context, s *single) (reply, error) {
		return s.acquire(ctx, key, a)
	}, nil)
	var got []nodeResult[reply]
	var refusals []reply
	for _, x := range res {
		switch {
		case x.err != nil:
		case x.v.Code == lockwire.AcquireAcquired || x.v.Code == lockwire.AcquireAgain:
			got = append(got, x)
		default:
			refusals = append(refusals, x.v)
		}
	}
	var err error
	if len(got) >= r.quorum {
		var rep reply
		if rep, err = r.fence(ctx, key, a, got, d); err == nil {
			return rep, nil
		}
	} else if len(got)+len(refusals) < r.quorum {
		err = noQuorum(r, "acquire", res)
	}
	// Not ours: give back what we took rather than block others until our
	// TTL, on every node, also those that did not answer in time (their
	// acquire may still run). Detached from ctx: an interrupted acquire
	// must clean up too.
	r.undo(ctx, key, a.token, d)
	if err != nil {
		return reply{}, err
	}
	return mostCommon(key, refusals), nil
}

// fence settles the fence of an acquisition that a quorum granted: the
// maximum of the acquiring nodes' fences, written back to them (see the
// comment at the top of this file). Whether the lease is still valid is
// the caller's rule, leasetime.Deadline, as for every backend.
func (r *redlock) fence(ctx context.Context, key string, a acquireArgs, got []nodeResult[reply], d time.Duration) (reply, error) {
	var f int64
	idx := make([]int, len(got))
	differ := false
	for i, x := range got {
		idx[i] = x.node
		n := x.v.Fence
		if x.v.Code == lockwire.AcquireAgain {
			n = parseValue(key, x.v.Value, 0).Fence
		}
		differ = differ || (i > 0 && n != f)
		f = max(f, n)
	}
	// When every acquiring node returned the same fence (the usual case:
	// counters in step), each already has a counter of at least F and
	// stores F, which is all the write-back would achieve.
	if differ {
		fs := strconv.FormatInt(f, 10)
		res := each(ctx, r, idx, d, func(ctx context.Context, s *single) (int64, error) {
			v, err := raiseScript().Run(ctx, s.c, []string{lockwire.AuxKey(lockwire.KindFence, key), key}, fs, lockwire.ValuePrefix(a.token), a.token).Result()
			if err != nil {
				return 0, err
			}
			return lockwire.DecodeRaise(v)
		}, nil)
		ok := 0
		for _, x := range res {
			if x.err == nil && x.v == lockwire.RaiseDone {
				ok++
			}
		}
		if ok < r.quorum {
			e := noQuorum(r, "fence write-back", res).(*QuorumError)
			e.Reason = fmt.Sprintf("fence write-back: %d of %d Redlock nodes confirmed, %d needed", ok, len(r.nodes), r.quorum)
			return reply{}, e
		}
	}
	// The earliest server time: ExpiresAt then errs on the early side.
	rep := reply{Code: lockwire.AcquireAcquired, Fence: f, Acked: -1}
	var first time.Time
	for _, x := range got {
		if rep.NowMS == 0 || x.v.NowMS < rep.NowMS {
			rep.NowMS = x.v.NowMS
		}
		if x.v.Code != lockwire.AcquireAgain {
			continue
		}
		// A retry with a token that already held the lock: its stored
		// value tells owner, note and acquisition time, the earliest of
		// which is the one the first attempt reported.
		if at := parseValue(key, x.v.Value, 0).AcquiredAt; rep.Code == lockwire.AcquireAcquired || at.Before(first) {
			rep.Code, rep.Value, first = lockwire.AcquireAgain, lockwire.SetFence(x.v.Value, f), at
		}
	}
	return rep, nil
}

func (r *redlock) undo(ctx context.Context, key, token string, d time.Duration) {
	each(context.WithoutCancel(ctx), r, nil, d, func(ctx context.Context, s *single) (reply, error) {
		return s.release(ctx, key, token, nil)
	}, nil)
}

// mostCommon picks, among refusals, the holder most nodes reported (the
// first of equals), with the shortest TTL any of them reported: the
// earliest moment a retry can succeed.
func mostCommon(key string, replies []reply) reply {
	id := func(r reply) string {
		h, err := holderOf(r, key)
		if err != nil {
			return r.Type
		}
		return r.Type + "\x00" + h.Token
	}
	count := map[string]int{}
	best := -1
	for i, r := range replies {
		k := id(r)
		count[k]++
		if best < 0 || count[k] > count[id(replies[best])] {
			best = i
		}
	}
	out := replies[best]
	k := id(out)
	for _, r := range replies {
		if id(r) == k && r.PTTL >= 0 && (out.PTTL < 0 || r.PTTL < out.PTTL) {
			out.PTTL = r.PTTL
		}
	}
	return out
}

func (r *redlock) renew(ctx context.Context, key, token string, ttl time.Duration) (reply, error) {
	d := r.callTimeout()
	if ttl > 0 {
		d = r.leaseTimeout(ttl)
	}
	res := each(ctx, r, nil, d, func(ctx context.Context, s *single) (reply, error) {
		return s.renew(ctx, key, token, ttl)
	}, nil)
	renewed, noTTL := 0, 0
	var set int64 // the shortest TTL a node set (ttl 0: each node's record)
	var others []reply
	for _, x := range res {
		switch {
		case x.err != nil:
		case x.v.Code == lockwire.RenewRenewed:
			renewed++
			if set == 0 || (x.v.Num > 0 && x.v.Num < set) {
				set = x.v.Num
			}
		case x.v.Code == lockwire.RenewNoTTL:
			noTTL++
		case x.v.Code == lockwire.RenewOther:
			others = append(others, x.v)
		}
	}
	switch {
	case renewed >= r.quorum:
		return reply{Code: lockwire.RenewRenewed, Num: set, Acked: -1}, nil
	case noTTL >= r.quorum:
		return reply{Code: lockwire.RenewNoTTL, Acked: -1}, nil
	case answered(res) < r.quorum:
		return reply{}, noQuorum(r, "renew", res)
	case len(others) >= r.quorum:
		return mostCommon(key, others), nil
	}
	// A semaphore of the same name (code 3) cannot exist under Redlock.
	return reply{Code: lockwire.RenewNotHeld, Acked: -1}, nil
}

func (r *redlock) release(ctx context.Context, key, token string, _ *releaseEvents) (reply, error) {
	res := each(ctx, r, nil, r.callTimeout(), func(ctx context.Context, s *single) (reply, error) {
		return s.release(ctx, key, token, nil)
	}, nil)
	deleted, woken, left := 0, false, int64(-1)
	var refusal reply
	var others []reply
	for _, x := range res {
		switch {
		case x.err != nil:
		case x.v.Code == lockwire.ReleaseReleased:
			deleted++
			woken = true
		case x.v.Code == lockwire.ReleaseNotWoken:
			// Deleted, but that node refused the wake-up; a waiter
			// subscribes on every node, so one that published suffices.
			deleted++
			refusal = x.v
		case x.v.Code == lockwire.ReleaseHoldsLeft:
			// One hold of a re-entered lease given back.
			left = max(left, x.v.Num)
		case x.v.Code == lockwire.ReleaseOther:
			others = append(others, x.v)
		}
	}
	n := answered(res)
	switch {
	case len(others) >= r.quorum:
		// A majority belongs to another holder: this token's lease was
		// over, even if a minority master still had it (and dropped it).
		return mostCommon(key, others), nil
	case left >= 0:
		return reply{Code: lockwire.ReleaseHoldsLeft, Num: left, Acked: -1}, nil
	case deleted > 0 && !woken:
		return reply{Code: lockwire.ReleaseNotWoken, Type: refusal.Type, Command: refusal.Command, Acked: -1}, nil
	case deleted > 0:
		return reply{Code: lockwire.ReleaseReleased, Acked: -1}, nil
	case n < r.quorum:
		return reply{}, noQuorum(r, "release", res)
	case len(others) > n/2:
		return mostCommon(key, others), nil
	}
	return reply{Code: lockwire.ReleaseNotHeld, Acked: -1}, nil
}

// reenter adds a hold on every node; it counts when a quorum did. Otherwise
// the holds taken are given back, so no node keeps a count nobody releases.
func (r *redlock) reenter(ctx context.Context, key, token string) (reply, error) {
	res := each(ctx, r, nil, r.callTimeout(), func(ctx context.Context, s *single) (reply, error) {
		return s.reenter(ctx, key, token)
	}, nil)
	var got, refusals []reply
	var idx []int
	for _, x := range res {
		switch {
		case x.err != nil:
		case x.v.Code == lockwire.ReenterLock:
			got = append(got, x.v)
			idx = append(idx, x.node)
		case x.v.Code == lockwire.ReenterOther:
			refusals = append(refusals, x.v)
		}
	}
	if len(got) >= r.quorum {
		out := got[0]
		for _, g := range got[1:] {
			out.PTTL = min(out.PTTL, g.PTTL)
			out.NowMS = min(out.NowMS, g.NowMS)
		}
		return out, nil
	}
	if len(got) > 0 {
		each(context.WithoutCancel(ctx), r, idx, r.callTimeout(), func(ctx context.Context, s *single) (reply, error) {
			return s.release(ctx, key, token, nil)
		}, nil)
	}
	switch {
	case answered(res) < r.quorum:
		return reply{}, noQuorum(r, "re-enter", res)
	case len(refusals) >= r.quorum:
		return mostCommon(key, refusals), nil
	}
	return reply{Code: lockwire.ReenterNotHeld, Acked: -1}, nil
}

func (r *redlock) inspect(ctx context.Context, key string) (reply, error) {
	res := each(ctx, r, nil, r.callTimeout(), func(ctx context.Context, s *single) (reply, error) {
		return s.inspect(ctx, key)
	}, nil)
	free := 0
	var held []reply
	for _, x := range res {
		switch {
		case x.err != nil:
		case x.v.Code == lockwire.InspectFree:
			free++
		default:
			held = append(held, x.v)
		}
	}
	switch {
	case free >= r.quorum:
		return reply{Code: lockwire.InspectFree, Acked: -1}, nil
	case answered(res) < r.quorum:
		return reply{}, noQuorum(r, "get", res)
	}
	return mostCommon(key, held), nil
}

func (r *redlock) nextFence(ctx context.Context, key string) (reply, error) {
	d := r.callTimeout()
	res := each(ctx, r, nil, d, func(ctx context.Context, s *single) (reply, error) {
		return s.nextFence(ctx, key)
	}, nil)
	var f int64
	var idx []int
	for _, x := range res {
		if x.err == nil {
			f = max(f, x.v.Fence)
			idx = append(idx, x.node)
		}
	}
	if len(idx) < r.quorum {
		return reply{}, noQuorum(r, "fence next", res)
	}
	fs := strconv.FormatInt(f, 10)
	wb := each(ctx, r, idx, d, func(ctx context.Context, s *single) (int64, error) {
		return raiseScript().Run(ctx, s.c, []string{key}, fs).Int64()
	}, nil)
	if answered(wb) < r.quorum {
		return reply{}, noQuorum(r, "fence write-back", wb)
	}
	return reply{Code: lockwire.FenceIssued, Fence: f, Acked: -1}, nil
}

func (r *redlock) peek(ctx context.Context, key string) (int64, error) {
	res := each(ctx, r, nil, r.callTimeout(), func(ctx context.Context, s *single) (int64, error) {
		return s.peek(ctx, key)
	}, nil)
	if answered(res) < r.quorum {
		return 0, noQuorum(r, "fence peek", res)
	}
	// Any fence issued through a quorum was written back to a quorum, so
	// every quorum of answers includes it.
	var f int64
	for _, x := range res {
		if x.err == nil {
			f = max(f, x.v)
		}
	}
	return f, nil
}

func (r *redlock) check(ctx context.Context, key string, n int64, token string, shared bool) (reply, error) {
	res := each(ctx, r, nil, r.callTimeout(), func(ctx context.Context, s *single) (reply, error) {
		return s.check(ctx, key, n, token, shared)
	}, nil)
	if answered(res) < r.quorum {
		return reply{}, noQuorum(r, "fence check", res)
	}
	accepted := 0
	var highest int64
	for _, x := range res {
		if x.err != nil {
			continue
		}
		if x.v.Code == lockwire.CheckAccepted {
			accepted++
		} else {
			highest = max(highest, x.v.Fence)
		}
	}
	if accepted >= r.quorum {
		return reply{Code: lockwire.CheckAccepted, Fence: n, Acked: -1}, nil
	}
	return reply{Code: lockwire.CheckRefused, Fence: highest, Acked: -1}, nil
}

func (r *redlock) publish(ctx context.Context, channel string) error {
	res := each(ctx, r, nil, r.callTimeout(), func(ctx context.Context, s *single) (struct{}, error) {
		return struct{}{}, s.publish(ctx, channel)
	}, nil)
	if answered(res) == 0 {
		return noQuorum(r, "publish", res)
	}
	return nil
}

// subscribe subscribes on every node that confirms in time; a release
// publishes on every node that held the lock, so any one of them suffices
// to hear it.
func (r *redlock) subscribe(ctx context.Context, channel string) (subscription, error) {
	res := each(ctx, r, nil, r.callTimeout(), func(ctx context.Context, s *single) (subscription, error) {
		return s.subscribe(ctx, channel)
	}, func(s subscription) {
		_ = s.Close() // a subscription that came too late is not used; nothing waits on its close
	})
	m := &multiSub{c: make(chan struct{}, 1), done: make(chan struct{})}
	for _, x := range res {
		if x.err == nil {
			m.subs = append(m.subs, x.v)
		}
	}
	if len(m.subs) == 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		return nil, noQuorum(r, "subscribe", res)
	}
	for _, s := range m.subs {
		go m.forward(s)
	}
	return m, nil
}

// multiSub merges the subscriptions on several nodes into one wake-up.
type multiSub struct {
	subs []subscription
	c    chan struct{}
	done chan struct{}
	once sync.Once
}

func (m *multiSub) C() <-chan struct{} { return m.c }

// fifo: Redlock has no FIFO waiting.
func (m *multiSub) fifo(string, int64) {}

// named: a Redlock waiter is never listed (its intent is 0), so releases
// wake every process; the token is passed on all the same.
func (m *multiSub) named(token string) {
	for _, s := range m.subs {
		s.named(token)
	}
}

// passOn: Redlock has no shared holders.
func (m *multiSub) passOn() {}

func (m *multiSub) forward(s subscription) {
	for {
		select {
		case <-s.C():
			select {
			case m.c <- struct{}{}:
			default: // a wake-up is already pending
			}
		case <-m.done:
			return
		}
	}
}

func (m *multiSub) Close() error {
	var errs []error
	m.once.Do(func() {
		close(m.done)
		for _, s := range m.subs {
			errs = append(errs, s.Close())
		}
	})
	return errors.Join(errs...)
}

func (r *redlock) queued(channel string) int {
	n := 0
	for _, s := range r.nodes {
		n = max(n, s.queued(channel))
	}
	return n
}

var (
	errSemRedlock  = fmt.Errorf("%w: semaphores (a limit) are not supported with Redlock", ErrInvalid)
	errFIFORedlock = fmt.Errorf("%w: FIFO waiting is not supported with Redlock", ErrInvalid)
	errShRedlock   = fmt.Errorf("%w: shared mode is not supported with Redlock", ErrInvalid)
)

// slotValue: Redlock has no slots.
func (r *redlock) slotValue(context.Context, string, string) (string, error) { return "", nil }

func (r *redlock) sharedAcquire(context.Context, string, acquireArgs, time.Duration) (reply, error) {
	return reply{}, errShRedlock
}

func (r *redlock) semAcquire(context.Context, string, int, acquireArgs) (reply, error) {
	return reply{}, errSemRedlock
}

func (r *redlock) semRenew(context.Context, string, string, time.Duration) (reply, error) {
	return reply{}, errSemRedlock
}

func (r *redlock) semRelease(context.Context, string, string) (reply, error) {
	return reply{}, errSemRedlock
}

func (r *redlock) fifoAcquire(context.Context, string, acquireArgs, time.Duration) (reply, error) {
	return reply{}, errFIFORedlock
}

// fifoLeave: a Redlock FIFO acquire never joined a queue.
func (r *redlock) fifoLeave(context.Context, string, string) error { return nil }
