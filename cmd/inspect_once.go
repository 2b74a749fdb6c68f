package cmd

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/once"
	"github.com/spf13/cobra"
)

// newInspectOnceCmd is `inspect once KEY`: the record of an idempotent
// run; `inspect once --unknown [PATTERN]` lists the keys awaiting `once resolve`.
func newInspectOnceCmd(f *Factory) *cobra.Command {
	var unknown bool
	c := &cobra.Command{
		Use:   "once KEY | once --unknown [PATTERN]",
		Short: "Show the record `lockctl once` keeps for KEY, or list the keys whose outcome is unknown",
		Long: `Show the record lockctl once keeps for KEY (key once:KEY): state (running,
done, or unknown), claimant, fingerprint, start, finish, duration, exit
code, attempts, mode and the record's remaining TTL. With no record (never
run, or its outcome expired) the state is "none".

--unknown lists every KEY (matching PATTERN, a glob over KEY) whose outcome
is unknown: an --at-most-once claim whose lease lapsed without a recorded
outcome (its claimant died mid-run). Each waits for 'lockctl once resolve'.`,
		Args: cobra.RangeArgs(0, 1),
		RunE: func(c *cobra.Command, args []string) error {
			if unknown {
				return listUnknownOnce(c, f, args)
			}
			key, err := validName(args, "once KEY")
			if err != nil {
				return err
			}
			return runInspectOnce(c.Context(), f, key)
		},
	}
	c.Flags().BoolVar(&unknown, "unknown", false, "list the keys whose outcome is unknown (awaiting 'lockctl once resolve')")
	return c
}

// runInspectOnce shows the record once keeps for key, or the state "none"
// when there is none.
func runInspectOnce(ctx context.Context, f *Factory, key string) error {
	store, err := f.onceStore(nil)
	if err != nil {
		return err
	}
	rec, err := store.Get(ctx, key)
	if errors.Is(err, once.ErrNotFound) {
		// Like `inspect lock` on a free lock: a state, not an error.
		if f.G.Output == "json" {
			return f.IO.PrintJSON(map[string]any{"name": key, "key": store.Key(key), "state": "none"})
		}
		return f.IO.PrintTable(ui.Table{Header: []string{"FIELD", "VALUE"},
			Rows: [][]string{{"name", ui.Escape(key)}, {"key", ui.Escape(store.Key(key))}, {"state", "none"}}})
	}
	if err != nil {
		return err
	}
	if f.G.Output == "json" {
		return f.IO.PrintJSON(onceRecordJSON(key, rec))
	}
	t := onceRecordTable(key, rec)
	// One record: fields wrap on a terminal, as in inspect lock.
	return f.IO.PrintDetail(t.Header, t.Rows)
}

// listUnknownOnce is `inspect once --unknown [PATTERN]`.
func listUnknownOnce(c *cobra.Command, f *Factory, args []string) error {
	glob := ""
	if len(args) == 1 {
		glob = args[0]
	}
	in, err := inspector(f)
	if err != nil {
		return err
	}
	var recs []once.Record
	p := newProgress(f)
	err = in.OnceUnknown(c.Context(), once.DefaultPrefix, glob, &inspect.ScanOptions{Progress: p.update}, func(r once.Record) error {
		recs = append(recs, r)
		return nil
	})
	p.done()
	// A Cluster listing that missed some nodes shows what it found, then
	// names what it missed (exit 69), as inspect locks does.
	partial, err := incomplete(err)
	if err != nil {
		return err
	}
	name := func(r once.Record) string { return strings.TrimPrefix(r.Key, once.DefaultPrefix) }
	if f.G.Output == "json" {
		out := make([]map[string]any, 0, len(recs))
		for _, r := range recs {
			out = append(out, onceRecordJSON(name(r), r))
		}
		if err := f.IO.PrintJSON(out); err != nil {
			return err
		}
		return partial
	}
	if len(recs) == 0 && f.IO.Tabular() {
		if partial == nil {
			f.IO.Errorf("no once keys with an unknown outcome")
		}
		return partial
	}
	rows := make([][]string, 0, len(recs))
	for _, r := range recs {
		lapsed := "-"
		if !r.LeaseDeadline.IsZero() {
			lapsed = ageText(time.Since(r.LeaseDeadline))
		}
		rows = append(rows, []string{ui.Escape(name(r)), ui.Escape(orDash(r.Owner)), r.StartedAt.Local().Format(time.RFC3339),
			lapsed, strconv.Itoa(r.Attempts), ui.Escape(orDash(r.Fingerprint))})
	}
	if err := f.IO.PrintTable(ui.Table{Header: []string{"KEY", "OWNER", "STARTED", "LAPSED", "ATTEMPT", "FINGERPRINT"},
		Rows: rows, MaxCellWidth: ui.DataCellWidth, Fit: f.G.Output != "wide", Records: f.G.Output == "wide"}); err != nil {
		return err
	}
	return partial
}

