package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/redis/go-redis/v9"
)

// DefaultPrefix starts every lock key unless Options say otherwise.
const DefaultPrefix = "lock:"

// Options configure a Locker. A nil *Options means all defaults.
type Options struct {
	// Prefix goes before every lock name; "" means DefaultPrefix unless
	// RawKeys is set.
	Prefix string
	// RawKeys makes lock names the Redis keys themselves (no prefix), for
	// locks shared with applications that name their own keys. A bool
	// rather than a *string so that the zero Options stay the safe default.
	RawKeys bool
	// Clock drives waiting (deadlines and polling timers); nil is the real
	// monotonic clock.
	Clock Clock
	// WaitReplicas > 0 makes every lock write (acquire, renew) wait until
	// that many replicas acknowledged it, or fail with *ReplicationError:
	// an acquire is then given back, and a renewal does not move the
	// lease's deadline, so a holder cut off with a master that a failover
	// replaced loses its lease at the deadline. This narrows, but does not
	// close, the window in which a failover loses a lock, and it does not
	// stop such a master from taking other clients' writes (the server's
	// min-replicas-to-write does). Supported on single-server and Sentinel clients;
	// NewRedlock refuses it (Redlock assumes masters without replicas).
	WaitReplicas int
	// WaitReplicasTimeout bounds that wait; 0 means 1s. A renewal waits
	// at most a sixth of its TTL, so that renewals blocked by lagging
	// replicas leave time for retries before the deadline.
	WaitReplicasTimeout time.Duration
	// NodeTimeout bounds each node's reply in a Redlock call (NewRedlock);
	// a node slower than that counts as not answering. 0 means ttl/10
	// within [50ms, 1s] for acquire and renew, and 1s for other calls.
	// Each client's own timeouts apply too. Ignored by New.
	NodeTimeout time.Duration
	// PollInterval scales how long a waiter stays listed without a new
	// attempt (the FIFO queue's heartbeat and the other waiters' listings:
	// 3× PollInterval, at least 3s). A waiter sleeps on a wake-up of its
	// own until a release lets it in, the holder's TTL runs out or its
	// listing needs renewing, and does not poll; only waiters beyond the
	// ones a client lets block on a connection each, and Redlock's, which
	// listen on pub/sub, retry at least every PollInterval. 0 means 1s.
	PollInterval time.Duration
	// Events, if set, receives how each Acquire, Release and watchdog
	// renewal ended, e.g. an *events.Recorder. Nil records
	// nothing and costs nothing.
	Events events.Sink
}

// Locker takes, renews and releases leases on named locks.
type Locker struct {
	b        backend
	prefix   string
	clock    leasetime.Clock
	replicas int
	poll     time.Duration
	events   events.Sink
	// realTime: no Clock was injected, so waiters may sleep on the
	// server's blocking reads (sleep.go).
	realTime bool
}

// New returns a Locker on c. opts may be nil.
func New(c redis.UniversalClient, opts *Options) *Locker {
	if opts == nil {
		opts = &Options{}
	}
	l := newLocker(opts)
	wt := opts.WaitReplicasTimeout
	if wt <= 0 {
		wt = time.Second
	}
	l.b = &single{c: c, hub: &hub{c: c}, replicas: opts.WaitReplicas, replicasTimeout: wt, blocked: blockedFor(c)}
	return l
}

// newLocker is a Locker without a backend: the settings every backend shares.
func newLocker(opts *Options) *Locker {
	l := &Locker{prefix: opts.Prefix, clock: opts.Clock, replicas: opts.WaitReplicas, poll: opts.PollInterval, events: opts.Events, realTime: opts.Clock == nil}
	if l.prefix == "" && !opts.RawKeys {
		l.prefix = DefaultPrefix
	}
	if l.clock == nil {
		l.clock = leasetime.Real()
	}
	if l.poll <= 0 {
		l.poll = time.Second
	}
	return l
}

// Key is the Redis key of the lock called name.
func (l *Locker) Key(name string) string { return l.prefix + name }

func (l *Locker) key(name string) (string, error) {
	if name == "" {
		return "", fmt.Errorf("%w: empty lock name", ErrInvalid)
	}
	return l.prefix + name, nil
}

