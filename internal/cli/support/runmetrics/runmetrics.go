// Package runmetrics writes the node_exporter textfile record of one
// `lockctl run`: a file the textfile collector serves as it stands, so it is
// replaced atomically (client_golang's WriteToTextfile) and carries the last
// success over from the previous run of the same name.
package runmetrics

import (
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Run is what one run reports.
type Run struct {
	Name      string
	Start     time.Time
	End       time.Time
	Wait      time.Duration
	ExitCode  int // lockctl's exit status
	LeaseLost bool
	// Acquired: this host took the lock (and so ran, or tried to run,
	// CMD). A run refused or skipped (-n, -w, -E) did not.
	Acquired bool
	// Succeeded: this host ran CMD, it exited 0 and so did lockctl (a
	// lease lost is a failure even when CMD then exited 0). Only such a
	// run moves the last success.
	Succeeded bool
	// Interrupted: ^C or ^\ ended the run (SIGINT or SIGQUIT interrupted
	// the wait or ended CMD, and lockctl then died of it): stopped by
	// someone, not failed. Its exit code (130, 131) alone cannot say so,
	// as CMD may exit 130 by itself.
	Interrupted bool
}

const lastSuccess = "lockctl_run_last_success_timestamp_seconds"

type series struct {
	name, help string
	value      func(r *Run, last float64) float64
}

var all = []series{
	{"lockctl_run_start_timestamp_seconds", "Unix time the run started.", func(r *Run, _ float64) float64 { return unix(r.Start) }},
	{"lockctl_run_end_timestamp_seconds", "Unix time the run ended.", func(r *Run, _ float64) float64 { return unix(r.End) }},
	{lastSuccess, "Unix time of the last run on this host that ran the command and exited 0 (0 if none is known).", func(_ *Run, last float64) float64 { return last }},
	{"lockctl_run_duration_seconds", "Wall time of the run, waiting included.", func(r *Run, _ float64) float64 { return r.End.Sub(r.Start).Seconds() }},
	{"lockctl_run_wait_seconds", "Time spent waiting for the lock.", func(r *Run, _ float64) float64 { return r.Wait.Seconds() }},
	{"lockctl_run_exit_code", "Exit status of lockctl run.", func(r *Run, _ float64) float64 { return float64(r.ExitCode) }},
	{"lockctl_run_lease_lost", "1 when the lease was lost while the command ran.", func(r *Run, _ float64) float64 { return bit(r.LeaseLost) }},
	{"lockctl_run_acquired", "1 when this host acquired the lock and ran the command, 0 when the run was refused or skipped.", func(r *Run, _ float64) float64 { return bit(r.Acquired) }},
	{"lockctl_run_interrupted", "1 when SIGINT or SIGQUIT (^C) interrupted the wait or ended the command, and lockctl died of it.", func(r *Run, _ float64) float64 { return bit(r.Interrupted) }},
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// Write replaces path with r's metrics. Only a run that ran the command
// here and succeeded moves the last success; any other (failed, refused,
// skipped with -n -E 0) keeps the one recorded in the file it replaces
// (for the same name): the alert "has not succeeded in 26h" must neither
// reset because the latest attempt failed nor be fooled by a skip.
//
// The file is written to a temporary file in path's directory (path's
// name followed by digits, which the collector's *.prom never matches)
// and renamed over path: the collector reads the old file or the new one,
// never half of either.
func Write(path string, r *Run) error {
	last := 0.0
	if r.Succeeded {
		last = unix(r.End)
	} else if old, err := os.Open(path); err == nil {
		last = previousSuccess(old, r.Name)
		_ = old.Close() // read only: its close error changes nothing
	}
	reg := prometheus.NewRegistry()
	for _, s := range all {
		g := prometheus.NewGauge(prometheus.GaugeOpts{Name: s.name, Help: s.help, ConstLabels: prometheus.Labels{"name": r.Name}})
		g.Set(s.value(r, last))
		if err := reg.Register(g); err != nil {
			return err
		}
	}
	return prometheus.WriteToTextfile(path, reg)
}

// previousSuccess finds the last-success sample for name in an old file;
// 0 when it has none, or cannot be read as the text format.
func previousSuccess(old *os.File, name string) float64 {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(old)
	if err != nil || mfs[lastSuccess] == nil {
		return 0
	}
	for _, m := range mfs[lastSuccess].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "name" && l.GetValue() == name && m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}
