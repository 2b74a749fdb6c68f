package runner

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockctl/lockctl/internal/cli/support/child"
)

// ErrNotStarted is the error when the system refused a pipe or a fork for
// the command or its guard (out of processes or descriptors), an
// environment fault and no bug: the command did not run. A command that cannot be run at all is
// a *child.StartError instead (child.ErrNotFound, child.ErrNotExecutable).
var ErrNotStarted = errors.New("the command could not be started")

// Exec starts spec in its own process group and supervises it under cfg
// (Supervise) until the whole group is gone. Signals are caught from the
// start (child.Notify, after cfg.Route): they belong to the child and are
// forwarded to its group.
//
// An error means the command did not run: ctx's cause when ctx ended
// before the start (a signal arrived between the decision and now),
// ErrLapsed when cfg.Lease no longer counted as held, a *child.StartError,
// or ErrNotStarted. A command under a lease dies with this process (the
// guard), unless OnLostIgnore asked for it to run on without the lease.
func Exec(ctx context.Context, spec child.Spec, cfg Config) (Result, error) {
	started := false
	defer func() {
		if !started {
			spec.Helper.Close() // child.Start owns it once called
		}
	}()
	if cfg.Route != nil {
		defer cfg.Route()()
	}
	sigs, stop := child.Notify()
	defer stop()
	if ctx.Err() != nil {
		return Result{}, context.Cause(ctx)
	}
	if cfg.Lease != nil && !cfg.Lease.Held() {
		// This process was held up (stopped, starved) between the grant
		// and now: the command would start outside the lease.
		return Result{}, fmt.Errorf("%w; it was not started", ErrLapsed)
	}
	spec.Guard = cfg.Lease != nil && cfg.OnLost != OnLostIgnore
	started = true
	c, err := child.Start(spec)
	if err != nil {
		if errors.As(err, new(*child.StartError)) {
			return Result{}, err
		}
		return Result{}, fmt.Errorf("%w: %w", ErrNotStarted, err)
	}
	name := spec.Script
	if len(spec.Argv) > 0 {
		name = spec.Argv[0]
	}
	verbosef := cfg.Verbosef
	if verbosef == nil {
		verbosef = func(string, ...any) {}
	}
	verbosef("started %s (pid %d, process group %d)", name, c.CommandPid(), c.Pid())
	cfg.Signals = sigs
	res := Supervise(ctx, c, &cfg)
	verbosef("%s: %s", name, res.Status)
	return res, nil
}
