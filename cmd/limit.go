package cmd

import (
	"errors"
	"fmt"
	"github.com/lockctl/lockctl/pkg/events"
	"strings"

	"github.com/lockctl/lockctl/internal/cli/runner"
	"github.com/lockctl/lockctl/internal/cli/support/child"
	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/spf13/cobra"
)

type limitOptions struct {
	rate         string
	algo         string
	burst        int64
	cost         int64
	wait         bool
	reset        bool
	conflictExit int
}

func newLimitCmd(f *Factory) *cobra.Command {
	o := &limitOptions{}
	c := &cobra.Command{
		Use:   "limit KEY --rate N/PERIOD [flags] [-- CMD [ARGS...]]",
		Short: "Rate-limit a call: exit 0 when allowed, 75 when limited, or run CMD when allowed",
		Long: `Decide whether one call on KEY is within --rate, counting in Redis (key
limit:KEY) on the server's clock, so every machine sharing the Redis shares
the limit. Without CMD: exit 0 when allowed, 75 (or -E N) when limited. With
CMD: run it when allowed and exit with its status; when limited, CMD does not
run. --wait sleeps until the call is allowed instead of exiting 75.

The decision goes to stderr as
  allowed remaining=N retry_after=D reset_after=D
(durations in Go form rounded up to the millisecond, e.g. 0s, 250ms, 59.5s);
-o json prints it on stdout instead. With CMD, only a refusal is printed.

Algorithms (--algo):
  gcra            default; a burst of B, then one call every PERIOD/N
  sliding-log     exact: never more than N in any PERIOD; memory grows with N
  sliding-window  two counters, previous window weighted; approximate, O(1)
  token-bucket    a bucket of B tokens refilled at N per PERIOD

KEY keeps the --algo, --rate and --burst it was first written under: a call
with others exits 64 and changes nothing; --reset changes them on purpose.`,
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			key, argv, err := commandArgs(c, args, "rate-limit KEY")
			if err != nil {
				return err
			}
			return runLimit(c, f, o, key, argv)
		},
	}
	setFinePrint(c, `Algorithms (--algo):
  gcra            default; one key per KEY; a burst of B, then one call every PERIOD/N
  sliding-log     exact: never more than N in any PERIOD; memory grows with N
  sliding-window  two counters, previous window weighted; approximate, O(1)
  token-bucket    a bucket of B tokens refilled at N per PERIOD

KEY keeps the configuration it was first written under (--algo, --rate
and, for gcra and token-bucket, --burst), stored with its state: a call
with another one exits 64 naming the stored one and changes nothing, so one
misconfigured caller can neither raise nor lower everyone's limit. To change
it on purpose, pass --reset once with the new flags: KEY's state is
forgotten and this call is decided, and admitted, under the new
configuration (a fresh start: a full burst). A key left idle until its
state expires (reset_after) takes the configuration of the next call.`)
	fs := c.Flags()
	fs.StringVar(&o.rate, "rate", "", "N/PERIOD: 100/1m, 10/s, 5000/1h, 3/500ms (required)")
	algos := make([]string, len(limit.Algorithms))
	for i, a := range limit.Algorithms {
		algos[i] = string(a)
	}
	fs.Var(newEnum(&o.algo, string(limit.GCRA), algos...).named("ALGO"), "algo", "algorithm: "+strings.Join(algos, ", "))
	fs.Int64Var(&o.burst, "burst", 0, "calls an idle key admits at once (gcra, token-bucket; default N)")
	fs.Int64Var(&o.cost, "cost", 1, "how much of the limit this call uses")
	fs.BoolVar(&o.wait, "wait", false, "sleep until the call is allowed instead of exiting 75")
	fs.BoolVar(&o.reset, "reset", false, "forget KEY's state and stored configuration, then decide (and admit) this call under the given --rate, --algo and --burst")
	fs.VarP(newExitCode(&o.conflictExit, ExitNotAcquired), "conflict-exit-code", "E", "exit code when the call is rate limited")
	addQuietFlags(c, &f.G)
	return c
}

// rateHint says what --rate accepts.
const rateHint = "--rate is N/PERIOD: 100/1m, 10/s, 5000/1h, 3/500ms (a bare unit means one of it)"

