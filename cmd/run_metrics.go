package cmd

import (
	"context"
	"errors"
	"time"

	"github.com/lockctl/lockctl/internal/runmetrics"
)

// runExit is the exit status run returns for err, a signal that cancelled
// ctx counted as that signal.
func runExit(ctx context.Context, err error) int {
	if errors.Is(err, context.Canceled) && context.Cause(ctx) != nil {
		err = context.Cause(ctx)
	}
	return ExitCode(err)
}

// writeRunMetrics writes --metrics-file on every exit path of run; a file
// that cannot be written is a warning, never another exit status.
func writeRunMetrics(f *Factory, path string, rep *runReport, started time.Time, exit int) {
	end := time.Now()
	wait := time.Duration(rep.WaitedMS) * time.Millisecond
	if !rep.Acquired {
		// Not acquired: the whole run was the wait (busy, timed out, interrupted).
		wait = end.Sub(started)
	}
	err := runmetrics.Write(path, &runmetrics.Run{
		Name: rep.Name, Start: started, End: end, Wait: wait, ExitCode: exit, LeaseLost: rep.Lost,
		Acquired:  rep.Acquired,
		Succeeded: rep.Acquired && rep.ChildExit != nil && *rep.ChildExit == 0 && exit == 0,
	})
	if err != nil {
		f.IO.Errorf("warning: --metrics-file: %v", err)
	}
}