func checkTTL(ttl time.Duration) error {
	if ttl < time.Millisecond {
		return fmt.Errorf("%w: ttl %s is under 1ms", ErrInvalid, ttl)
	}
	return nil
}

// AcquireOptions tune one Acquire. A nil *AcquireOptions means all defaults.
type AcquireOptions struct {
	// Token identifies this lease; "" means 128 random bits, as 32 hex
	// digits: unguessable, so that no other client releases or renews the
	// lease by accident. A given token must
	// be printable ASCII without '"' or '\' (it is stored verbatim in JSON).
	// Acquiring again with the token that already holds the lock succeeds
	// and refreshes its TTL, so a retry after a lost reply is safe; it
	// adds no hold (Reenter does). It stores this call's Note, JobURL and TTL,
	// and its Owner if set, in place of the stored ones (an empty Note
	// clears the stored one; an empty Owner keeps it), and keeps the fence,
	// AcquiredAt and the holds (a semaphore slot asked for with another
	// Limit keeps all its members).
	Token string
	// Owner is shown to other users; "" means user@host:pid of this
	// process.
	Owner string
	Note  string
	// JobURL links to the job acquiring the lock (a CI run, a deploy
	// pipeline, a ticket), recorded in the stored value (member "ci",
	// which lockctl fills from the usual CI variables) for people looking
	// at the holder (Holder.JobURL). It changes
	// nothing in how the lock is kept.
	JobURL string
	// RenewEvery is the period at which the holder will renew the lease
	// (the RenewEvery of the Watch it starts), recorded with it so that
	// people looking at the lock can tell a holder that stopped renewing
	// (Holder.RenewEvery): 0 for a lease renewed by hand, which has no
	// period. It changes nothing in how the lease is kept.
	RenewEvery time.Duration
	// OwnerStart is the start time (/proc/PID/stat's starttime field) of the process Owner's pid names, recorded so that a pid
	// reused by another process is told apart (Holder.PIDStart); 0 when
	// unknown. Without an Owner, this process's is recorded.
	OwnerStart int64
	// Limit > 0 makes the lock a counting semaphore with up to Limit
	// holders. Every user of the semaphore must pass the same
	// Limit: another Limit than the live holders' fails with *DataError (ErrInvalid).
	// Slots and a plain lock of the same name exclude each other. Renew,
	// Release and Lease.Release find semaphore slots by token.
	Limit int
	// FIFO serves waiters in arrival order. Not supported
	// together with Limit.
	FIFO bool
	// Shared takes the lock in shared mode: any number of
	// shared holders at once, while an exclusive holder (any acquire
	// without Shared) excludes everyone, and an exclusive acquirer that
	// waits keeps new shared holders out. A shared holder's fence is the
	// current one; compare it with Fences.CheckShared. Not supported
	// together with Limit, nor with Redlock.
	Shared bool
	// Wait: 0 fails at once when the lock is held; > 0 waits up to that
	// long; < 0 waits until ctx is done.
	Wait time.Duration
	// RetryFor: while waiting (Wait != 0), an attempt that fails on the
	// way to Redis (a connection refused, reset or closed, a timeout: a
	// failover or restart under way), or whose grant too few replicas
	// acknowledged (*ReplicationError, the grant given back), is tried
	// again, about every 200ms,
	// until RetryFor has passed since the first failure of an unbroken
	// run of them; then, or at the wait's deadline, the wait ends with
	// that error. 0 ends it at the first such failure. Error replies of
	// the server end it at once either way. A retry after a reply that
	// was lost is safe: the same token re-confirms its own grant.
	RetryFor time.Duration
	// Observer, if set, is told what each attempt that did not get the
	// lock found (AcquireEvent): the lock held, or a grant that came too
	// late to count. Callers rate-limit any status output themselves.
	Observer func(AcquireEvent)
}

// AcquireEvent is what an attempt of Acquire (or AcquireMulti) that did
// not get the lock found, as AcquireOptions.Observer is told.
type AcquireEvent struct {
	// Late, when not nil, says that the attempt's grant came too late to
	// count and was given back: a *LateError, with Slow set when its
	// re-confirmation was late as well. A wait goes on after it (the link
	// may recover); this says why it does not get the lock meanwhile.
	Late error
	// Holder is who holds the lock, when Late is nil.
	Holder Holder
}

