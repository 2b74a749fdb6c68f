package cmd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/lockctl/lockctl/pkg/events"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/cli/runner"
	"github.com/lockctl/lockctl/internal/cli/support/child"
	"github.com/lockctl/lockctl/internal/cli/support/errtext"
	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/spf13/cobra"
)

type runOptions struct {
	waitFlags
	renewEvery time.Duration
	onLost     string
	killAfter  time.Duration
	maxRuntime time.Duration
	reportFile string
	script     string

	metricsFile string // --metrics-file: see run_metrics.go
}

// runEventsDelay is how long run's events wait to be written. A command
// that ends within it has its acquisition's event written by the release's
// script with the release's own (events.Inline): no XADD of its own, and
// none in flight on the connection when the release is due, which would
// hold the release back by a round trip (or open a second connection) and
// the waiters behind it with it. A longer command's acquisition is written
// while it runs, this late; an event can be missing when lockctl is killed
// before it is written, as ever.
const runEventsDelay = time.Second

func newRunCmd(f *Factory) *cobra.Command {
	o := &runOptions{}
	c := &cobra.Command{
		Use:   "run NAME... [flags] -- CMD [ARGS...]",
		Short: "Run a command while holding a lock",
		Long: `Hold NAME while CMD runs: acquire (waiting by default, like flock), renew the
lease in the background, run CMD in its own process group, release once the
whole group is gone. CMD's exit status is lockctl's.

If the lease is lost while CMD runs (no renewal got through before its local
deadline, ttl - ttl/4 after the last one was sent), CMD's group gets SIGTERM,
then SIGKILL after --kill-after, and lockctl exits 76. With the default
--renew-every (ttl/6) a lease rides out a failover of up to 7/12 of its ttl.
Signals are forwarded to CMD's group; ^C ends lockctl after its clean-up.

Several NAMEs are held together, all or none. A 'lockctl run NAME' inside CMD
re-enters the lock instead of waiting for itself (--no-reentry waits).
While waiting, a line on stderr names the holder every few seconds.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			names, argv, err := runArgs(c, o, args)
			if err != nil {
				return err
			}
			return runRun(c, f, o, names, argv)
		},
	}
	setFinePrint(c, `The lease counts as held until the send time of the call that granted or
last renewed it + ttl - ttl/4. A grant whose reply comes later than that is
re-confirmed once or released (the wait goes on); CMD never starts on it.
If the lease is lost while CMD runs (no renewal succeeded in time), CMD's
group gets SIGTERM, then SIGKILL after --kill-after, and lockctl exits 76;
so it does if any part of CMD's run fell outside the lease.

Renewals go every --renew-every (default ttl/6; a failed one is retried at
once, then every 100ms doubling). A failover, or anything else that leaves
the lock's key unwritable for a while, is ridden through if a renewal gets
through before the deadline; at the worst phase (the stretch starting just
before a renewal is due) the longest stretch a lease survives is
  ttl - ttl/4 - renewal period = 7/12 ttl with the default period:
  --ttl 3s: 1.75s   6s: 3.5s   10s: 5.83s   30s: 17.5s   60s: 35s
A longer one ends in exit 76 at the deadline, never in a second holder. A
failover takes cluster-node-timeout (Cluster, default 15s) or Sentinel's
down-after-milliseconds (default 30s) plus about a second; run warns at
start when --ttl is too short for the deployment's setting. With
--wait-replicas N, a renewal fewer than N replicas acknowledged does not
count: a holder cut off with an old master loses its lease at the deadline.
SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 are forwarded to the
group, up to 0.2s late, and not when the group got the same signal by itself
at that moment (systemd's default KillMode; units set KillMode=mixed).
When CMD died of SIGINT or SIGQUIT (^C), or one interrupted the wait,
lockctl releases, writes its report and then dies of the same signal, so
that the script or loop around it stops, as it does around flock.

A 'lockctl run NAME' (or 'lock NAME') inside CMD re-enters the lock at once
(same token and fence, a hold count) instead of waiting for itself; the key
goes with the last release. --no-reentry waits instead.

Several NAMEs before -- (or with -c) are held together, as one set: taken
in one step, all of them or none (never some while waiting for the rest),
renewed and released in one step, and lost together when any one of them
is lost (exit 76). CMD gets LOCKCTL_NAME, LOCKCTL_KEY and LOCKCTL_FENCE of
the first NAME, LOCKCTL_SET_SIZE, and each NAME's own in the order given:
LOCKCTL_NAME_1, LOCKCTL_KEY_1, LOCKCTL_FENCE_1, then LOCKCTL_NAME_2 and so
on. On a Redis Cluster, the names must share a hash tag ({tag}a {tag}b). A
set has no --limit, --fifo or --shared, and no Redlock.

While waiting, a line on stderr names the holder (and its CI job URL): on a
terminal after 2s and every 5s; elsewhere after 5s, then after 10s, 20s,
40s and every 60s. A refusal that -E 0 turns into success prints nothing;
-q prints no refusal and no waiting line at all (errors still print). Under
GitHub Actions, refusals, timeouts and losses are also annotations, and a
row goes to $GITHUB_STEP_SUMMARY (--no-ci-output: neither).`)
	o.register(c)
	addQuietFlags(c, &f.G)
	fs := c.Flags()
	fs.Var(newDuration(&o.renewEvery, 0, false, false), "renew-every", "renewal period (default: ttl/6)")
	fs.Var(newEnum(&o.onLost, "term", "term", "kill", "ignore"), "on-lost", "when the lock is lost: term (SIGTERM, then SIGKILL), kill, ignore")
	fs.Var(newDuration(&o.killAfter, runner.DefaultKillAfter, false, false), "kill-after", "grace between SIGTERM and SIGKILL (capped to fit the lease's margin after a loss)")
	fs.Var(newDuration(&o.maxRuntime, 0, true, false), "max-runtime", "kill the command after D (exit 124); 0 = no limit (default: no limit)")
	fs.StringVar(&o.reportFile, "report-file", "", "write a JSON record of the run to this file at the end")
	fs.StringVar(&o.metricsFile, "metrics-file", "", "write node_exporter textfile metrics of the run to this file (atomically) at the end")
	fs.StringVarP(&o.script, "command", "c", "", "run this string with $SHELL -c (or /bin/sh) instead of CMD")
	return c
}

// runArgs splits the NAMEs from the command after "--". Words after "--"
// are the command's, never a NAME: `run -n -- echo hi` would otherwise take
// a lock called echo and run hi. Without "--" only -c gives the command,
// and every word is a NAME.
func runArgs(c *cobra.Command, o *runOptions, args []string) ([]string, []string, error) {
	dash := c.ArgsLenAtDash()
	if dash == 0 {
		return nil, nil, &UsageError{Err: errors.New("missing lock NAME before --"),
			Hints: []string{"usage: lockctl run NAME... [flags] -- CMD [ARGS...]"}}
	}
	scripted := c.Flags().Changed("command")
	nnames := dash
	switch {
	case dash == -1 && scripted:
		nnames = len(args)
	case dash == -1 && len(args) > 1:
		return nil, nil, &UsageError{Err: fmt.Errorf("unexpected argument %q before --", args[1]),
			Hints: []string{"usage: lockctl run NAME... [flags] -- CMD [ARGS...]"}}
	case dash == -1:
		nnames = 1
	}
	if _, err := newName(args, "lock NAME"); err != nil {
		return nil, nil, err
	}
	names := args[:nnames]
	for _, name := range names[1:] {
		if _, err := newName([]string{name}, "lock NAME"); err != nil {
			return nil, nil, err
		}
	}
	switch {
	case scripted && len(args) > nnames:
		return nil, nil, usageErrorf("-c and a command after -- exclude each other")
	case scripted && o.script == "":
		return nil, nil, usageErrorf("-c needs a command string")
	case !scripted && len(args) <= nnames:
		return nil, nil, &UsageError{Err: errors.New("missing the command to run"),
			Hints: []string{"usage: lockctl run NAME... [flags] -- CMD [ARGS...] or lockctl run NAME... -c 'STRING'"}}
	}
	return names, args[nnames:], nil
}

// runReport is the --report-file record.
type runReport struct {
	Name        string      `json:"name"`
	Key         string      `json:"key"`
	Owner       string      `json:"owner"`
	Fence       int64       `json:"fence"`
	Set         []setMember `json:"set,omitempty"` // several NAMEs: each one's key and fence
	Acquired    bool        `json:"acquired"`
	WaitedMS    int64       `json:"waited_ms"`
	HeldMS      int64       `json:"held_ms"`
	Renewals    int64       `json:"renewals"`
	Lost        bool        `json:"lost"`
	ChildExit   *int        `json:"child_exit"`   // null when no child ran or it died of a signal
	ChildSignal *string     `json:"child_signal"` // e.g. "SIGTERM"; null unless it died of one
	Exit        int         `json:"exit"`
}

func (o *runOptions) validate(c *cobra.Command) error {
	margin := leasetime.DefaultMargin(o.ttl)
	every := o.renewEvery
	if every == 0 {
		every = leasetime.DefaultRenewEvery(o.ttl)
	}
	if every >= o.ttl-margin {
		return &UsageError{Err: fmt.Errorf("--renew-every %v leaves no time to renew a %v lease before it counts as lost (at ttl-%v)", every, o.ttl, margin),
			Hints: []string{"use a --renew-every below ttl*3/4, or leave the default ttl/6"}}
	}
	return nil
}

func runRun(c *cobra.Command, f *Factory, o *runOptions, names []string, argv []string) (err error) {
	name := setName(names)
	if err := o.validate(c); err != nil {
		return err
	}
	onLost, err := runner.ParseOnLost(o.onLost)
	if err != nil {
		return &UsageError{Err: err}
	}
	// One Locker for the whole run, whose events pass through a gate:
	// the final release's wait for what it found (runner.EventGate).
	// The acquisition's event waits for the release to carry it
	// (runEventsDelay).
	f.eventsDelay = runEventsDelay
	gate := runner.NewEventGate(f.eventSink())
	var sink events.Sink // nil, not a nil *EventGate, when events are off
	if gate != nil {
		sink = gate
	}
	l, err := f.locker(sink)
	if err != nil {
		return err
	}
	ctx := c.Context()
	owner := o.owner
	if owner == "" {
		owner = identity.Owner()
	}
	rep := &runReport{Name: names[0], Key: l.Key(names[0]), Owner: owner}
	if o.metricsFile != "" {
		started := time.Now()
		defer func() { writeRunMetrics(f, o.metricsFile, rep, started, runExit(ctx, err)) }()
	}
	defer func() {
		rep.Exit = runExit(ctx, err)
		if o.reportFile != "" {
			if werr := writeReport(o.reportFile, rep); werr != nil {
				f.IO.Errorf("warning: --report-file: %v", werr)
			}
		}
		f.stepSummary(rep)
	}()

	// Beside the acquire, not before it; waited for at the end, so that
	// even a short run says it.
	warned := make(chan struct{})
	go func() { defer close(warned); warnFailoverTTL(ctx, f, o.ttl, o.renewEvery) }()
	defer func() { <-warned }()
	status := newWaitStatus(f, name)
	opts, err := o.runAcquireOptions(c, f, owner, status)
	if err != nil {
		return err
	}
	// Its fork and exec overlap the acquire's round trip.
	helper := child.StartHelper()
	started := time.Now()
	var lease *lock.Lease
	if len(names) > 1 {
		lease, err = o.takeSet(ctx, f, l, names, opts)
	} else {
		lease, err = o.take(ctx, f, l, name, opts)
	}
	if err != nil {
		helper.Close()
		return o.notAcquired(c, f, l, names, err, time.Since(started), rep)
	}
	rep.WaitedMS = lease.Waited().Milliseconds()
	logAcquired(f, lease)
	setEnv, setUnset := childSetEnv(l, lease, names, f.Getenv)
	switched, stopSwitch := masterSwitches(f)
	out := runner.Run(ctx, &runner.Job{
		Lease:          lease,
		Events:         gate,
		Watch:          &lock.WatchdogOptions{RenewEvery: o.renewEvery, Observer: renewWarning(f, name)},
		Switched:       switched,
		Command:        f.commandSpec(child.Spec{Argv: argv, Script: o.script, Env: append(childEnv(lease), setEnv...), Unset: setUnset, Helper: helper}),
		Supervise:      f.supervision(runner.Config{OnLost: onLost, KillAfter: o.killAfter, MaxRuntime: o.maxRuntime}),
		ReleaseTimeout: f.G.Timeout,
		Releaser:       runReleaser{f},
	})
	stopSwitch()
	rep.held(lease, setMembers(l, lease, names), out)
	held := "the lock " + name
	if len(names) > 1 {
		held = "the set of locks " + name
	}
	err = runError(out, held)
	if out.Uncovered != nil {
		err = uncoveredEnd(f, name, out.Uncovered, err, onLost)
	}
	return err
}

// runAcquireOptions are lock's acquire options, and the renewal period
// and owner's process start recorded with the lease, so that inspect can
// tell a holder that stopped renewing (killed) and a pid reused since.
func (o *runOptions) runAcquireOptions(c *cobra.Command, f *Factory, owner string, status *waitStatus) (*lock.AcquireOptions, error) {
	opts, err := o.acquireOptions(c, f, owner, status)
	if err != nil {
		return nil, err
	}
	opts.RenewEvery = o.renewEvery
	if opts.RenewEvery == 0 {
		opts.RenewEvery = leasetime.DefaultRenewEvery(o.ttl)
	}
	if o.owner == "" {
		opts.OwnerStart = identity.PIDStart()
	}
	return opts, nil
}

// notAcquired records the wait in rep and says why names were not
// acquired: which lock (of a set) was busy, or the interruption.
func (o *runOptions) notAcquired(c *cobra.Command, f *Factory, l *lock.Locker, names []string, err error, waited time.Duration, rep *runReport) error {
	rep.WaitedMS = waited.Milliseconds()
	if errors.Is(err, context.Canceled) {
		return err
	}
	name := setName(names)
	busy := name
	if len(names) > 1 {
		busy, err = setRefusal(f, l, names, err)
	}
	return o.refusedAs(c, name, busy, err, waited)
}

// held records in rep the lease held and what became of it and the child.
func (rep *runReport) held(lease *lock.Lease, set []setMember, out *runner.Outcome) {
	rep.Acquired, rep.Fence = true, lease.Fence()
	rep.Set = set
	rep.HeldMS, rep.Renewals, rep.Lost = out.Held.Milliseconds(), out.Renewals, out.Lost
	if out.Ran {
		if s := out.Result.Status.Signal; s != 0 {
			sig := child.SignalName(s)
			rep.ChildSignal = &sig
		} else {
			code := out.Result.Status.Code
			rep.ChildExit = &code
		}
	}
}

// renewWarning reports renewal trouble that has not lost the lease (Redis
// unreachable for a moment, a failover, replicas behind) on stderr, at most
// every few seconds: the first one at once, as it may precede a loss.
func renewWarning(f *Factory, name string) func(lock.WatchEvent) {
	var last time.Time
	return func(e lock.WatchEvent) {
		if e.Renewed {
			return
		}
		err := e.Err
		if now := time.Now(); last.IsZero() || now.Sub(last) >= statusEvery {
			last = now
			f.IO.Logf(ui.LevelWarn, ui.Fields("error", err), "warning: renewing %s: %v; retrying (the lease is held until its local deadline)", name, err)
		}
	}
}

// masterSwitches tells of each Sentinel failover (--sentinel), until stop
// is called; nil without Sentinels.
func masterSwitches(f *Factory) (switched <-chan struct{}, stop func()) {
	ch := make(chan struct{}, 1)
	stop = f.OnMasterSwitch(func() {
		select {
		case ch <- struct{}{}:
		default: // one renewal is pending already
		}
	})
	return ch, stop
}

// runReleaser is run's side of the release at the end (runner.Releaser).
type runReleaser struct{ f *Factory }

// Released words what the release at the end of run found, when it is
// worth a warning: holds of the token left behind, or a release that
// failed for another reason than the lock being gone or taken (those are
// the run's outcome, see uncoveredEnd) or the lease lost before it.
func (r runReleaser) Released(lease *lock.Lease, held, left int, err error, lost bool) {
	f := r.f
	gone := errors.Is(err, lock.ErrNotHeld) || errors.Is(err, lock.ErrNotOwner)
	switch {
	case err == nil && left > 0 && held == 1:
		// The outermost holder is done, but holds taken by re-entry
		// were not given back (a nested `lockctl lock` never released,
		// or a nested holder still running).
		f.IO.Errorf("warning: %s stays held: %d re-entered hold(s) of this token were not released; it frees when they are, or at its TTL", lease.Name(), left)
	case err == nil, lost, gone:
	case notWoken(f, "released "+lease.Name(), err):
	default:
		f.IO.Errorf("warning: releasing %s failed (it frees itself within %v): %s", lease.Name(), lease.TTL(), errtext.Of(err))
	}
}

// uncoveredEnd is run's outcome when the release after CMD found the lock
// deleted (gone) or taken by someone else, though no renewal had failed:
// exit 76, as for a lease lost while CMD ran, over CMD's own status (with
// --on-lost ignore CMD's status passes through, as after any loss). err is
// the outcome so far; an internal error stays what it is.
func uncoveredEnd(f *Factory, name string, gone, err error, onLost runner.OnLost) error {
	var bug *internalError
	if errors.As(err, &bug) {
		return err
	}
	what := "no longer held"
	var held *lock.HeldError
	if errors.As(gone, &held) {
		what = "held by " + held.Holder.Owner
	}
	status := "exit 0"
	if code := ExitCode(err); code != ExitOK {
		status = fmt.Sprintf("exit %d", code)
	}
	msg := fmt.Errorf("%s was %s when the command ended (%s): part of its run was not covered by the lease: %w", name, what, status, gone)
	if onLost == runner.OnLostIgnore {
		f.IO.Errorf("warning: %v", msg)
		return err
	}
	return withHint(lostError(msg),
		"something deleted or took the lock while the command ran (the command itself, a force-release, or a client that ignores the token): another holder may have overlapped its end")
}

// childEnv is what the child learns about the lock it runs under.
func childEnv(lease *lock.Lease) []string {
	env := []string{
		"LOCKCTL_HELD=1",
		"LOCKCTL_NAME=" + lease.Name(),
		"LOCKCTL_KEY=" + lease.Key(),
		"LOCKCTL_TOKEN=" + lease.Token(),
		"LOCKCTL_FENCE=" + strconv.FormatInt(lease.Fence(), 10),
		"LOCKCTL_TTL_MS=" + strconv.FormatInt(lease.TTL().Milliseconds(), 10),
		"LOCKCTL_OWNER=" + lease.Owner(),
		"LOCKCTL_ACQUIRED_AT=" + lease.AcquiredAt().UTC().Format(time.RFC3339Nano),
		"LOCKCTL_WAITED_MS=" + strconv.FormatInt(lease.Waited().Milliseconds(), 10),
	}
	// Always set, so that a nested run's child never inherits its
	// parent's mode: `lockctl fence check` reads it.
	return append(env, "LOCKCTL_MODE="+leaseMode(lease.Shared()))
}

// writeReport replaces path atomically, so a reader never sees half a record.
func writeReport(path string, rep *runReport) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	_, err = tmp.Write(append(b, '\n'))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name()) // best effort; err is what to report
	}
	return err
}

// warnFailoverTTL warns, once, when a lease of ttl renewed every `every`
// (0: the default) cannot ride through a failover of the --cluster or
// --sentinel deployment, as long as its settings say one takes
// (cluster-node-timeout, or the Sentinels' down-after-milliseconds, plus
// the election). One call, beside the acquire rather than before it; a
// server or Sentinel that refuses to tell (ACL) gets no warning.
func warnFailoverTTL(ctx context.Context, f *Factory, ttl, every time.Duration) {
	g := &f.G
	var (
		took time.Duration
		ok   bool
		what string
	)
	switch {
	case len(g.Redlock) > 0:
		return
	case len(g.Cluster) > 0:
		c, err := f.Client()
		if err != nil {
			return
		}
		took, ok = clusterFailoverTime(ctx, c)
		what = "cluster-node-timeout"
	case len(g.Sentinel) > 0 && g.SentinelMaster != "":
		took, ok = f.sentinelFailoverTime(ctx)
		what = "the Sentinels' down-after-milliseconds"
	}
	if !ok || ctx.Err() != nil {
		return
	}
	if w := leasetime.RideThrough(ttl, every, 0); w < took {
		f.IO.Errorf("warning: a --ttl %v lease rides through at most %v of failover (ttl - ttl/4 - the renewal period), but %s makes one take about %v: a failover will lose the lock (exit 76); a --ttl of %v or more rides through it",
			ttl, w.Round(time.Millisecond), what, took.Round(time.Millisecond), ttlFor(took, every))
	}
}

// ttlFor is the shortest whole-second TTL whose lease rides through an
// unwritable stretch of d (leasetime.RideThrough), renewed every `every` (0:
// the default).
func ttlFor(d, every time.Duration) time.Duration {
	for ttl := time.Second; ; ttl += time.Second {
		if leasetime.RideThrough(ttl, every, 0) >= d {
			return ttl
		}
	}
}
