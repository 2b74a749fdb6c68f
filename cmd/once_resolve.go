package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/once"
	"github.com/spf13/cobra"
)

type onceResolveOptions struct {
	key, decision            string
	succeeded, failed, retry bool
	exit                     int
	reason                   string
}

// newOnceResolveCmd is `once resolve KEY`: an operator settles a key whose
// at-most-once claim lapsed without an outcome.
func newOnceResolveCmd(f *Factory) *cobra.Command {
	o := &onceResolveOptions{}
	c := &cobra.Command{
		Use:   "resolve KEY (--succeeded | --failed [--exit N] | --retry)",
		Short: "Settle a once KEY whose outcome is unknown (its claimant died mid-run)",
		Long: `Settle a KEY that 'lockctl once --at-most-once' left "outcome unknown": its
claimant died (or lost Redis) while the command ran, and no call runs the
command again until someone decides. First find out whether the command
took effect (ask the payment provider, read the logs), then:
  --succeeded  record exit 0: later calls replay success and do not run it;
  --failed     record a failure (exit 1, or --exit N): later calls replay it
               (and run it again only with --rerun-failed);
  --retry      delete the record: the next call runs the command.
A recorded outcome is kept for 24h, once's default --result-ttl (the
claimant's --result-ttl is not stored with the claim).
Only a KEY whose outcome is unknown is resolved; one that is running (its
claim alive: exit 75), done or absent (exit 65) is refused and left alone.
Every resolution is recorded in the audit stream (who, when, KEY, decision,
the claimant, --reason); 'inspect audit' lists it.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if c.ArgsLenAtDash() >= 0 {
				return &UsageError{Err: errors.New("`once resolve` takes no command"),
					Hints: []string{"a KEY named \"resolve\" is taken by this subcommand: use another KEY"}}
			}
			key, err := validName(args, "once KEY")
			if err != nil {
				return err
			}
			if len(args) > 1 {
				return usageErrorf("unexpected argument after once KEY: %s", args[1])
			}
			if err := o.validate(c); err != nil {
				return err
			}
			o.key = key
			return runOnceResolve(c.Context(), f, o)
		},
	}
	fs := c.Flags()
	fs.BoolVar(&o.succeeded, "succeeded", false, "the command took effect: record exit 0")
	fs.BoolVar(&o.failed, "failed", false, "the command did not take effect: record a failure (--exit)")
	fs.BoolVar(&o.retry, "retry", false, "delete the record: the next call runs the command")
	fs.IntVar(&o.exit, "exit", 1, "exit code recorded by --failed (1..255)")
	fs.StringVar(&o.reason, "reason", "", "why, for the audit log")
	return c
}

// validate checks the flags and sets o.decision: exactly one of
// --succeeded, --failed (with --exit 1..255) and --retry.
func (o *onceResolveOptions) validate(c *cobra.Command) error {
	if n := btoi(o.succeeded) + btoi(o.failed) + btoi(o.retry); n > 1 {
		return usageErrorf("--succeeded, --failed and --retry exclude each other: give one decision")
	}
	switch {
	case o.succeeded:
		o.decision = once.ResolveSucceeded
	case o.failed:
		o.decision = once.ResolveFailed
	case o.retry:
		o.decision = once.ResolveRetry
	default:
		return &UsageError{Err: errors.New("missing decision: --succeeded, --failed or --retry"), Hints: []string{"usage: " + c.UseLine()}}
	}
	if c.Flags().Changed("exit") && !o.failed {
		return usageErrorf("--exit goes with --failed")
	}
	if o.failed && (o.exit < 1 || o.exit > 255) {
		return usageErrorf("--exit %d: want 1..255 (a failure)", o.exit)
	}
	return nil
}

// runOnceResolve records o.decision for o.key, whose outcome is unknown, and
// says what later calls will do; a key in any other state is left alone.
func runOnceResolve(ctx context.Context, f *Factory, o *onceResolveOptions) error {
	key, decision := o.key, o.decision
	store, err := f.onceStore(nil)
	if err != nil {
		return err
	}
	r, err := store.Resolve(ctx, key, decision, &once.ResolveOptions{ExitCode: o.exit, Who: identity.UserHost(),
		Reason: o.reason, AuditKey: inspect.AuditKey}) // (once's default MAXLEN bounds the audit stream as force-release does)
	var nu *once.NotUnknownError
	switch {
	case errors.As(err, &nu) && nu.Record.State == "none":
		return reword(err, "%s has no record (never run, resolved --retry, or its outcome expired); nothing to resolve", key)
	case errors.As(err, &nu) && nu.Record.State == once.StateRunning:
		return withHint(reword(err, "%s is running: claimed by %s since %s, its lease alive; nothing to resolve", key,
			nu.Record.Owner, sinceText(nu.Record.StartedAt)), "a claim becomes unknown only when its lease lapses without an outcome")
	case errors.As(err, &nu):
		return withHint(reword(err, "%s is not unknown: %s; nothing changed", key, outcomeText(nu.Record)),
			"`lockctl inspect once "+key+"` shows the record")
	case err != nil:
		return err
	}
	f.record(ctx, events.OnceResolved, key, 0)
	if f.G.Output == "json" {
		return f.IO.PrintJSON(map[string]any{"name": key, "key": r.Before.Key, "decision": r.Decision,
			"exit": resolvedExit(r), "owner": r.Before.Owner, "audit_id": r.AuditID})
	}
	what := fmt.Sprintf("later calls replay exit %d", r.ExitCode)
	if r.Decision == once.ResolveRetry {
		what = "the record is gone and the next call runs the command"
	}
	f.IO.Errorf("resolved %s (claimed by %s) as %s: %s; recorded in the audit log as %s",
		key, orDash(r.Before.Owner), r.Decision, what, r.AuditID)
	return nil
}

func resolvedExit(r once.Resolution) any {
	if r.Decision == once.ResolveRetry {
		return nil
	}
	return r.ExitCode
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
