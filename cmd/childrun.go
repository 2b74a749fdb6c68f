package cmd

import (
	"context"
	"errors"
	"os"

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
	return before[0], argv, nil
}

// superviseCommand runs argv in its own process group with lockctl's
// streams, forwards signals to the group and supervises it with
// runner.Supervise (lease loss, if lease is not nil). From the moment it is
// called, SIGINT, SIGTERM and SIGHUP no longer cancel ctx: they belong to
// the child. A command that cannot be started comes back as an *ExitError
// with the shell's 126 or 127 wrapping the *child.StartError. Any error
// means the command did not run.
func superviseCommand(ctx context.Context, f *Factory, argv, env []string, lease runner.Lease) (runner.Result, error) {
	restore := f.OnSignal(func(os.Signal) {}) // child.Notify below receives them too
	defer restore()
	sigs, stop := child.Notify()
	defer stop()
	if ctx.Err() != nil {
		// A signal arrived between the decision and now: nothing ran.
		return runner.Result{}, context.Cause(ctx)
	}
	ch, err := child.Start(child.Spec{Argv: argv, Env: env, Stdin: f.IO.In, Stdout: f.IO.Out, Stderr: f.IO.ErrOut})
	if err != nil {
		var se *child.StartError
		if errors.As(err, &se) {
			return runner.Result{}, &ExitError{Code: se.ExitCode(), Err: se}
		}
		return runner.Result{}, err
	}
	f.Verbosef("started %s (pid %d, its own process group)", argv[0], ch.Pid())
	res := runner.Supervise(ctx, ch, &runner.Config{Signals: sigs, Lease: lease, Logf: f.IO.Errorf})
	f.Verbosef("%s: %s", argv[0], res.Status)
	return res, nil
}

// childExit turns a supervised run's exit code into the command's result.
func childExit(code int) error {
	if code == 0 {
		return nil
	}
	return &ExitError{Code: code, Silent: true}
}
