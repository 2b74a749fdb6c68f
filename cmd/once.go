package cmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/pkg/events"

	"github.com/lockctl/lockctl/internal/cli/runner"
	"github.com/lockctl/lockctl/internal/cli/support/child"
	"github.com/lockctl/lockctl/internal/cli/support/errtext"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/lockctl/lockctl/pkg/once"
	"github.com/spf13/cobra"
)

type onceOptions struct {
	ttl          time.Duration
	resultTTL    time.Duration
	fingerprint  string
	rerunFailed  bool
	conflictExit int
	owner        string
	atMostOnce   bool
	atLeastOnce  bool
}

func newOnceCmd(f *Factory) *cobra.Command {
	o := &onceOptions{}
	c := &cobra.Command{
		Use:   "once KEY [flags] -- CMD [ARGS...]",
		Short: "Run a command at most once per key, replaying the recorded outcome afterwards",
		Long: `Run CMD at most once per KEY while its record lives (key once:KEY).

The first call claims KEY, runs CMD (its own process group, signals
forwarded, streams passed through), renews the claim every --ttl/3 while CMD
runs, and records CMD's exit code for --result-ttl. Later calls:
  - while CMD runs elsewhere: exit 75 (or -E N), naming the claimant;
  - after it finished: do not run CMD, print the recorded outcome to stderr
    and exit with the recorded exit code (--rerun-failed runs CMD again when
    that code was not 0);
  - with another --fingerprint than the record's: exit 65.
A claimant that dies stops renewing: by default (--at-least-once) a call
after --ttl runs CMD again; with --at-most-once it finds KEY "outcome
unknown" and exits 77 until 'lockctl once resolve KEY' settles it.

CMD sees LOCKCTL_ONCE_KEY (the Redis key) and LOCKCTL_ONCE_ATTEMPT (1, or
more when rerunning a failure).`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			key, argv, err := commandArgs(c, args, "once KEY")
			if err != nil {
				return err
			}
			if len(argv) == 0 {
				return &UsageError{Err: errors.New("missing command"), Hints: []string{"usage: " + c.UseLine()}}
			}
			if o.atMostOnce && o.atLeastOnce {
				return usageErrorf("--at-most-once and --at-least-once exclude each other")
			}
			return runOnce(c, f, o, key, argv)
		},
	}
	setFinePrint(c, `A claimant that dies stops renewing. By default (--at-least-once) its claim
expires after --ttl and the next call runs CMD again: right for a command
that is safe to repeat, wrong for one that must never run twice. With
--at-most-once the claim carries that mode and does not expire: when its
lease lapses without a recorded outcome (the claimant was killed, its host
died), the next call marks KEY "outcome unknown" and refuses with exit 77,
as does every later call, until someone finds out what happened (did the
payment go through?) and runs 'lockctl once resolve KEY --succeeded',
'--failed' or '--retry'. 'inspect once --unknown' lists such keys.

The claim is a lease: it counts as held until its send
time (or its last renewal's) + ttl - ttl/4. A claim whose reply comes later
than that is re-confirmed once or given up, and CMD does not run (exit 75).
If the claim is lost while CMD runs, CMD's process group gets SIGTERM
(SIGKILL after a grace that fits the claim's margin) and lockctl exits 76;
nothing is recorded for a CMD stopped part way (at least once the next call
runs it again; at most once KEY is "outcome unknown" at once). A CMD that
had ended by itself before lockctl could act (lockctl paused past the
claim's deadline) has its own status recorded while the record is still
this claim's, and lockctl exits with it.`)
	fs := c.Flags()
	fs.Var(newDuration(&o.ttl, once.DefaultTTL, false, false), "ttl", "claim lease, renewed every ttl/3 while CMD runs; a dead claimant's claim expires after it")
	fs.Var(newDuration(&o.resultTTL, once.DefaultResultTTL, false, false), "result-ttl", "how long the outcome is kept (and CMD not run again)")
	fs.StringVar(&o.fingerprint, "fingerprint", "", "identifies the request; a call with the same KEY and another fingerprint exits 65")
	fs.BoolVar(&o.rerunFailed, "rerun-failed", false, "run CMD again when the recorded exit code was not 0")
	fs.VarP(newExitCode(&o.conflictExit, ExitNotAcquired), "conflict-exit-code", "E", "exit code when KEY is in progress elsewhere")
	addQuietFlags(c, &f.G)
	fs.StringVar(&o.owner, "owner", "", "claimant recorded with KEY (default user@host:pid)")
	fs.BoolVar(&o.atMostOnce, "at-most-once", false, "never run CMD twice: a claimant that dies without an outcome leaves KEY unknown (exit 77) until 'once resolve'")
	fs.BoolVar(&o.atLeastOnce, "at-least-once", false, "the default: a claimant that dies frees KEY after --ttl and the next call runs CMD again")
	c.AddCommand(newOnceResolveCmd(f))
	return c
}

