package cmd

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/simulate"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

func newSimulateCmd(f *Factory) *cobra.Command {
	var (
		step   bool
		second time.Duration
	)
	c := &cobra.Command{
		Use:   "simulate SCENARIO",
		Short: "Replay a Redis coordination failure step by step, then the technique that prevents it",
		Long: `Training: simulate replays a coordination failure on a timeline, one Redis
command per step, and then the same story with the technique that prevents it.
Each variant ends with a verdict (SAFE or UNSAFE); the exit status is 0 whenever
the scenario ran, since an UNSAFE verdict is the lesson, not a failure.

By default the scenario runs on an embedded, in-process Redis on virtual time:
no server is needed, the output is the same on every run, and it finishes at
once. LOCKCTL_URL, REDIS_URL and the config file's url are ignored here: only
an explicit --url on the command line runs the scenario on that real server,
in real time (one simulated second takes --second of wall time, TTLs scaled the
same). Every key a real run creates carries a random prefix and is deleted at
the end.

Run "lockctl simulate list" for the scenarios.`,
		Example: `  lockctl simulate stale-del
  lockctl simulate stale-del --step        # pause after each step: Enter goes on, q quits
  lockctl simulate failover -o json
  lockctl simulate no-renew --url redis://127.0.0.1:6379/0`,
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
			return runSimulate(c, f, args[0], step, second)
		},
	}
	c.Flags().BoolVar(&step, "step", false, "pause after each step until Enter (q quits); needs a terminal")
	c.Flags().Var(newDuration(&second, 50*time.Millisecond, false, false), "second", "with --url: wall time of one simulated second")
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

func runSimulate(c *cobra.Command, f *Factory, name string, step bool, second time.Duration) error {
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
	opts := &simulate.Options{Second: second}
	if onServer {
		ro, err := f.NodeOptions()
		if err != nil {
			return err
		}
		// Reach the server before printing anything, so that a wrong
		// --url fails cleanly instead of after the scenario's heading.
		probe := redis.NewClient(ro)
		err = probe.Ping(c.Context()).Err()
		_ = probe.Close() // only the ping's outcome matters
		if err != nil {
			return err
		}
		opts.Redis = ro
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

	printer := simulate.NewTextPrinter(f.IO.Out, f.IO.SimulateStyle())
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
