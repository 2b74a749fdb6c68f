package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/cli/simulate"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

func newSimulateCmd(f *Factory) *cobra.Command {
	var (
		step   bool
		second time.Duration
		knobs  simulateKnobs
	)
	c := &cobra.Command{
		Use:   "simulate SCENARIO",
		Short: "Replay a Redis coordination failure step by step, then the technique that prevents it",
		Long: `Training: simulate replays a coordination failure on a timeline, one Redis
command per step, and then the same story with the technique that prevents it.
Each variant ends with a verdict (SAFE or UNSAFE); the exit status is 0 whenever
the scenario ran, since an UNSAFE verdict is the lesson, not a failure.

By default the scenario runs on an embedded, in-process Redis on virtual time:
no server is needed and the output is the same on every run. Only an explicit
--url on the command line runs it on that real server, in real time.
Knobs (--ttl, --pause, --job) change a timing scenario's story, and
--release-script and --renew-script replay it with your own Lua.

Run "lockctl simulate list" for the scenarios.`,
		Example: `  # pause after each step: Enter goes on, q quits
  lockctl simulate stale-del --step
  # the pause ends in time: no overlap
  lockctl simulate stale-del --ttl 10s --pause 5s
  lockctl simulate stale-del --release-script my-release.lua
  lockctl simulate redlock-clock -o json`,
		Args: cobra.ExactArgs(1),
		ValidArgsFunction: func(c *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []string
			for _, s := range simulate.List() {
				out = append(out, s.Name+"\t"+s.Title)
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			return runSimulate(c, f, args[0], step, second, &knobs)
		},
	}
	setFinePrint(c, `By default the scenario runs on an embedded, in-process Redis on virtual time:
no server is needed, the output is the same on every run, and it finishes at
once. LOCKCTL_URL, REDIS_URL and the config file's url are ignored here: only
an explicit --url on the command line runs the scenario on that real server,
in real time (one simulated second takes --second of wall time, TTLs scaled the
same). Every key a real run creates carries a random prefix and is deleted at
the end.

Knobs change a timing scenario's story, so that a learner sees where the
failure starts: --ttl (the lock's TTL) and --pause (how long A stalls) for
stale-del and redlock-pause, --ttl and --job (how long A's job runs) for
no-renew. A scenario refuses a knob it does not use (usage error, exit 64).

--release-script FILE (stale-del) replays the story with your own Lua in place
of the release, called as lockctl calls its own: KEYS[1] is the lock key, ARGV[1]
the caller's token, and the key's value is the token itself (the lock is taken
with SET key token NX PX ttl). --renew-script FILE (no-renew) renews with your
Lua: KEYS[1] the lock key, ARGV[1] the token, ARGV[2] the TTL in milliseconds.
redis.call, redis.pcall, redis.error_reply and redis.status_reply work as in
Redis. The verdict says what the script did: deleted another holder's lock,
left it alone, or failed. Scripts run only on the embedded server, in a
sandbox: no files or modules, print goes into the timeline, the commands a
lock script needs (admin and blocking commands are refused), at most 1 s and
64 MiB. A script that raises an error or runs out of time or memory is stopped
and shown as an error reply in the timeline; the scenario still ends with its
verdict, exit 0. A script that does not compile, or a script with --url, is a
usage error (exit 64) before anything runs.`)
	c.Flags().BoolVar(&step, "step", false, "pause after each step until Enter (q quits); needs a terminal")
	c.Flags().Var(newDuration(&second, 50*time.Millisecond, false, false), "second", "with --url: wall time of one simulated second")
	c.Flags().Var(newDuration(&knobs.ttl, 0, false, false), "ttl", "the lock's TTL, 1s to 1h: stale-del and redlock-pause tell 10s, no-renew 9s, unless given")
	c.Flags().Var(newDuration(&knobs.pause, 0, false, false), "pause", "how long A stalls, 100ms to 1h: stale-del and redlock-pause tell 12s unless given")
	c.Flags().Var(newDuration(&knobs.job, 0, false, false), "job", "how long A's job runs, 1s to 1h: no-renew tells 19s unless given")
	c.Flags().StringVar(&knobs.release, "release-script", "", "stale-del: release with this Lua file (KEYS[1] lock key, ARGV[1] token)")
	c.Flags().StringVar(&knobs.renew, "renew-script", "", "no-renew: renew with this Lua file (KEYS[1] lock key, ARGV[1] token, ARGV[2] ttl ms)")
	_ = c.MarkFlagFilename("release-script", "lua")
	_ = c.MarkFlagFilename("renew-script", "lua")
	c.AddCommand(&cobra.Command{
		Use:   "list",
		Short: "List the scenarios",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := simulateOutput(f); err != nil {
				return err
			}
			if f.G.Output == "json" {
				return f.IO.PrintJSON(simulate.List())
			}
			return simulate.RenderList(f.IO.Out, simulate.List())
		},
	})
	return c
}

