package runner

import (
	"context"
	"errors"
	"time"

	"github.com/lockctl/lockctl/internal/cli/support/child"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/lock"
)

// Job is one `lockctl run` once its lease is acquired: a command run while
// the lock is held. What it prints and how its outcome reads are the
// caller's; Run does the steps.
type Job struct {
	// Lease is the lease the caller acquired (waiting as it decided, or
	// re-entering a hold of its own).
	Lease *lock.Lease
	// Events is the gate of the events of the Locker that granted Lease
	// (nil: events off): Run records its own event there (the lease lost
	// at the end), and holds back the final release's until it knows
	// what the release found.
	Events *EventGate
	// Watch tunes the lease's watchdog.
	Watch *lock.WatchdogOptions
	// Switched, when not nil, tells of a Sentinel failover: the lease is
	// renewed at once, and again switchRenewAgain later (the first renewal
	// may still meet the old master, when the announcement came before the
	// client dropped its connections there).
	Switched <-chan struct{}
	// Command is what runs under the lease (its Helper, when set, is
	// Run's from the call on).
	Command child.Spec
	// Supervise tunes the supervision (Lease is set by Run).
	Supervise Config
	// ReleaseTimeout bounds the final release, which runs on a context of
	// its own: an interrupted run still releases.
	ReleaseTimeout time.Duration
	// Releaser, when set, learns what the final release found.
	Releaser Releaser
}

// Releaser is what Run tells its caller at the end.
type Releaser interface {
	// Released learns what the final release returned (holds of the
	// token left, error), how many holds the lease was before it (1, or
	// more for a re-entry), and whether the lease had been lost before it,
	// for warnings.
	Released(lease *lock.Lease, held, left int, err error, lost bool)
}

// switchRenewAgain is how long after a Sentinel failover the lease is
// renewed a second time (see Job.Switched).
const switchRenewAgain = 200 * time.Millisecond

// Outcome is how a Run ended, for the caller to report and to turn into
// an exit status.
type Outcome struct {
	Held time.Duration // from the start of Run to the end of the release
	// Err, when not nil, ended the run before the command ended: the
	// watchdog's refusal, ctx's cause (a signal before the start),
	// ErrLapsed (the lease lapsed before the start), a *child.StartError
	// (not found, not executable) or ErrNotStarted.
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

// Run watches the lease, runs the command under it (supervised: see
// Exec), releases it once the command's whole process group is gone, and
// says how all that ended. The watchdog outlives ctx's cancellation by a
// signal that lands before the command starts: the lease is kept until it
// is released in order, never abandoned.
func Run(ctx context.Context, job *Job) *Outcome {
	out := &Outcome{}
	lease := job.Lease
	heldSince := time.Now()

	wdCtx, stopWD := context.WithCancel(context.WithoutCancel(ctx))
	defer stopWD()
	wd, err := Watch(wdCtx, lease, job.Watch)
	if err != nil {
		// The command does not run: err is the outcome, whatever the
		// release finds.
		job.Command.Helper.Close()
		_ = job.release(lease, false)
		out.Err = err
		return out
	}
	stopSwitch := renewOnSwitch(job.Switched, wd.RenewNow)

	cfg := job.Supervise
	cfg.Lease = wd
	res, err := Exec(ctx, job.Command, cfg)
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
			job.record(events.LeaseLost, lease.Name())
		}
		// The loss is the event, not the refused (or late) release that
		// follows it: its error, the lock gone, is already known.
		job.Events.holdToDrop()
		_ = job.release(lease, true)
		job.Events.drop()
		out.Held = time.Since(heldSince)
		return out
	}
	// What the release records waits for what it found: a lock gone or
	// taken at the end of the command is a lease lost, one event.
	job.Events.hold()
	gone := job.release(lease, false)
	out.Held = time.Since(heldSince)
	if gone != nil && out.Ran {
		// The lock was deleted or taken while the command ran, and no
		// renewal came in between to say so (the command itself may have
		// released it): the end of its work was not covered by the lease.
		job.Events.drop()
		out.Lost, out.Uncovered = true, gone
		job.record(events.LeaseLost, lease.Name())
		return out
	}
	job.Events.pass()
	return out
}

// renewOnSwitch renews (renewNow) at each failover switched tells of, and
// again switchRenewAgain later, until the returned function is called.
func renewOnSwitch(switched <-chan struct{}, renewNow func()) (stop func()) {
	if switched == nil {
		return func() {}
	}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-switched:
				renewNow()
				time.AfterFunc(switchRenewAgain, renewNow)
			case <-quit:
				return
			}
		}
	}()
	return func() {
		close(quit)
		<-done
	}
}

// release frees the lease once the command's group is gone, on a
// context of its own. It returns the release's error when the lock was
// gone (ErrNotHeld) or held by another token (ErrNotOwner): the lease did
// not last to the end.
func (job *Job) release(lease *lock.Lease, lost bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), job.ReleaseTimeout)
	defer cancel()
	held := lease.Holds()
	left, err := 0, lease.Release(ctx)
	if err == nil || errors.Is(err, lock.ErrNotWoken) {
		left = lease.Holds() // what the release left of the token's holds
	}
	if job.Releaser != nil {
		job.Releaser.Released(lease, held, left, err, lost)
	}
	if errors.Is(err, lock.ErrNotHeld) || errors.Is(err, lock.ErrNotOwner) {
		return err
	}
	return nil
}

func (job *Job) record(kind, name string) {
	job.Events.record(events.Event{Kind: kind, Name: name})
}
