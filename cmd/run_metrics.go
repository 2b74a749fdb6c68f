package cmd

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/internal/runmetrics"
)

// runEnd is how a run ended, for its metrics: the exit status, and the
// signal (SIGINT or SIGQUIT, see dieOf) lockctl dies of after its
// clean-up, 0 if none.
type runEnd struct {
	code int
	died syscall.Signal
}

// runExit is how run ends for err, a signal that cancelled ctx counted as
// that signal.
func runExit(ctx context.Context, err error) runEnd {
	if errors.Is(err, context.Canceled) && context.Cause(ctx) != nil {
		err = context.Cause(ctx)
	}
	code := ExitCode(err)
	died, _ := dieOf(err, code)
	return runEnd{code: code, died: died}
}

// writeRunMetrics writes --metrics-file on every exit path of run; a file
// that cannot be written is a warning, never another exit status.
func writeRunMetrics(f *Factory, path string, rep *runReport, started time.Time, end runEnd) {
	now := time.Now()
	wait := time.Duration(rep.WaitedMS) * time.Millisecond
	if !rep.Acquired {
		// Not acquired: the whole run was the wait (busy, timed out, interrupted).
		wait = now.Sub(started)
	}
	exit := end.code
	err := runmetrics.Write(path, &runmetrics.Run{
		Name: rep.Name, Start: started, End: now, Wait: wait, ExitCode: exit, LeaseLost: rep.Lost,
		Acquired:    rep.Acquired,
		Succeeded:   rep.Acquired && rep.ChildExit != nil && *rep.ChildExit == 0 && exit == 0,
		Interrupted: end.died != 0,
	})
	if err != nil {
		f.IO.Errorf("warning: --metrics-file: %v", err)
	}
}
