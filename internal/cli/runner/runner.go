// Package runner runs a command while a lock is held: Run watches the
// lease its caller acquired, starts and supervises the command (Exec, Supervise:
// signals forwarded to its process group, the loss of the lock and the
// runtime limit acted on), releases once the whole group is gone, and
// returns how it all ended as an Outcome. It decides no exit status: the
// caller turns the Outcome into one.
package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/internal/cli/support/child"
	"github.com/lockctl/lockctl/internal/cli/support/errtext"
)

// DefaultKillAfter is the grace between SIGTERM and SIGKILL.
const DefaultKillAfter = 5 * time.Second

// OnLost says what to do with the child when the lock is lost.
type OnLost int

const (
	// OnLostTerm sends SIGTERM to the group, SIGKILL after the kill-after grace.
	OnLostTerm OnLost = iota
	// OnLostKill sends SIGKILL to the group at once.
	OnLostKill
	// OnLostIgnore lets the child run on unprotected; the loss is only
	// recorded.
	OnLostIgnore
)

func (o OnLost) String() string {
	switch o {
	case OnLostTerm:
		return "term"
	case OnLostKill:
		return "kill"
	case OnLostIgnore:
		return "ignore"
	}
	return fmt.Sprintf("OnLost(%d)", int(o))
}

// ErrBadOnLost is returned by ParseOnLost for anything other than term,
// kill or ignore.
var ErrBadOnLost = errors.New("runner: on-lost must be term, kill or ignore")

// ParseOnLost parses the --on-lost flag value.
func ParseOnLost(s string) (OnLost, error) {
	switch s {
	case "term", "":
		return OnLostTerm, nil
	case "kill":
		return OnLostKill, nil
	case "ignore":
		return OnLostIgnore, nil
	}
	return 0, fmt.Errorf("%w, not %q", ErrBadOnLost, s)
}

// Lease is what the supervisor needs of a lease watchdog; *Watched and
// *watchdog.Watchdog satisfy it.
type Lease interface {
	// Lost delivers the loss, once.
	Lost() <-chan error
	Renewals() int64
	// Margin is how long the server still holds the lease at the moment
	// Lost fires; the kill-after grace after a loss is cut to fit in it.
	Margin() time.Duration
	// Held reports whether the lease counts as held right now, by its
	// local deadline, whether or not Lost has been delivered yet.
	Held() bool
}

// ErrLapsed means the lease no longer counted as held when the child was
// about to start, so it was not started.
var ErrLapsed = errors.New("runner: lease lapsed before the command started")

// Config tunes Supervise. The zero Config forwards nothing, watches no
// lease and sets no runtime limit.
type Config struct {
	// Signals are forwarded to the child's group as they arrive (see
	// child.Notify).
	Signals <-chan os.Signal
	// Lease, when not nil, is watched for loss.
	Lease  Lease
	OnLost OnLost
	// KillAfter is the grace between SIGTERM and SIGKILL; 0 means
	// DefaultKillAfter. After a loss it is capped by LossGrace.
	KillAfter time.Duration
	// MaxRuntime > 0 terminates the group when the child has run that long.
	MaxRuntime time.Duration
	// Logf, when set, receives one line per decision (for stderr).
	Logf func(format string, args ...any)
	// Verbosef, when set, receives Exec's diagnostics (the start, the
	// status).
	Verbosef func(format string, args ...any)
	// Route, when set, is called by Exec before it catches the signals:
	// from then on they must no longer cancel the caller's context (they
	// belong to the child). Its result is called once the group is gone.
	Route func() (restore func())
}

// groupLinger is how long members may outlive the leader before Supervise
// says it is waiting for them.
const groupLinger = 500 * time.Millisecond

// LossGrace is the SIGTERM-to-SIGKILL grace used after a loss: killAfter,
// cut to two thirds of the lease's margin so that the group is killed
// while the server still holds the lease, with a third of the margin left
// for clock drift and for the kernel to deliver the kill.
func LossGrace(killAfter, margin time.Duration) time.Duration {
	if c := margin * 2 / 3; margin > 0 && killAfter > c {
		return c
	}
	return killAfter
}

// End is what a supervised run's end is to be reported as.
type End int

const (
	// Exited means the child's own status stands (it exited, or died of a
	// signal), also after a loss under OnLostIgnore.
	Exited End = iota
	// Lost means the lease was lost while the child ran (OnLost term or
	// kill).
	Lost
	// TimedOut means MaxRuntime ran out and the group was terminated.
	TimedOut
)

// Result is how a supervised run ended.
type Result struct {
	Status  child.Status // the direct child's status
	Lost    bool         // the lease was lost while the child ran
	LostErr error        // why (a *lock.LostError from a Watchdog)
	// Stopped: the loss signalled the group (OnLost term or kill) while
	// the direct child still ran, so Status is the stop's doing, not an
	// outcome of its own. False when the child had ended by itself before
	// the loss was acted on (this process stopped past the lease's
	// deadline while the child finished, say): Status is its own then.
	Stopped  bool
	TimedOut bool  // MaxRuntime ran out and the group was terminated
	Renewals int64 // successful renewals (0 without a Lease)
	End      End   // what the end is to be reported as
	// Foreground: the group had the terminal (child.Foreground).
	Foreground bool
	// GroupReceived: the signal the child died of reached its whole
	// group from outside, the terminal's ^C say (child.GroupReceived),
	// rather than the child alone.
	GroupReceived bool
	// Forwarded are the signals lockctl received and passed on to the
	// group, as opposed to those the group got straight from the terminal
	// or a sender of its own.
	Forwarded []syscall.Signal
}

