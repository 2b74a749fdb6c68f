package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/lockctl/lockctl/internal/child"
	"github.com/lockctl/lockctl/internal/runner"
	"github.com/spf13/cobra"
)

// commandArgs splits `KEY [-- CMD ...]`: the key before the dash, the
// command after it. A command without the dash is refused rather than
// guessed at, since `lockctl once k rm -rf x` would otherwise parse rm's
// flags as lockctl's.
func commandArgs(c *cobra.Command, args []string, what string) (key string, argv []string, err error) {
	dash := c.ArgsLenAtDash()
	before := args
	if dash >= 0 {
		before, argv = args[:dash], args[dash:]
	}
	switch {
	case len(before) == 0 || before[0] == "":
		return "", nil, &UsageError{Err: errors.New("missing " + what), Hints: []string{"usage: " + c.UseLine()}}
	case len(before) > 1:
		return "", nil, &UsageError{Err: errors.New("unexpected arguments after " + what + ": " + before[1]),
			Hints: []string{"put the command after --: " + c.CommandPath() + " " + before[0] + " ... -- " + before[1] + " ..."}}
	case dash >= 0 && len(argv) == 0:
		return "", nil, &UsageError{Err: errors.New("missing command after --"), Hints: []string{"usage: " + c.UseLine()}}
	}
	return before[0], argv, checkUTF8(before[0], what)
}

// superviseCommand starts spec in its own process group with lockctl's
// streams (unless spec names others) and an environment without lockctl's
// Redis secrets (childSecretEnv), forwards signals to the group and
// supervises it with runner.Supervise under cfg (lease loss, max runtime).
// From the moment it is called, SIGINT, SIGTERM and SIGHUP no longer cancel
// ctx: they belong to the child. A command that cannot be started comes back
// as an *ExitError with the shell's 126 or 127 wrapping the
// *child.StartError. Any error means the command did not run.
func superviseCommand(ctx context.Context, f *Factory, spec child.Spec, cfg runner.Config) (runner.Result, error) {
	restore := f.OnSignal(func(os.Signal) {}) // child.Notify below receives them too
	defer restore()
	sigs, stop := child.Notify()
	defer stop()
	if ctx.Err() != nil {
		// A signal arrived between the decision and now: nothing ran.
		return runner.Result{}, context.Cause(ctx)
	}
	if cfg.Lease != nil && !cfg.Lease.Held() {
		// This process was held up (stopped, starved) between the grant
		// and now: the command would start outside the lease.
		return runner.Result{}, &ExitError{Code: runner.ExitLost, Err: fmt.Errorf("%w; it was not started", runner.ErrLapsed)}
	}
	unset, set := f.childSecretEnv()
	spec.Unset = append(spec.Unset, unset...)
	spec.Env = append(set, spec.Env...)
	if spec.Stdin == nil {
		spec.Stdin = f.IO.In
	}
	if spec.Stdout == nil {
		spec.Stdout = f.IO.Out
	}
	if spec.Stderr == nil {
		spec.Stderr = f.IO.ErrOut
	}
	// A command run under a lease dies with lockctl (the guard), unless
	// --on-lost ignore asked for it to run on without the lease anyway.
	spec.Guard = cfg.Lease != nil && cfg.OnLost != runner.OnLostIgnore
	ch, err := child.Start(spec)
	if err != nil {
		var se *child.StartError
		if errors.As(err, &se) {
			return runner.Result{}, &ExitError{Code: se.ExitCode(), Err: se}
		}
		// The system refused a pipe or a fork (for the command or its
		// guard): out of processes or descriptors, an environment fault
		// and no bug of lockctl's. The command did not run: 126, as a
		// shell says of a command it could not execute.
		return runner.Result{}, &ExitError{Code: ExitNoExec, Err: fmt.Errorf("the command could not be started: %w", err)}
	}
	name := spec.Script
	if len(spec.Argv) > 0 {
		name = spec.Argv[0]
	}
	f.Verbosef("started %s (pid %d, its own process group)", name, ch.Pid())
	cfg.Signals = sigs
	if cfg.Logf == nil {
		cfg.Logf = f.IO.Errorf
	}
	res := runner.Supervise(ctx, ch, &cfg)
	f.Verbosef("%s: %s", name, res.Status)
	return res, nil
}

// childExit turns a supervised run's result into the command's.
func childExit(res runner.Result) error {
	if res.Exit == 0 {
		return nil
	}
	e := &ExitError{Code: res.Exit, Silent: true}
	if s := res.Status.Signal; s != 0 && res.Exit == res.Status.ExitCode() {
		e.Died = s
		e.Terminal = res.Foreground && res.GroupReceived && !slices.Contains(res.Forwarded, s)
	}
	return e
}