// observe tells o's Observer what an attempt found: a late grant (err)
// when late, else the lock held by held.
func (o *AcquireOptions) observe(late bool, held Holder, err error) {
	if o == nil || o.Observer == nil {
		return
	}
	if late {
		o.Observer(AcquireEvent{Late: err})
		return
	}
	o.Observer(AcquireEvent{Holder: held})
}

// Lease is a held lock: a lock, a semaphore slot, a shared hold or a set
// of locks, as Acquire, Reenter, AcquireMulti or Resume returned it. Release
// gives it back, Refresh renews it, Watch keeps it renewed in the
// background, and Done closes once it is lost (or given back), Err saying
// why.
type Lease struct {
	// Set when the lease is granted, never changed after.
	name, key, token, owner, note string
	fence                         int64
	acquiredAt, expiresAt         time.Time
	waited                        time.Duration
	limit                         int
	shared                        bool

	l       *Locker   // the Locker that granted it
	resumed bool      // Resume built it from the stored value, not a grant
	set     *leaseSet // the names, keys and fences of a set of locks (AcquireMulti); nil for one lock

	mu sync.Mutex
	// ttl and sent are those of the last call that granted or renewed the
	// lease (Refresh); deadline is the moment it stops counting as held,
	// moved by Refresh and by every renewal of a watchdog (Watch), which
	// renewals counts.
	ttl      time.Duration
	sent     time.Time
	deadline time.Time
	renewals int64
	holds    int
	done     chan struct{} // closed once the lease is lost or given back
	dogs     []watch       // the watchdogs started on it (Watch)
	err      error         // the loss, once one is known (Err)
}

// Acquire takes the lock called name for ttl, waiting as o.Wait says.
//
// Errors: *HeldError (errors.Is ErrNotObtained) when the lock is held and no
// wait remains; *LateError (errors.Is ErrNotObtained) when the last grant
// came too late to count; a slow *LateError (not ErrNotObtained) when it and
// its re-confirmation both did, so that no grant can count on this link;
// *DataError (ErrWrongType) when the key is not a lock; ErrInvalid;
// the context's error (with its cause) when ctx ends first, which also
// matches ErrNotObtained when it is ctx's deadline (context.DeadlineExceeded)
// and not when ctx was cancelled (context.Canceled);
// *ReplicationError; Redis errors, wrapped.
func (l *Locker) Acquire(ctx context.Context, name string, ttl time.Duration, o *AcquireOptions) (*Lease, error) {
	if o == nil {
		o = &AcquireOptions{}
	}
	key, err := l.key(name)
	if err != nil {
		return nil, err
	}
	if err := checkTTL(ttl); err != nil {
		return nil, err
	}
	ttl = ttl.Truncate(time.Millisecond)
	token, owner, err := tokenAndOwner(o)
	if err != nil {
		return nil, err
	}
	if o.Limit < 0 || (o.Limit > 0 && o.FIFO) {
		return nil, fmt.Errorf("%w: limit %d (FIFO waiting is not supported for semaphores)", ErrInvalid, o.Limit)
	}
	if o.Limit > 0 && o.Shared {
		return nil, fmt.Errorf("%w: a semaphore (limit %d) has no shared mode", ErrInvalid, o.Limit)
	}
	a := &attempt{l: l, name: name, key: key, owner: owner, note: o.Note, limit: o.Limit, fifo: o.FIFO, shared: o.Shared,
		args: acquireArgs{token: token, ttl: ttl, rest: valueRest(o, ttl), keepOwner: o.Owner == ""}, start: l.clock.Now()}
	if o.Wait > 0 {
		a.deadline = a.start.Add(o.Wait)
	}
	if o.Wait != 0 && o.Limit == 0 && !o.Shared {
		// A waiting exclusive acquire keeps new shared holders out while
		// it is refused (shared.go).
		a.args.intent = l.queueTTL()
	}
	if o.Wait != 0 && (o.Limit > 0 || (o.Shared && !o.FIFO)) {
		// Listed too, so that a release wakes it (wake.lua).
		a.args.waiting = l.queueTTL()
	}
	lease, err := a.run(ctx, o)
	if lease == nil && (a.fifo || a.listed) {
		// Leave the queue (and the exclusive acquirers' list) at once
		// rather than by heartbeat expiry, so the waiters behind go on
		// without delay.
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = l.b.fifoLeave(lctx, key, token)
		cancel()
	}
	if l.events != nil {
		l.recordAcquire(ctx, name, o.Wait, lease, err)
	}
	return lease, notObtainedBy(ctx, err)
}

