package cmd

import (
	"context"
	"errors"
	"os"

	"github.com/lockctl/lockctl/internal/cli/runner"
	"github.com/lockctl/lockctl/internal/cli/support/child"
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
	return before[0], argv, checkNewName(before[0], what)
}

// commandSpec is spec with lockctl's streams (unless spec names others) and
// an environment without lockctl's Redis secrets (childSecretEnv): what a
// command lockctl runs (run, once) starts with.
func (f *Factory) commandSpec(spec child.Spec) child.Spec {
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
	return spec
}

// supervision is cfg with lockctl's voice (decisions on stderr, the start
// and the status under -v) and its signal routing: from the command's
// start, SIGINT, SIGTERM and SIGHUP no longer cancel the command's
// context, they belong to the child (runner.Exec).
func (f *Factory) supervision(cfg runner.Config) runner.Config {
	cfg.Route = func() func() {
		return f.OnSignal(func(os.Signal) {}) // child.Notify receives them too
	}
	if cfg.Logf == nil {
		cfg.Logf = f.warnf
	}
	cfg.Verbosef = f.Verbosef
	return cfg
}

// superviseCommand runs spec as lockctl runs a command (commandSpec,
// supervision) under cfg: runner.Exec, whose errors mean the command did
// not run (exitClass gives them the shell's 126 and 127, 76 for a lapsed
// lease).
func superviseCommand(ctx context.Context, f *Factory, spec child.Spec, cfg runner.Config) (runner.Result, error) {
	return runner.Exec(ctx, f.commandSpec(spec), f.supervision(cfg))
}