func (f *Factory) onceStore(o *onceOptions) (*once.Store, error) {
	client, err := f.Client()
	if err != nil {
		return nil, err
	}
	opts := &once.Options{}
	if o != nil {
		opts.TTL, opts.ResultTTL, opts.Owner = o.ttl, o.resultTTL, o.owner
	}
	return once.New(client, opts), nil
}

func runOnce(c *cobra.Command, f *Factory, o *onceOptions, key string, argv []string) error {
	store, err := f.onceStore(o)
	if err != nil {
		return err
	}
	ctx := c.Context()
	claim, err := store.Claim(ctx, key, &once.ClaimOptions{Fingerprint: o.fingerprint, RerunFailed: o.rerunFailed, AtMostOnce: o.atMostOnce})
	if err != nil {
		if errors.As(err, new(*once.DoneError)) {
			f.record(ctx, events.OnceReplayed, key, 0)
		}
		return explainOnce(key, err, o.conflictExit)
	}
	f.Verbosef("claimed %s (attempt %d, ttl %s)", claim.Key, claim.Attempt, claim.TTL)

	// The keeper outlives signals: they go to the child, and the claim must
	// be held until the child's group is gone.
	kctx, kcancel := context.WithCancel(context.WithoutCancel(ctx))
	defer kcancel()
	keeper := claim.KeepAlive(kctx, 0)
	lease := newKeeperLease(keeper)
	env := []string{"LOCKCTL_ONCE_KEY=" + claim.Key, "LOCKCTL_ONCE_ATTEMPT=" + strconv.Itoa(claim.Attempt)}
	res, runErr := superviseCommand(ctx, f, child.Spec{Argv: argv, Env: env}, runner.Config{Lease: lease})
	keeper.Stop()
	lease.close()

	// Recorded on a fresh context: the outcome matters even when lockctl
	// was interrupted.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), f.G.Timeout)
	defer rcancel()
	if runErr != nil {
		// CMD never ran: free KEY for the next call rather than record
		// an outcome of something that did not happen.
		if err := claim.Abandon(rctx); err != nil && o.atMostOnce {
			// An at-most-once claim does not expire: it lapses into
			// "unknown", though nothing ran.
			f.IO.Errorf("could not free %s after the command failed to start: %v (it becomes unknown once its lease lapses, in %s; the command did not run, so `lockctl once resolve %s --retry` frees it)",
				claim.Key, err, claim.TTL, key)
		} else if err != nil {
			f.IO.Errorf("could not free %s after the command failed to start: %s (it frees itself in %s)", claim.Key, errtext.Of(err), claim.TTL)
		}
		return runErr
	}
	if res.Lost && res.Stopped {
		// CMD was stopped part way because the claim was lost: its
		// status is lockctl's doing, no outcome of its own.
		return onceStopped(f, rctx, claim, key, res)
	}
	// CMD's own status, also after a loss it had ended before (lockctl
	// was paused past the claim's deadline): never lockctl's 76.
	code := statusExit(res.Status)
	rec, err := claim.Complete(rctx, code)
	var taken *once.NotOwnerError
	switch {
	case errors.As(err, &taken):
		f.warnf("%s: the command's %s was not recorded: %s", claim.Key, statusText(res.Status), elsewhere(taken.Record))
		what := "taken over by " + taken.Record.Owner
		if taken.Record.Resolved != "" {
			what = "resolved by " + taken.Record.ResolvedBy
		}
		return uncoveredClaim(claim.Key, res, what)
	case errors.Is(err, once.ErrLost):
		f.warnf("%s: the command's %s was not recorded: its record is gone (an operator's `lockctl once resolve %s --retry`, or a deletion): the next call runs it again",
			claim.Key, statusText(res.Status), key)
		return uncoveredClaim(claim.Key, res, "gone")
	case err != nil && o.atMostOnce:
		f.IO.Errorf("outcome not recorded: %v; %s becomes unknown once its lease lapses (%s): the command's %s; find out whether it took effect, then `lockctl once resolve %s`",
			err, key, claim.TTL, statusText(res.Status), key)
	case err != nil:
		f.IO.Errorf("outcome not recorded: %s; %s runs again once its claim expires (%s)", errtext.Of(err), key, claim.TTL)
	case res.Lost:
		// The claim lapsed while CMD ran, and CMD ended by itself before
		// lockctl could act on it; the record was still this claim's.
		f.warnf("%s: the claim lapsed while the command ran (lockctl could not renew it in time), but the command had ended by itself, with %s, and nobody else had taken %s: recorded that outcome",
			claim.Key, statusText(res.Status), key)
		return exitStatus(res)
	case rec.Expired:
		f.IO.Errorf("the claim on %s lapsed before the outcome was recorded; recorded anyway (nobody else took over)", claim.Key)
		return uncoveredClaim(claim.Key, res, "gone")
	default:
		f.Verbosef("recorded exit %d for %s (kept %s)", rec.ExitCode, claim.Key, o.resultTTL)
	}
	return childExit(res, "the claim on "+claim.Key)
}