// errQuit: the user pressed q while stepping.
var errQuit = errors.New("quit")

func simulateOutput(f *Factory) error {
	if f.G.Output == "env" {
		return &UsageError{Err: errors.New("simulate prints text or json, not env"),
			Hints: []string{"use -o json for the event list"}}
	}
	return nil
}

// simulateKnobs are the flags that change a scenario's story.
type simulateKnobs struct {
	ttl, pause, job time.Duration
	release, renew  string
}

// options turns the knobs into simulate.Options, reading and compiling the
// scripts; every mistake is a usage error.
func (k *simulateKnobs) options(name string) (*simulate.Options, error) {
	o := &simulate.Options{TTL: k.ttl, Pause: k.pause, Job: k.job}
	for _, sc := range []struct {
		flag, file string
		dst        **simulate.Script
	}{{"release-script", k.release, &o.ReleaseScript}, {"renew-script", k.renew, &o.RenewScript}} {
		if sc.file == "" {
			continue
		}
		src, err := os.ReadFile(sc.file)
		if err != nil {
			return nil, &UsageError{Err: fmt.Errorf("--%s: %w", sc.flag, err)}
		}
		if *sc.dst, err = simulate.CompileScript(sc.file, string(src)); err != nil {
			return nil, &UsageError{Err: fmt.Errorf("--%s: %w", sc.flag, err), Hints: []string{"the script does not compile as Lua"}}
		}
	}
	if err := simulate.CheckKnobs(name, o); err != nil {
		return nil, &UsageError{Err: err, Hints: []string{"`lockctl simulate --help` lists the knobs each scenario takes"}}
	}
	return o, nil
}

func runSimulate(c *cobra.Command, f *Factory, name string, step bool, second time.Duration, knobs *simulateKnobs) error {
	if err := simulateOutput(f); err != nil {
		return err
	}
	known := false
	var names []string
	for _, s := range simulate.List() {
		names = append(names, s.Name)
		known = known || s.Name == name
	}
	if !known {
		return &UsageError{Err: fmt.Errorf("unknown scenario %q", name),
			Hints: []string{"scenarios: " + strings.Join(names, ", ") + "; `lockctl simulate list` describes them"}}
	}
	flags := c.Flags()
	for _, other := range []string{"cluster", "sentinel", "redlock"} {
		if flags.Changed(other) {
			return &UsageError{Err: fmt.Errorf("simulate runs on one server: --%s is not supported", other),
				Hints: []string{"give --url for a real server, or nothing for the embedded one"}}
		}
	}
	// Only --url on the command line leaves the embedded server: a training
	// run must not write into whatever server the environment points at.
	onServer := flags.Changed("url")
	if flags.Changed("second") && !onServer {
		return &UsageError{Err: errors.New("--second applies only with --url"),
			Hints: []string{"the embedded server runs on virtual time; use --step to go slowly"}}
	}
	// A learner's script stays in the embedded server's sandbox: on a real
	// server its commands would reach a server of the user's, where the
	// sandbox's bounds do not hold and a script can stall every client.
	if onServer && (knobs.release != "" || knobs.renew != "") {
		flag := "--release-script"
		if knobs.release == "" {
			flag = "--renew-script"
		}
		return &UsageError{Err: fmt.Errorf("%s runs only on the embedded server: --url is not supported with it", flag),
			Hints: []string{"drop --url: your script runs in the embedded server's sandbox"}}
	}
	opts, err := knobs.options(name)
	if err != nil {
		return err
	}
	opts.Second = second
	if onServer {
		if opts.Redis, err = simulateServer(c.Context(), f, name); err != nil {
			return err
		}
	}

	if f.G.Output == "json" {
		if step {
			f.IO.Errorf("note: --step ignored with -o json")
		}
		res, err := simulate.Run(c.Context(), name, opts)
		if err != nil {
			return err
		}
		return simulate.RenderJSON(f.IO.Out, res)
	}

	printer := simulate.NewTextPrinter(f.IO.Out, simulate.Style(f.IO.SimulateStyle()))
	if step && (!f.IO.IsStdinTTY() || !f.IO.IsStdoutTTY()) {
		f.IO.Errorf("note: --step ignored: stdin and stdout are not both a terminal")
		step = false
	}
	if !step {
		opts.Observer = printer
		if _, err := simulate.Run(c.Context(), name, opts); err != nil {
			return err
		}
		return printer.Err()
	}
	// Stepping replays a finished run: pausing inside a real-server run
	// would let its TTLs run out while the reader reads.
	res, err := simulate.Run(c.Context(), name, opts)
	if err != nil {
		return err
	}
	st := &stepper{Observer: printer, ctx: c.Context(), io: f.IO}
	if err := replay(st, res); err != nil && !errors.Is(err, errQuit) {
		return err
	}
	return printer.Err()
}

