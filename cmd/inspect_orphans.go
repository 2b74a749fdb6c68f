package cmd

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/spf13/cobra"
)

type orphansOptions struct {
	check bool
	fix   string
	yes   bool
}

func newInspectOrphansCmd(f *Factory) *cobra.Command {
	o := &orphansOptions{}
	c := &cobra.Command{
		Use:   "orphans [PATTERN]",
		Short: "List lock keys with no TTL, which never free themselves",
		Long: `List keys under the prefix (or matching PATTERN) that have no TTL: a SETNX
whose EXPIRE never ran, a PERSIST, a hand-made key. lockctl's auxiliary keys
(fence counters, FIFO queues and heartbeats, semaphore slots, the audit
stream) are never listed, whatever the prefix.

  --check          exit 1 when any are found (for monitoring)
  --fix expire:D   give each a TTL of D
  --fix delete     delete each (and wake its waiters)

--fix asks for confirmation on a terminal (after a summary: the count and a
few of the keys); elsewhere it needs --yes. Each key is re-checked and
changed in one atomic step (only if it still has no TTL), so a lock someone
took properly in the meantime is left alone.

With --prefix '' every key of the database is in scope, and every cache entry
or counter without a TTL would count as an orphan lock: a PATTERN naming the
locks is then required (usage error otherwise). PATTERN '*' says "the whole
keyspace" on purpose and is accepted for listing and --check, never for --fix.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			glob := ""
			if len(args) == 1 {
				glob = args[0]
			}
			return runOrphans(c, f, o, glob)
		},
	}
	c.Flags().BoolVar(&o.check, "check", false, "exit 1 when any key without TTL is found")
	c.Flags().StringVar(&o.fix, "fix", "", "expire:D (set a TTL of D) or delete")
	c.Flags().BoolVarP(&o.yes, "yes", "y", false, "apply --fix without asking")
	return c
}

type orphanRecord struct {
	Name   string `json:"name"`
	Key    string `json:"key"`
	Type   string `json:"type"`
	Kind   string `json:"kind"`
	Owner  string `json:"owner"`
	Action string `json:"action,omitempty"`
}

func orphanOf(x inspect.Orphan) orphanRecord {
	r := orphanRecord{Name: x.Name, Key: x.Key, Type: x.Type}
	if x.Holder != nil {
		r.Kind, r.Owner = x.Holder.Kind(), x.Holder.Owner
	}
	return r
}

func (r orphanRecord) row() []string {
	row := []string{ui.Escape(r.Name), ui.Escape(r.Key), r.Type, ui.Escape(orDash(r.Owner))}
	if r.Action != "" {
		row = append(row, r.Action)
	}
	return row
}

func parseFix(s string) (inspect.Fix, error) {
	switch {
	case s == "delete":
		return inspect.Fix{Delete: true}, nil
	case strings.HasPrefix(s, "expire:"):
		d, err := parseDuration(strings.TrimPrefix(s, "expire:"), false, true)
		if err != nil {
			return inspect.Fix{}, &UsageError{Err: fmt.Errorf("--fix %s: %v", s, err)}
		}
		return inspect.Fix{Expire: d}, nil
	}
	return inspect.Fix{}, &UsageError{Err: fmt.Errorf("--fix %q: want expire:D or delete", s),
		Hints: []string{"--fix expire:10m gives each key a TTL; --fix delete deletes them"}}
}

func runOrphans(c *cobra.Command, f *Factory, o *orphansOptions, glob string) error {
	fix, err := orphanFix(f, o)
	if err != nil {
		return err
	}
	in, err := inspector(f)
	if err != nil {
		return err
	}
	if err := orphanScope(in, glob, o.fix); err != nil {
		return err
	}
	out, err := newOrphanOutput(f, o.fix != "")
	if err != nil {
		return err
	}
	var found []orphanRecord
	count := 0
	prog := newProgress(f)
	err = in.Orphans(c.Context(), glob, &inspect.ScanOptions{Progress: prog.update}, func(x inspect.Orphan) error {
		count++
		r := orphanOf(x)
		if o.fix != "" || out.tty {
			// Fixing needs the whole list first (to confirm); a
			// terminal table needs it to size its columns.
			found = append(found, r)
			return nil
		}
		return out.add(r)
	})
	prog.done()
	// A listing that missed some Cluster nodes shows (and fixes) what it
	// found, then fails: "none found" is never said of unseen keys, and
	// --check exits 69 rather than 0 or 1.
	partial, err := incomplete(err)
	if err != nil {
		return err
	}
	pattern := in.Pattern(glob)
	var fixErr error
	if o.fix != "" && count > 0 {
		// A failed fix still shows, key by key, what it changed.
		if fixErr = applyFix(c, f, in, fix, o, glob, found); fixErr != nil && len(found) > 0 && found[0].Action == "" {
			return fixErr
		}
	}
	if err := out.finish(found, count, partial != nil, pattern); err != nil {
		return err
	}
	if fixErr != nil {
		return fixErr
	}
	if partial != nil {
		return partial
	}
	if o.check && count > 0 {
		return &ExitError{Code: ExitFound, Err: fmt.Errorf("%d key(s) under %s have no TTL and will never free themselves", count, pattern)}
	}
	return nil
}

// orphanFix reads --fix, and refuses it beside --check or, without --yes,
// where there is no terminal to confirm it on. The zero Fix: no --fix.
func orphanFix(f *Factory, o *orphansOptions) (inspect.Fix, error) {
	if o.fix == "" {
		return inspect.Fix{}, nil
	}
	fix, err := parseFix(o.fix)
	if err != nil {
		return fix, err
	}
	if o.check {
		return fix, usageErrorf("--check and --fix do not go together")
	}
	if !o.yes && (!f.IO.IsStdinTTY() || !f.IO.IsStderrTTY()) {
		return fix, &UsageError{Err: fmt.Errorf("refusing to --fix %s without confirmation", o.fix),
			Hints: []string{"there is no terminal to ask on; run `lockctl inspect orphans` to review the keys, then add --yes"}}
	}
	return fix, nil
}

// orphanOutput prints the orphans found: a JSON array, header-less
// tab-separated rows (a header with --headers), or a table on a terminal.
type orphanOutput struct {
	f         *Factory
	json, tty bool
	fixing    bool // rows get an ACTION column
	arr       *ui.JSONArray
}

// newOrphanOutput starts the output: the JSON array, or the header of
// the tab-separated rows.
func newOrphanOutput(f *Factory, fixing bool) (*orphanOutput, error) {
	out := &orphanOutput{f: f, json: f.G.Output == "json", fixing: fixing}
	out.tty = !out.json && f.IO.Tabular()
	if out.json {
		out.arr = ui.NewJSONArray(f.IO.Out)
	}
	if !out.json && !out.tty {
		if err := f.IO.WriteTSVHeader(out.header()); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func (out *orphanOutput) header() []string {
	header := []string{"NAME", "KEY", "TYPE", "OWNER"}
	if out.fixing {
		header = append(header, "ACTION")
	}
	return header
}

// add prints one record as it is found (JSON or a row).
func (out *orphanOutput) add(r orphanRecord) error {
	if out.json {
		return out.arr.Add(r)
	}
	return ui.WriteTSV(out.f.IO.Out, [][]string{r.row()})
}

// finish prints what was kept back: the table on a terminal, the records
// of a fix (with their actions) otherwise; then it closes the JSON array.
// partial: some Cluster nodes could not be read.
func (out *orphanOutput) finish(found []orphanRecord, count int, partial bool, pattern string) error {
	if out.tty {
		sort.Slice(found, func(i, j int) bool { return found[i].Name < found[j].Name })
		switch {
		case count == 0 && !partial:
			out.f.IO.Errorf("no keys without TTL under %s", pattern)
		case count == 0:
			// Nothing found in what could be read: the error says what
			// could not be.
		default:
			rows := make([][]string, len(found))
			for i, r := range found {
				rows[i] = r.row()
			}
			if err := out.f.IO.PrintTable(ui.Table{Header: out.header(), Rows: rows, MaxCellWidth: ui.DataCellWidth, Fit: out.f.G.Output != "wide", Records: out.f.G.Output == "wide"}); err != nil {
				return err
			}
		}
	} else if out.fixing {
		for _, r := range found {
			if err := out.add(r); err != nil {
				return err
			}
		}
	}
	if out.json {
		return out.arr.Close()
	}
	return nil
}

// orphanScope refuses a scan of the whole keyspace unless PATTERN asked for
// it, and a fix of the whole keyspace always.
func orphanScope(in *inspect.Inspector, glob, fix string) error {
	if !in.Unscoped(glob) {
		return nil
	}
	if glob == "" {
		return &UsageError{Err: errors.New("--prefix '' without a PATTERN would treat every key in the database as a lock"),
			Hints: []string{"name the locks: `lockctl --prefix '' inspect orphans 'mylocks:*'`",
				"PATTERN '*' lists every key without TTL in the database, on purpose (not with --fix)"}}
	}
	if fix != "" {
		return &UsageError{Err: fmt.Errorf("refusing to --fix %s every key without TTL in the database (--prefix '' and PATTERN %s)", fix, glob),
			Hints: []string{"give a PATTERN that names only the locks, e.g. 'mylocks:*'"}}
	}
	return nil
}

// confirmSample is how many keys the confirmation of a fix names; the rest
// are counted. The full list is `inspect orphans` without --fix.
const confirmSample = 5

func applyFix(c *cobra.Command, f *Factory, in *inspect.Inspector, fix inspect.Fix, o *orphansOptions, glob string, found []orphanRecord) error {
	what := "delete"
	if !fix.Delete {
		what = "set a TTL of " + fix.Expire.String() + " on"
	}
	if !o.yes {
		sort.Slice(found, func(i, j int) bool { return found[i].Key < found[j].Key })
		f.IO.Errorf("%d key(s) under %s have no TTL:", len(found), in.Pattern(glob))
		for _, r := range found[:min(len(found), confirmSample)] {
			f.IO.Errorf("  %s (%s, owner %s)", r.Key, r.Type, orDash(r.Owner))
		}
		if more := len(found) - confirmSample; more > 0 {
			f.IO.Errorf("  ... and %d more (inspect orphans without --fix lists them all)", more)
		}
		fmt.Fprintf(f.IO.ErrOut, "lockctl: %s these %d key(s)? [y/N] ", what, len(found))
		yes, err := confirm(c.Context(), f.IO.In, f.IO.ErrOut)
		if err != nil {
			return err
		}
		if !yes {
			return &ExitError{Code: ExitFound, Err: errors.New("nothing changed")}
		}
	}
	keys := make([]string, len(found))
	fix.Types = make([]string, len(found))
	for i, r := range found {
		keys[i], fix.Types[i] = r.Key, r.Type
	}
	done, err := in.FixOrphans(c.Context(), keys, fix)
	if notWoken(f, "the fix was applied", err) {
		err = nil
	}
	changed := 0
	for i := range found {
		switch {
		case (i >= len(done) || !done[i]) && err != nil:
			// Not changed, but perhaps not tried either.
			found[i].Action = "unchanged"
		case i >= len(done) || !done[i]:
			found[i].Action = "skipped"
		case fix.Delete:
			found[i].Action, changed = "deleted", changed+1
		default:
			found[i].Action, changed = "expire:"+shortDuration(fix.Expire), changed+1
		}
	}
	if err != nil {
		return err
	}
	if skipped := len(found) - changed; skipped > 0 {
		f.IO.Errorf("%d key(s) changed since the scan (a TTL was set, the lock was re-taken, or another kind of value replaced it) and were left alone", skipped)
	}
	return nil
}