// notObtainedBy makes err, which ended an Acquire, match ErrNotObtained as
// well when it is ctx's deadline (context.DeadlineExceeded): the caller's
// own bound on the wait ran out, which is a wait that did not obtain the
// lock, as AcquireOptions.Wait running out is. A cancelled ctx
// (context.Canceled) stays as it is: the caller gave up, and nobody
// refused it.
func notObtainedBy(ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, context.DeadlineExceeded) ||
		!errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, ErrNotObtained) {
		return err
	}
	return &deadlineError{err: err}
}

// deadlineError is an Acquire ended by its context's deadline: it matches
// ErrNotObtained and, through the error it wraps, context.DeadlineExceeded.
type deadlineError struct{ err error }

func (e *deadlineError) Error() string        { return e.err.Error() }
func (e *deadlineError) Unwrap() error        { return e.err }
func (e *deadlineError) Is(target error) bool { return target == ErrNotObtained }

// valueRest is the stored value's members after the fence
// (lockwire.Members).
func valueRest(o *AcquireOptions, ttl time.Duration) string {
	owner, start := defaultOwnerJSON(), identity.PIDStart()
	if o.Owner != "" {
		owner, start = lockwire.EncodeJSONString(o.Owner), o.OwnerStart
	}
	return lockwire.Members(owner, o.Note, o.JobURL, int64(o.Limit), o.Shared, ttl,
		lockwire.Holding{RenewEvery: o.RenewEvery, PIDStart: start})
}

func (a *attempt) run(ctx context.Context, o *AcquireOptions) (*Lease, error) {
	if o.Wait != 0 && !a.fifo && !a.shared && a.l.b.queued(lockwire.Channel(a.key)) > 0 {
		// Others in this process already wait for this lock: queue behind
		// them instead of barging in, so local waiters are served in
		// arrival order. The release that frees the lock wakes the first.
		// A FIFO waiter joins the queue in Redis at once instead, which
		// orders it among all waiters.
		return a.wait(ctx, o, false)
	}
	if o.Wait != 0 && a.fifo && !a.shared && a.l.b.queued(lockwire.Channel(a.key)) > 0 {
		// A FIFO waiter behind others of this process joins the queue
		// with its first attempt too, but subscribed first, as those
		// others: a release between that attempt and the subscription
		// could not go unheard, and the wait needs no second attempt.
		a.hubFirst = true
		return a.wait(ctx, o, true)
	}
	lease, held, err := a.try(ctx)
	late := isLate(err)
	if err != nil && o.Wait != 0 && o.RetryFor > 0 && transient(err) && ctx.Err() == nil {
		return a.waitOut(ctx, o, err)
	}
	if lease != nil || (err != nil && !late) {
		return lease, err
	}
	if o.Wait == 0 {
		if late {
			o.observe(true, Holder{}, err)
			return nil, err
		}
		o.observe(false, held, nil)
		return nil, newHeldError(ErrNotObtained, held)
	}
	o.observe(late, held, err)
	if !a.deadline.IsZero() && !a.l.clock.Now().Before(a.deadline) {
		// The first attempt used up the wait (a slow link): no other.
		if late {
			return nil, err
		}
		return nil, newHeldError(ErrNotObtained, held)
	}
	if !late {
		// A copy, so that held itself does not escape: every attempt
		// would allocate it.
		h := held
		a.refused = &h
	}
	return a.wait(ctx, o, true)
}

// isLate tells a grant that came too late to count (the attempt has given
// it back; a wait goes on) from other errors, which end the Acquire.
func isLate(err error) bool {
	if err == nil {
		// Before errors.As: its target escapes, an allocation per grant.
		return false
	}
	var late *LateError
	return errors.As(err, &late)
}