// simulateServer is the --url server that scenario name runs on, reached
// once before anything is printed, so that a wrong --url fails cleanly
// instead of after the scenario's heading.
func simulateServer(ctx context.Context, f *Factory, name string) (*redis.Options, error) {
	for _, s := range simulate.List() {
		if s.Name == name && s.EmbeddedOnly {
			return nil, &UsageError{Err: fmt.Errorf("%s runs only on the embedded servers: --url is not supported", name),
				Hints: []string{"it needs five independent masters, each with its own clock; run it without --url"}}
		}
	}
	ro, err := f.NodeOptions()
	if err != nil {
		return nil, err
	}
	probe := redis.NewClient(ro)
	err = probe.Ping(ctx).Err()
	_ = probe.Close() // only the ping's outcome matters
	if err != nil {
		return nil, err
	}
	return ro, nil
}

// replay drives an observer over a finished run.
func replay(o simulate.Observer, r *simulate.Result) error {
	o.Begin(r)
	for i := range r.Variants {
		v := &r.Variants[i]
		o.BeginVariant(r, v)
		for _, e := range v.Events {
			if err := o.Event(r, v, e); err != nil {
				return err
			}
		}
		o.EndVariant(r, v)
	}
	return nil
}

// stepper pauses after each event until the user presses Enter.
type stepper struct {
	simulate.Observer
	ctx   context.Context
	io    *ui.IOStreams
	lines chan string
}

func (s *stepper) Event(r *simulate.Result, v *simulate.VariantResult, e simulate.Event) error {
	if err := s.Observer.Event(r, v, e); err != nil {
		return err
	}
	if s.lines == nil {
		// One reader for the whole run, so a pending read never swallows
		// the answer to the next prompt.
		s.lines = make(chan string)
		go func() {
			sc := bufio.NewScanner(s.io.In)
			for sc.Scan() {
				s.lines <- sc.Text()
			}
			close(s.lines)
		}()
	}
	fmt.Fprint(s.io.Out, s.io.Faint("  [Enter] next step, q quits "))
	select {
	case <-s.ctx.Done():
		fmt.Fprintln(s.io.Out)
		return s.ctx.Err()
	case line, ok := <-s.lines:
		if !ok { // end of input (Ctrl-D): no newline was echoed
			fmt.Fprint(s.io.Out, "\r\x1b[2K")
			return errQuit
		}
		// The terminal echoed the Enter: go back up and erase the prompt.
		fmt.Fprint(s.io.Out, "\x1b[1A\x1b[2K")
		if strings.EqualFold(strings.TrimSpace(line), "q") {
			return errQuit
		}
	}
	return nil
}