// Supervise waits for c's whole process group to be gone, acting on
// signals, on the loss of the lease and on the runtime limit meanwhile. It
// never returns while a process of the group runs.
//
// End: Lost when the lease was lost (and OnLost is not ignore), even if
// the child then exited 0, since its work was not protected to the end.
// Lost is decided by the lease's deadline when the group is gone, not only
// by a delivered loss: a loss that the lease's watcher has not reported yet
// (it fired as the child exited, or this process was stopped past the
// deadline and the child ended meanwhile) counts all the same;
// else TimedOut when MaxRuntime ran out; else Exited, the child's status.
// With OnLostIgnore the child's status stands and only Result.Lost tells of
// the loss: the user chose to let the work finish and wants to know how it
// ended.
//
// Cancelling ctx is an order to stop the child: SIGTERM, then SIGKILL after
// KillAfter. A caller that forwards signals through Signals must pass a
// context those same signals do not cancel, or the child would get SIGTERM
// after every forwarded SIGINT.
func Supervise(ctx context.Context, c *child.Child, cfg *Config) Result {
	if cfg == nil {
		cfg = &Config{}
	}
	logf := cfg.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	killAfter := cfg.KillAfter
	if killAfter <= 0 {
		killAfter = DefaultKillAfter
	}
	var res Result
	var lost <-chan error
	lossGrace := killAfter
	if cfg.Lease != nil {
		lost = cfg.Lease.Lost()
		lossGrace = LossGrace(killAfter, cfg.Lease.Margin()).Round(time.Millisecond)
	}
	var expired <-chan time.Time
	if cfg.MaxRuntime > 0 {
		t := time.NewTimer(cfg.MaxRuntime)
		defer t.Stop()
		expired = t.C
	}
	exited := c.Exited()
	var linger <-chan time.Time
	done := ctx.Done()
loop:
	for {
		select {
		case sig := <-cfg.Signals:
			s, ok := sig.(syscall.Signal)
			if !ok {
				continue
			}
			res.Forwarded = append(res.Forwarded, s)
			// Not again when the group got it from the same sender.
			c.Forward(s)
		case err := <-lost:
			lost = nil
			stopOnLoss(c, cfg, &res, err, lossGrace, logf)
		case <-expired:
			expired = nil
			res.TimedOut = true
			logf("max runtime %v exceeded; sending SIGTERM to the child's process group, SIGKILL in %v", cfg.MaxRuntime, killAfter)
			_ = c.Terminate(killAfter)
		case <-done:
			done = nil
			logf("%v; sending SIGTERM to the child's process group, SIGKILL in %v", context.Cause(ctx), killAfter)
			_ = c.Terminate(killAfter)
		case <-exited:
			exited = nil
			// The group usually ends with its leader; say something only
			// when members stay behind (a background job, a daemon that
			// did not detach).
			linger = time.After(groupLinger)
		case <-linger:
			linger = nil
			logf("child %s; waiting for the rest of its process group (%d)", c.Status(), c.Pid())
		case <-c.Done():
			break loop
		}
	}
	if lost != nil {
		lostAtEnd(cfg.Lease, lost, &res, logf)
	}
	recordEnd(c, cfg, &res)
	return res
}

// stopOnLoss records the loss of the lease (err) in res and stops the
// child's process group as cfg.OnLost says: SIGTERM, then SIGKILL after
// grace; SIGKILL at once; or nothing.
func stopOnLoss(c *child.Child, cfg *Config, res *Result, err error, grace time.Duration, logf func(string, ...any)) {
	res.Lost, res.LostErr = true, err
	ended := c.Ended()
	res.Stopped = cfg.OnLost != OnLostIgnore && !ended
	if ended {
		// Its group may still hold members; they are stopped all the
		// same, but the command's status is its own.
		err = fmt.Errorf("%w; the command had ended by itself already", err)
	}
	switch cfg.OnLost {
	case OnLostTerm:
		logf("%s; sending SIGTERM to the child's process group, SIGKILL in %v", errtext.Of(err), grace)
		_ = c.Terminate(grace)
	case OnLostKill:
		logf("%s; killing the child's process group", errtext.Of(err))
		_ = c.Kill()
	default:
		logf("%s; the child keeps running unprotected (--on-lost ignore)", errtext.Of(err))
	}
}

// lostAtEnd records in res a loss of lease decided while the child's group
// was ending, which still means the end of the work may have overlapped
// another holder.
func lostAtEnd(lease Lease, lost <-chan error, res *Result, logf func(string, ...any)) {
	select {
	case err := <-lost:
		res.Lost, res.LostErr = true, err
		logf("%s as the child's process group ended", errtext.Of(err))
	default:
		if !lease.Held() {
			res.Lost, res.LostErr = true, errNotHeldAtEnd
			logf("%v", errNotHeldAtEnd)
		}
	}
}

// recordEnd records in res how the child and its group ended, and the end of
// the run that follows from it.
func recordEnd(c *child.Child, cfg *Config, res *Result) {
	res.Status = c.Status()
	res.Foreground = c.Foreground()
	if sig := res.Status.Signal; sig != 0 {
		res.GroupReceived = c.GroupReceived(sig)
	}
	if cfg.Lease != nil {
		res.Renewals = cfg.Lease.Renewals()
	}
	switch {
	case res.Lost && cfg.OnLost != OnLostIgnore:
		res.End = Lost
	case res.TimedOut:
		res.End = TimedOut
	}
}

var errNotHeldAtEnd = errors.New("the lease's local deadline passed before the child's process group ended")