// attempt is one Acquire call: its arguments and start on the waiter's clock.
type attempt struct {
	l      *Locker
	name   string
	key    string
	owner  string
	note   string
	limit  int
	fifo   bool
	shared bool
	args   acquireArgs
	start  time.Time
	// refused is the first attempt's refusal, which listed the waiter:
	// a wait that sleeps on its wake-up stream, read from its start,
	// misses no release after it, so it sleeps before trying again.
	refused *Holder
	// hubFirst: the wait starts in the hub, with the first attempt
	// (attempt.run).
	hubFirst bool
	// listed: a refusal put this exclusive waiter on the list that keeps
	// new shared holders out (shared.go); it leaves the list if it gives up.
	listed bool
	// deadline ends a bounded wait (AcquireOptions.Wait > 0); zero
	// otherwise. A late grant whose reply comes after it is given back
	// without a re-confirmation: the wait is over.
	deadline time.Time
	// slow is the last attempt whose grant and re-confirmation both came
	// too late: it says why a wait that ends on a late grant got nothing.
	slow *LateError
}

// try takes the lock if it can. It returns a lease that counts as held
// (leasetime.Deadline) when its reply arrived, or the holder that refused it, or
// an error: a *LateError when the grant came too late to count, was
// re-confirmed once, that came too late as well, and the lease was given
// back.
func (a *attempt) try(ctx context.Context) (*Lease, Holder, error) {
	return confirm(ctx, a.l, a, a.key, a.deadline, &a.slow)
}

// granting is what confirm needs of an attempt (a lock's or a set's): one
// run of its script, and giving back a grant it will not hand out.
type granting interface {
	once(ctx context.Context) (*Lease, Holder, error)
	giveBack(ctx context.Context, lease *Lease)
}

// confirm runs g once and returns a lease that counts as held
// (leasetime.Deadline) when its reply arrived, or the holder that refused
// it, or an error. A grant whose reply came too late to count is
// re-confirmed once, unless the wait's deadline has passed; a
// re-confirmation that came too late as well is given back, and the
// *LateError (Slow: the link, not a pause of this process) is left in
// *slow too. key names the lock in the error.
func confirm(ctx context.Context, l *Locker, g granting, key string, deadline time.Time, slow **LateError) (*Lease, Holder, error) {
	lease, held, err := g.once(ctx)
	if lease == nil || err != nil {
		return lease, held, err
	}
	if err := l.late("acquire", key, lease.sent, lease.ttl); err == nil {
		return lease, held, nil
	} else if !deadline.IsZero() && !l.clock.Now().Before(deadline) {
		// The wait is over: another call would only make it longer.
		g.giveBack(ctx, lease)
		return nil, Holder{}, err
	}
	// Re-confirm by running the same script again with the same token,
	// from a fresh send time: while the lease is still ours this renews it
	// (the same-token branch refreshes the TTL and keeps the fence); if it
	// expired meanwhile, the lock is granted afresh or refused.
	first := lease
	lease, held, err = g.once(ctx)
	if err != nil {
		g.giveBack(ctx, first)
		return nil, Holder{}, err
	}
	if lease == nil {
		return nil, held, nil
	}
	if err := l.late("acquire", key, lease.sent, lease.ttl); err != nil {
		g.giveBack(ctx, lease)
		// Two replies in a row slower than the lease allows: the link (or
		// the server) is, not a pause of this process between them.
		late := err.(*LateError)
		*slow = &LateError{Key: key, Op: late.Op, TTL: late.TTL, Took: late.Took, Slow: true}
		return nil, Holder{}, *slow
	}
	return lease, held, nil
}

// giveBack releases a lease the attempt will not hand out, on a context of
// its own (an interrupted Acquire cleans up too): others need not wait for
// its TTL.
func (a *attempt) giveBack(ctx context.Context, lease *Lease) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	// Unrecorded: the grant was not handed out, so neither was it acquired.
	_, _ = a.l.releaseHold(rctx, lease, nil)
}