// onceStopped is once's end when the claim was lost while CMD ran and CMD
// was stopped part way: its outcome is unknown. At most once, the key
// says so ("unknown") until an operator resolves it; at least once, the
// claim is dropped and the next call runs CMD again. Either way unless the
// key is someone else's by now. Exit 76.
func onceStopped(f *Factory, ctx context.Context, claim *once.Claim, key string, res runner.Result) error {
	status := statusText(res.Status)
	var err error
	if claim.AtMostOnce {
		err = claim.MarkUnknown(ctx)
	} else {
		err = claim.Abandon(ctx)
	}
	var taken *once.NotOwnerError
	switch {
	case errors.As(err, &taken):
		f.warnf("%s: the command was stopped part way (%s) and nothing was recorded: %s", claim.Key, status, elsewhere(taken.Record))
	case claim.AtMostOnce && errors.Is(err, once.ErrLost):
		f.warnf("%s: the command was stopped part way (%s) and nothing was recorded: its record is gone (an operator's `lockctl once resolve %s --retry`, or a deletion): the next call runs it again",
			claim.Key, status, key)
	case claim.AtMostOnce && err != nil:
		f.warnf("%s: the command was stopped part way (%s): whether it took effect is unknown; marking the key unknown failed (%v): it becomes unknown by itself; find out, then `lockctl once resolve %s`",
			claim.Key, status, err, key)
	case claim.AtMostOnce:
		f.warnf("%s: the command was stopped part way (%s): whether it took effect is unknown, and %s is \"outcome unknown\" now: find out, then `lockctl once resolve %s --succeeded`, `--failed` or `--retry`",
			claim.Key, status, key, key)
	case err != nil && !errors.Is(err, once.ErrLost):
		f.warnf("%s: the command was stopped part way (%s) and nothing was recorded; freeing the key failed (%v): it runs again once its claim expires (%s)",
			claim.Key, status, err, claim.TTL)
	default:
		f.warnf("%s: the command was stopped part way (%s) and nothing was recorded: the next call runs it again", claim.Key, status)
	}
	return childExit(res, "the claim on "+claim.Key)
}

// elsewhere says whose a once record is now that it is no longer this
// claim's: an operator's resolution, or another claimant's.
func elsewhere(r once.Record) string {
	switch {
	case r.Resolved != "":
		return fmt.Sprintf("an operator resolved it meanwhile (%s, exit %d, by %s), which stands", r.Resolved, r.ExitCode, r.ResolvedBy)
	case r.State == once.StateDone:
		return fmt.Sprintf("it is another claimant's record now (%s)", outcomeText(r))
	}
	return fmt.Sprintf("it is another claimant's now (%s, since %s), and that run may have overlapped this one", r.Owner, sinceText(r.StartedAt))
}

// statusText is a command's status in words: "exit 3", "death by SIGTERM".
func statusText(st child.Status) string {
	if st.Signal != 0 {
		return fmt.Sprintf("death by %s (%d)", child.SignalName(st.Signal), signalExit(st.Signal))
	}
	return fmt.Sprintf("exit %d", st.Code)
}

// exitStatus is the error of a command's own status, whatever became of
// the lease meanwhile: nil for 0.
func exitStatus(res runner.Result) error {
	res.End = runner.Exited
	return childExit(res, "")
}