func runLimit(c *cobra.Command, f *Factory, o *limitOptions, key string, argv []string) error {
	if o.rate == "" {
		return &UsageError{Err: errors.New("missing --rate"), Hints: []string{rateHint}}
	}
	rate, err := limit.ParseRate(o.rate)
	if err != nil {
		// The parser's message already says what is accepted.
		return &UsageError{Err: fmt.Errorf("bad --rate: %s", strings.TrimPrefix(err.Error(), limit.ErrInvalid.Error()+": ")), Hints: []string{}}
	}
	if o.cost < 1 {
		return usageErrorf("--cost %d: must be 1 or more", o.cost)
	}
	if o.burst < 0 {
		return usageErrorf("--burst %d: must be 1 or more (0 means N)", o.burst)
	}
	algo := limit.Algorithm(o.algo)
	burst := o.burst
	if burst == 0 {
		burst = rate.Limit
	}
	// Checked here, before dialling, so the message can name the flags.
	if o.cost > burst {
		return &UsageError{
			Err:   fmt.Errorf("--cost %d can never be allowed: at most %d fit at once (%s)", o.cost, burst, burstSource(o, algo)),
			Hints: []string{"raise --burst (gcra, token-bucket) or N in --rate, or split the work into calls of a smaller --cost"},
		}
	}
	client, err := f.Client()
	if err != nil {
		return err
	}
	l, err := limit.New(client, rate, &limit.Options{Algorithm: algo, Burst: o.burst})
	if err != nil {
		return &UsageError{Err: errors.New(strings.TrimPrefix(err.Error(), limit.ErrInvalid.Error()+": ")),
			Hints: []string{"--burst applies to gcra and token-bucket; the window algorithms admit exactly N per PERIOD"}}
	}
	ctx := c.Context()
	decide := l.Allow
	if o.reset {
		decide = l.Reset
	}
	r, err := decide(ctx, key, o.cost)
	var ce *limit.ConfigError
	if errors.As(err, &ce) {
		return &UsageError{Err: fmt.Errorf("%s is limited as %s, not %s", ce.Key, ce.Stored, ce.Want),
			Hints: []string{fmt.Sprintf("every caller of %s must use the same --rate, --algo and --burst; to change them on purpose, run once with the new ones and --reset", key)}}
	}
	if err == nil && !r.Allowed && o.wait {
		if r.RetryAfter >= statusFirstAfter {
			f.Progressf("limited: waiting %s for %s (%s)", r.RetryAfter, r.Key, rate)
		}
		r, err = limit.Wait(ctx, l, key, o.cost)
	}
	if err != nil {
		return err
	}
	if len(argv) == 0 || !r.Allowed {
		if err := printDecision(f, r); err != nil {
			return err
		}
	} else {
		f.Verbosef("%s", decisionText(r))
	}
	if !r.Allowed {
		f.record(ctx, events.RateLimited, key, 0)
		return &ExitError{Code: o.conflictExit, Err: r.Err(), Silent: true}
	}
	if len(argv) == 0 {
		return nil
	}
	res, err := superviseCommand(ctx, f, child.Spec{Argv: argv}, runner.Config{})
	if err != nil {
		return err
	}
	return childExit(res, "")
}

func burstSource(o *limitOptions, algo limit.Algorithm) string {
	if o.burst > 0 {
		return "--burst"
	}
	if algo == limit.GCRA || algo == limit.TokenBucket {
		return "the burst defaults to N of --rate"
	}
	return "N of --rate"
}

func decisionText(r limit.Result) string {
	word := "allowed"
	if !r.Allowed {
		word = "limited"
	}
	return fmt.Sprintf("%s remaining=%d retry_after=%s reset_after=%s", word, r.Remaining, r.RetryAfter, r.ResetAfter)
}

// printDecision: "key" is the Redis key, as in every other JSON output.
func printDecision(f *Factory, r limit.Result) error {
	if f.G.Output == "json" {
		return f.IO.PrintJSON(map[string]any{
			"key":            r.Key,
			"allowed":        r.Allowed,
			"limit":          r.Limit,
			"remaining":      r.Remaining,
			"retry_after_ms": r.RetryAfter.Milliseconds(),
			"reset_after_ms": r.ResetAfter.Milliseconds(),
		})
	}
	f.Progressf("%s", decisionText(r))
	return nil
}