// once runs the acquire script once. It returns a lease (whether or not
// its reply came in time), or the holder that refused it, or an error.
func (a *attempt) once(ctx context.Context) (*Lease, Holder, error) {
	var r reply
	var err error
	sent := a.l.clock.Now()
	switch {
	case a.limit > 0:
		r, err = a.l.b.semAcquire(ctx, a.key, a.limit, a.args)
	case a.shared:
		var q time.Duration
		if a.fifo {
			q = a.l.queueTTL()
		}
		r, err = a.l.b.sharedAcquire(ctx, a.key, a.args, q)
	case a.fifo:
		r, err = a.l.b.fifoAcquire(ctx, a.key, a.args, a.l.queueTTL())
	default:
		r, err = a.l.b.acquire(ctx, a.key, a.args)
	}
	if err != nil {
		return nil, Holder{}, fmt.Errorf("lock: acquire %s: %w", a.key, err)
	}
	lease := &Lease{name: a.name, key: a.key, token: a.args.token, ttl: a.args.ttl, limit: a.limit, shared: a.shared, sent: sent, holds: 1, l: a.l}
	now := time.UnixMilli(r.NowMS).UTC()
	switch r.Code {
	case lockwire.AcquireAcquired:
		lease.owner, lease.note, lease.fence, lease.acquiredAt = a.owner, a.note, r.Fence, now
	case lockwire.AcquireAgain:
		v := parseValue(a.key, r.Value, a.args.ttl)
		lease.owner, lease.note, lease.fence, lease.acquiredAt = v.Owner, v.Note, v.Fence, v.AcquiredAt
		if lease.acquiredAt.IsZero() {
			lease.acquiredAt = now
		}
	default:
		if a.args.intent > 0 || a.args.waiting > 0 {
			a.listed = true
		}
		h, err := holderOf(r, a.key)
		return nil, h, err
	}
	lease.expiresAt = now.Add(a.args.ttl)
	lease.waited = a.l.clock.Now().Sub(a.start)
	if err := a.l.replicated(a.key, r); err != nil {
		// A lease the replicas may not have is not worth holding: free it
		// for others now rather than at its TTL.
		a.giveBack(ctx, lease)
		return nil, Holder{}, err
	}
	return lease, Holder{}, nil
}

func (l *Locker) replicated(key string, r reply) error {
	if l.replicas > 0 && r.Acked < l.replicas {
		return &ReplicationError{Key: key, Want: l.replicas, Acked: max(r.Acked, 0)}
	}
	return nil
}

// lockRenewer renews a lock by its name for a watchdog.
type lockRenewer struct{ l *Locker }

// Renew sets the TTL of the lock called name to ttl if token holds it, and
// returns the new TTL. ttl 0 means the TTL the lease was taken with (which
// its stored value records); a lock whose value records none (a foreign
// lock) then fails with ErrInvalid. It never re-creates an expired lock.
//
// Errors: ErrNotHeld when there is no lock; *HeldError (errors.Is
// ErrNotOwner) when another token holds it; *DataError (ErrWrongType); ErrInvalid;
// *ReplicationError (the lease was renewed on the master); Redis errors.
func (r lockRenewer) Renew(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error) {
	key, err := r.l.key(name)
	if err != nil {
		return 0, err
	}
	return r.l.renewKey(ctx, key, token, ttl)
}

// renewKey renews the lease token holds at key (lockRenewer.Renew).
func (l *Locker) renewKey(ctx context.Context, key, token string, ttl time.Duration) (time.Duration, error) {
	if key == "" || token == "" {
		return 0, fmt.Errorf("%w: empty key or token", ErrInvalid)
	}
	ttl, err := renewTTL(ttl)
	if err != nil {
		return 0, err
	}
	sent := l.clock.Now()
	r, err := l.b.renew(ctx, key, token, ttl)
	if err != nil {
		return 0, fmt.Errorf("lock: renew %s: %w", key, err)
	}
	switch r.Code {
	case lockwire.RenewNotHeld:
		return 0, fmt.Errorf("%w: %s", ErrNotHeld, key)
	case lockwire.RenewSemaphore:
		// No lock at key, but a semaphore of the same name: the token
		// may hold one of its slots.
		ttl, err := l.renewSem(ctx, key, token, ttl)
		if errors.Is(err, ErrNotHeld) && !errors.Is(err, lockwire.ErrLate) {
			return 0, fmt.Errorf("%w: %s", ErrNotHeld, key)
		}
		return ttl, err
	case lockwire.RenewRenewed:
		ttl = renewed(ttl, r)
		if err := l.late("renew", key, sent, ttl); err != nil {
			return 0, err
		}
		return ttl, l.replicated(key, r)
	case lockwire.RenewNoTTL:
		return 0, noLeaseTTL(key)
	}
	return 0, refused(key, r)
}