// uncoveredClaim is once's outcome when recording it found the claim gone
// or taken over though the keeper had not lost it (something deleted the
// record while CMD ran, CMD itself maybe): part of CMD's run was not
// covered by the claim, and another call may have run CMD meanwhile. Exit
// 76, as after a claim lost while CMD ran.
func uncoveredClaim(key string, res runner.Result, what string) error {
	if res.Lost {
		// The keeper lost it first: 76 already, and said so.
		return childExit(res, "the claim on "+key)
	}
	return lostError(fmt.Errorf("the claim on %s was %s when the command ended (exit %d): part of its run was not covered by the claim", key, what, superviseExit(res)))
}

// explainOnce words a refused claim for people and picks its exit code: 75
// (or -E) in progress, the recorded code after a replay, 65 for another
// fingerprint.
func explainOnce(key string, err error, conflictExit int) error {
	var (
		running *once.InProgressError
		done    *once.DoneError
		fp      *once.FingerprintError
		unknown *once.UnknownError
		slow    *lock.LateError
	)
	switch {
	case errors.As(err, &unknown):
		r := unknown.Record
		return withHint(reword(err, "%s: outcome unknown: the claim by %s (started %s) lapsed without a recorded outcome; not running it",
			key, r.Owner, sinceText(r.StartedAt)),
			"find out whether the command took effect (the payment provider, the logs), then run `lockctl once resolve "+key+
				" --succeeded`, `--failed` or `--retry` with --reason",
			"`lockctl inspect once --unknown` lists every unresolved key")
	case errors.As(err, &slow) && slow.Slow:
		return withHint(err, slowLinkHint(slow))
	case errors.As(err, &running):
		r := running.Record
		err = reword(err, "%s is in progress: claimed by %s since %s; not running it", key, r.Owner, sinceText(r.StartedAt))
		if conflictExit != ExitNotAcquired {
			return &ExitError{Code: conflictExit, Err: err}
		}
		return err
	case errors.As(err, &done):
		r := done.Record
		msg := fmt.Sprintf("%s already ran: %s; not running it again", key, outcomeText(r))
		if r.ExitCode != 0 {
			return &ExitError{Code: r.ExitCode, Err: withHint(reword(err, "%s", msg),
				"--rerun-failed runs it again after a failure")}
		}
		return &ExitError{Code: 0, Err: reword(err, "%s", msg)}
	case errors.As(err, &fp):
		return withHint(reword(err, "%s was claimed with fingerprint %q, not %q; refusing to run or replay another request's outcome", key, fp.Recorded, fp.Given),
			"a different request needs a different KEY")
	}
	return err
}

// outcomeText: "exit 3 at 2025-01-02T03:04:05Z by u@h:1 after 1.2s (attempt 1)".
func outcomeText(r once.Record) string {
	s := fmt.Sprintf("exit %d at %s by %s after %s", r.ExitCode, r.FinishedAt.Local().Format(time.RFC3339), r.Owner, r.Duration)
	if r.Attempts > 1 {
		s += fmt.Sprintf(" (attempt %d)", r.Attempts)
	}
	switch {
	case r.Resolved != "":
		s = fmt.Sprintf("resolved %s (exit %d) at %s by %s; the claim by %s lapsed without an outcome",
			r.Resolved, r.ExitCode, r.FinishedAt.Local().Format(time.RFC3339), r.ResolvedBy, r.Owner)
	case r.Expired:
		s += " (its claim had lapsed before the outcome was recorded)"
	}
	return s
}

func sinceText(t time.Time) string {
	if t.IsZero() {
		return "an unknown time"
	}
	return fmt.Sprintf("%s (%s ago)", t.Local().Format(time.RFC3339), time.Since(t).Round(time.Second))
}

// keeperLease lets runner.Supervise watch a once claim as it watches a lock
// lease, so loss, signals and the kill grace behave exactly as in `run`.
type keeperLease struct {
	k    *once.Keeper
	lost chan error
	stop chan struct{}
}

func newKeeperLease(k *once.Keeper) *keeperLease {
	l := &keeperLease{k: k, lost: make(chan error, 1), stop: make(chan struct{})}
	go func() {
		select {
		case <-k.Lost():
			l.lost <- k.Err()
		case <-l.stop:
		}
	}()
	return l
}

func (l *keeperLease) Lost() <-chan error    { return l.lost }
func (l *keeperLease) Renewals() int64       { return int64(l.k.Renewals()) }
func (l *keeperLease) Margin() time.Duration { return l.k.Margin() }
func (l *keeperLease) Held() bool            { return l.k.Held() }

func (l *keeperLease) close() { close(l.stop) }
