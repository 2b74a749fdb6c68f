package runner

import (
	"context"
	"errors"
	"time"

	"github.com/lockctl/lockctl/internal/child"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/lock"
)

// Job is one `lockctl run`: a command run while a lock is held. What it
// prints and how its outcome reads are the caller's; Run does the steps.
type Job struct {
	// Acquire takes the lease (waiting as the caller decided, or
	// re-entering a hold of the caller's own).
	Acquire func(ctx context.Context) (*lock.Lease, error)
	// Locker watches and releases the lease; its events are recorded as
	// Run decides (see LockerFor).
	Locker *lock.Locker
	// LockerFor is a Locker like Locker whose events go to sink (nil:
	// nowhere): the release's events depend on what it found. nil means
	// Locker itself (events off).
	LockerFor func(sink lock.EventSink) *lock.Locker
	// Events receives Run's own event (the lease lost at the end); nil
	// records nothing.
	Events lock.EventSink
	// Watch tunes the lease's watchdog.
	Watch *lock.WatchdogOptions
	// OnWatch, when set, is called with a function that renews the lease
	// at once (a Sentinel failover); its result is called before the
	// release.
	OnWatch func(renewNow func()) (stop func())
	// Command is what runs under the lease.
	Command func(lease *lock.Lease) child.Spec
	// Supervise tunes the supervision (Lease is set by Run).
	Supervise Config
	// ReleaseTimeout bounds the final release, which runs on a context of
	// its own: an interrupted run still releases.
	ReleaseTimeout time.Duration
	// Released, when set, learns what the final release returned (holds
	// of the token left, error) and whether the lease had been lost
	// before it, for warnings.
	Released func(lease *lock.Lease, left int, err error, lost bool)
	// Acquired, when set, says that the lease was taken and after how
	// long a wait; nil leaves it to Supervise.Verbosef.
	Acquired func(lease *lock.Lease)
}

// Outcome is how a Run ended, for the caller to report and to turn into
// an exit status.
type Outcome struct {
	// Lease is the lease held; nil when it was not acquired, and Err
	// says why.
	Lease  *lock.Lease
	Waited time.Duration // the wait, or until the refusal when not acquired
	Held   time.Duration // from the grant to the end of the release
	// Err, when not nil, ended the run before the command ended: the
	// acquisition's error (not obtained, Redis unavailable, an interrupted
	// wait), the watchdog's refusal, ctx's cause (a signal before the
	// start), ErrLapsed (the lease lapsed before the start), a
	// *child.StartError (not found, not executable) or ErrNotStarted.
	Err error
	// Ran: the command started; Result says how it ended.
	Ran    bool
	Result Result
	// Renewals of the lease that succeeded.
	Renewals int64
	// Lost: the lease was lost while it was held (Result.Lost), it
	// lapsed before the start, or the final release found the command's
	// end uncovered (Uncovered).
	Lost bool
	// Uncovered: the final release found the lock deleted (lock.ErrNotHeld)
	// or taken (lock.ErrNotOwner) though no loss had been seen: the end of
	// the command's work was not covered by the lease.
	Uncovered error
}

// Run acquires the lease, watches it, runs the command under it
// (supervised: see Exec), releases it once the command's whole process
// group is gone, and says how all that ended. The watchdog outlives ctx's
// cancellation by a signal that lands before the command starts: the lease
// is kept until it is released in order, never abandoned.
func Run(ctx context.Context, job *Job) *Outcome {
	out := &Outcome{}
	started := time.Now()
	lease, err := job.Acquire(ctx)
	if err != nil {
		out.Waited, out.Err = time.Since(started), err
		return out
	}
	out.Lease, out.Waited = lease, lease.Waited
	heldSince := time.Now()
	logf := job.Supervise.Verbosef
	if logf == nil {
		logf = func(string, ...any) {}
	}
	if job.Acquired != nil {
		job.Acquired(lease)
	} else {
		logf("acquired %s (fence %d) after %v", lease.Key, lease.Fence, lease.Waited.Round(time.Millisecond))
	}

	wdCtx, stopWD := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWD()
	wd, err := lease.Watch(wdCtx, job.Watch)
	if err != nil {
		// The command does not run: err is the outcome, whatever the
		// release finds.
		_ = job.release(lease, job.Locker, false)
		out.Err = err
		return out
	}
	stopSwitch := func() {}
	if job.OnWatch != nil {
		stopSwitch = job.OnWatch(wd.RenewNow)
	}

	cfg := job.Supervise
	cfg.Lease = wd
	res, err := Exec(ctx, job.Command(lease), cfg)
	if err != nil {
		out.Err, out.Lost = err, errors.Is(err, ErrLapsed)
	} else {
		out.Ran, out.Result, out.Lost = true, res, res.Lost
	}

	stopSwitch()
	wd.Stop()
	out.Renewals = wd.Renewals()
	if out.Lost {
		if wd.Err() == nil {
			// Lost by the local deadline before the watchdog said so
			// (stopped past it, or it passed as the child ended): the
			// watchdog, stopped, recorded nothing.
			job.record(events.LeaseLost, lease.Name)
		}
		// The loss is the event, not the refused (or late) release that
		// follows it: its error, the lock gone, is already known.
		_ = job.release(lease, job.lockerFor(nil), true)
		out.Held = time.Since(heldSince)
		return out
	}
	// What the release records waits for what it found: a lock gone or
	// taken at the end of the command is a lease lost, one event.
	var held heldEvents
	gone := job.release(lease, job.lockerFor(&held), false)
	out.Held = time.Since(heldSince)
	if gone != nil && out.Ran {
		// The lock was deleted or taken while the command ran, and no
		// renewal came in between to say so (the command itself may have
		// released it): the end of its work was not covered by the lease.
		out.Lost, out.Uncovered = true, gone
		job.record(events.LeaseLost, lease.Name)
		return out
	}
	for _, e := range held {
		if job.Events != nil {
			job.Events.Record(context.Background(), e)
		}
	}
	return out
}

// release frees the lease with l once the command's group is gone, on a
// context of its own. It returns the release's error when the lock was
// gone (ErrNotHeld) or held by another token (ErrNotOwner): the lease did
// not last to the end.
func (job *Job) release(lease *lock.Lease, l *lock.Locker, lost bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), job.ReleaseTimeout)
	defer cancel()
	left, err := releaseThrough(ctx, l, lease, job.Locker)
	if job.Released != nil {
		job.Released(lease, left, err, lost)
	}
	if errors.Is(err, lock.ErrNotHeld) || errors.Is(err, lock.ErrNotOwner) {
		return err
	}
	return nil
}

func (job *Job) lockerFor(sink lock.EventSink) *lock.Locker {
	if job.LockerFor == nil || job.Events == nil {
		return job.Locker
	}
	return job.LockerFor(sink)
}

func (job *Job) record(kind, name string) {
	if job.Events != nil {
		job.Events.Record(context.Background(), events.Event{Kind: kind, Name: name})
	}
}

// heldEvents keeps the events recorded to it, to be recorded or dropped
// later.
type heldEvents []events.Event

func (h *heldEvents) Record(_ context.Context, e events.Event) { *h = append(*h, e) }