// renewTTL checks a renewal's ttl: 0 (the lease's own) or at least 1ms.
func renewTTL(ttl time.Duration) (time.Duration, error) {
	if ttl == 0 {
		return 0, nil
	}
	if err := checkTTL(ttl); err != nil {
		return 0, err
	}
	return ttl.Truncate(time.Millisecond), nil
}

// renewed is the TTL a renewal set: the script's answer, which is the
// lease's own TTL when ttl was 0.
func renewed(ttl time.Duration, r reply) time.Duration {
	if r.Num > 0 {
		return time.Duration(r.Num) * time.Millisecond
	}
	return ttl
}

func noLeaseTTL(key string) error {
	return fmt.Errorf("%w: %s does not record the TTL it was taken with (not a lockctl lock?); name a ttl", ErrInvalid, key)
}

// releaseKey releases one hold of token's lease at key, a lock or a
// semaphore or shared slot, unrecorded, returning the holds the token has
// left.
func (l *Locker) releaseKey(ctx context.Context, key, token string, ev *releaseEvents) (int, error) {
	if key == "" || token == "" {
		return 0, fmt.Errorf("%w: empty key or token", ErrInvalid)
	}
	var r reply
	var err error
	if s, ok := l.b.(*single); ok && ev == nil && s.replicas <= 0 {
		r, err = l.releaseHanding(ctx, s, key, token)
	} else {
		r, err = l.b.release(ctx, key, token, ev)
	}
	if err != nil {
		return 0, fmt.Errorf("lock: release %s: %w", key, err)
	}
	switch r.Code {
	case lockwire.ReleaseNotHeld:
		return 0, fmt.Errorf("%w: %s", ErrNotHeld, key)
	case lockwire.ReleaseSemaphore:
		// No lock at key, but a semaphore of the same name.
		n, err := l.releaseSem(ctx, key, token)
		if !errors.Is(err, ErrNotHeld) {
			return n, err
		}
		return 0, fmt.Errorf("%w: %s", ErrNotHeld, key)
	case lockwire.ReleaseReleased:
		return 0, nil
	case lockwire.ReleaseNotWoken:
		return 0, notWoken(key, r)
	case lockwire.ReleaseHoldsLeft:
		return int(r.Num), nil
	}
	return 0, refused(key, r)
}

// notWoken is a release script's {5, error, channel}: released, but the
// server refused to publish the wake-up on channel (the release channel,
// or the next waiter's own).
func notWoken(key string, r reply) error {
	ch := r.Value
	if ch == "" && r.Command == "" {
		ch = lockwire.Channel(key)
	}
	return &WakeError{Key: key, Channel: ch, Reason: r.Type, Command: r.Command}
}

func refused(key string, r reply) error {
	h, err := holderOf(r, key)
	if err != nil {
		return err
	}
	return newHeldError(ErrNotOwner, h)
}

// Get describes the holder of the lock called name: a lockctl lock, a
// foreign plain string lock or a Redisson hash lock.
//
// Errors: ErrNotHeld when the lock is free; *DataError (ErrWrongType); Redis errors.
func (l *Locker) Get(ctx context.Context, name string) (*Holder, error) {
	key, err := l.key(name)
	if err != nil {
		return nil, err
	}
	return l.getKey(ctx, key)
}

// getKey is Get on a raw Redis key.
func (l *Locker) getKey(ctx context.Context, key string) (*Holder, error) {
	r, err := l.b.inspect(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("lock: get %s: %w", key, err)
	}
	if r.Code == lockwire.InspectFree {
		return nil, fmt.Errorf("%w: %s", ErrNotHeld, key)
	}
	h, err := holderOf(r, key)
	if err != nil {
		return nil, err
	}
	return &h, nil
}

// ctxErr reports why waiting stopped: the context's error (so errors.Is
// context.Canceled or DeadlineExceeded holds) and, if different, its cause
// (a signal, say).
func ctxErr(ctx context.Context, key string) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause != nil && !errors.Is(cause, err) {
		return fmt.Errorf("lock: waiting for %s: %w (%w)", key, err, cause)
	}
	return fmt.Errorf("lock: waiting for %s: %w", key, err)
}
