package cmd

import (
	"context"
	"errors"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/internal/cli/support/child"
	"github.com/lockctl/lockctl/internal/cli/support/runmetrics"
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
		Acquired:    rep.Acquired,
		Succeeded:   rep.Acquired && rep.ChildExit != nil && *rep.ChildExit == 0 && exit == 0,
		Interrupted: interrupted(rep, exit),
	})
	if err != nil {
		f.IO.Errorf("warning: --metrics-file: %v", err)
	}
}

// interrupted reports whether ^C or ^\ ended the run, the runs lockctl
// ends by dying of SIGINT or SIGQUIT (dieOf): exit 128+N for that signal,
// from CMD's death by it, or, when no CMD ran, from lockctl's own (the
// wait, or the start, interrupted). A CMD that exits 130 by itself was not
// interrupted. (Neither was a refusal that -E 130 turns into 130, which
// the record cannot tell from an interrupted wait: that reads as
// interrupted, with lockctl_run_acquired 0.)
func interrupted(rep *runReport, exit int) bool {
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGQUIT} {
		if exit != 128+int(s) {
			continue
		}
		if rep.ChildSignal != nil {
			return *rep.ChildSignal == child.SignalName(s)
		}
		return rep.ChildExit == nil
	}
	return false
}