func onceRecordJSON(name string, r once.Record) map[string]any {
	m := map[string]any{
		"name":        name,
		"key":         r.Key,
		"state":       r.State,
		"owner":       r.Owner,
		"fingerprint": r.Fingerprint,
		"started_at":  timeJSON(r.StartedAt),
		"finished_at": nil,
		"duration_ms": nil,
		"exit":        nil,
		"attempts":    r.Attempts,
		"expired":     r.Expired,
		"ttl_ms":      r.TTL.Milliseconds(),
		"mode":        onceMode(r),
		"lease_until": timeJSON(r.LeaseDeadline),
		"resolved":    nil,
		"resolved_by": nil,
	}
	if r.Resolved != "" {
		m["resolved"], m["resolved_by"] = r.Resolved, r.ResolvedBy
	}
	if r.TTL < 0 {
		m["ttl_ms"] = -1
	}
	if r.State == once.StateDone {
		m["finished_at"] = timeJSON(r.FinishedAt)
		m["duration_ms"] = r.Duration.Milliseconds()
		m["exit"] = r.ExitCode
	}
	return m
}

func timeJSON(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// onceRecordTable is one FIELD/VALUE row per member of the record.
func onceRecordTable(name string, r once.Record) ui.Table {
	dash := func(s string) string {
		if s == "" {
			return "-"
		}
		return ui.Escape(s)
	}
	when := func(t time.Time) string {
		if t.IsZero() {
			return "-"
		}
		return t.Local().Format(time.RFC3339)
	}
	finished, duration, exit := "-", "-", "-"
	if r.State == once.StateDone {
		finished, duration, exit = when(r.FinishedAt), r.Duration.String(), strconv.Itoa(r.ExitCode)
	}
	if r.Resolved != "" {
		duration = "-"
	}
	resolved := "-"
	if r.Resolved != "" {
		resolved = ui.Escape(r.Resolved + " by " + r.ResolvedBy)
	}
	ttl := "none"
	if r.TTL >= 0 {
		ttl = r.TTL.Round(time.Millisecond).String()
	}
	return ui.Table{
		Header:       []string{"FIELD", "VALUE"},
		MaxCellWidth: ui.DataCellWidth,
		Rows: [][]string{
			{"name", ui.Escape(name)},
			{"key", ui.Escape(r.Key)},
			{"state", ui.Escape(r.State)},
			{"owner", dash(r.Owner)},
			{"fingerprint", dash(r.Fingerprint)},
			{"started", when(r.StartedAt)},
			{"finished", finished},
			{"duration", duration},
			{"exit", exit},
			{"attempts", strconv.Itoa(r.Attempts)},
			{"expired", strconv.FormatBool(r.Expired)},
			{"ttl", ttl},
			{"mode", onceMode(r)},
			{"lease until", when(r.LeaseDeadline)},
			{"resolved", resolved},
		},
	}
}

// onceMode names the record's mode as the flags do.
func onceMode(r once.Record) string {
	if r.Mode == once.ModeAtMostOnce {
		return "at-most-once"
	}
	return "at-least-once"
}
