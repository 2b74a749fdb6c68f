package cmd

import (
	"context"
	"fmt"
	"net"
	"time"

	rules "github.com/lockctl/lockctl/deploy/prometheus"
	"github.com/lockctl/lockctl/internal/cli/exporter"
	"github.com/spf13/cobra"
)

type exporterOptions struct {
	listen       string
	scanInterval time.Duration
	maxNames     int
	printRules   bool
}

func newExporterCmd(f *Factory) *cobra.Command {
	o := &exporterOptions{}
	c := &cobra.Command{
		Use:   "exporter",
		Short: "Serve Prometheus metrics of the locks (/metrics, /healthz)",
		Long: `Serve Prometheus metrics of the locks under the prefix on /metrics, and
/healthz (200 once a scan reached Redis, 503 while it cannot).

Gauges (held locks, their age, TTL and waiters, orphans, the waiters'
pub/sub subscriptions) come from a SCAN at most every --scan-interval;
counters and histograms per lock (acquisitions, waits, holds, refused
releases, lost leases, force-releases) and per limit key (rate limiting)
from the event stream that lockctl commands write (see --no-events), read
every second. The totals and the last entry counted are stored in Redis
(<events key>:exporter), so a restarted exporter resumes without counting an
event twice.

Per-lock series carry name="NAME" for at most --max-names names (and
key="KEY" for at most as many limit keys), first come; the others are
summed under name="_other". The names chosen are stored with the totals,
so the bound holds across restarts.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if o.printRules {
				_, err := fmt.Fprint(f.IO.Out, rules.YAML)
				return err
			}
			return runExporter(c.Context(), f, o)
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.listen, "listen", "127.0.0.1:9477", "address to serve /metrics and /healthz on")
	fs.Var(newDuration(&o.scanInterval, 15*time.Second, false, false), "scan-interval", "scan the locks at most this often")
	fs.IntVar(&o.maxNames, "max-names", 100, "per-lock (and per limit key) series for at most this many names; the rest under _other")
	fs.BoolVar(&o.printRules, "print-rules", false, "print the Prometheus alerting rules for these series and exit")
	return c
}

func runExporter(ctx context.Context, f *Factory, o *exporterOptions) error {
	if o.maxNames < 0 {
		return usageErrorf("--max-names %d: must be 0 or more", o.maxNames)
	}
	in, err := inspector(f)
	if err != nil {
		return err
	}
	client, err := f.Client()
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", o.listen)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("--listen %s: %v", o.listen, err)}
	}
	ex := exporter.New(exporter.Config{
		Client:       client,
		Inspector:    in,
		EventsKey:    f.eventsKey(),
		ScanInterval: o.scanInterval,
		MaxNames:     o.maxNames,
		Timeout:      max(f.G.Timeout, o.scanInterval),
		Logf:         func(format string, args ...any) { f.IO.Errorf(format, args...) },
	})
	f.IO.Errorf("serving metrics on http://%s/metrics", ln.Addr())
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	done := make(chan struct{})
	go func() { defer close(done); ex.Run(runCtx) }()
	// SIGINT or SIGTERM is how a service manager stops the exporter: exit 0.
	err = exporter.Serve(ctx, ln, ex.Handler(), exporter.ServerOptions{})
	stop()
	<-done
	return err
}
