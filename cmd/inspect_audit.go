package cmd

import (
	"context"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/once"
	"github.com/spf13/cobra"
)

type auditOptions struct {
	count int64
}

func newAuditCmd(f *Factory) *cobra.Command {
	o := &auditOptions{}
	c := &cobra.Command{
		Use:   "audit",
		Short: "List forced releases and once resolutions, oldest first (newest last)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if o.count < 0 {
				return usageErrorf("-n %d: want a count of 0 (all) or more", o.count)
			}
			return runAudit(c.Context(), f, o)
		},
	}
	c.Flags().Int64VarP(&o.count, "count", "n", 0, "show only the N newest entries (0: all)")
	// --n was the long form before --count; scripts may still use it.
	c.Flags().Int64Var(&o.count, "n", 0, "same as --count")
	_ = c.Flags().MarkHidden("n")
	return c
}

// runAudit lists the audit stream's newest o.count entries (0: all),
// oldest first.
func runAudit(ctx context.Context, f *Factory, o *auditOptions) error {
	in, err := inspector(f)
	if err != nil {
		return err
	}
	entries, err := in.Audit(ctx, o.count)
	if err != nil {
		return err
	}
	if f.G.Output == "json" {
		out := make([]map[string]any, 0, len(entries))
		for _, e := range entries {
			m := map[string]any{"id": e.ID, "at": e.At.Format(time.RFC3339Nano), "who": e.Who,
				"name": e.Name, "key": e.Key, "kind": e.Kind, "owner": e.Owner, "token_hash": e.TokenHash,
				"fence": e.Fence, "ttl_ms": msOrMinus(e.TTL), "reason": e.Reason, "action": "force-release"}
			if e.Action == inspect.AuditActionOnceResolve {
				m["action"], m["decision"], m["exit"], m["ttl_ms"] = e.Action, e.Decision, e.Exit, -1
				if e.Decision == once.ResolveRetry {
					m["exit"] = nil
				}
			}
			out = append(out, m)
		}
		return f.IO.PrintJSON(out)
	}
	rows := make([][]string, 0, len(entries))
	for _, e := range entries {
		esc := ui.Escape
		if e.Action == inspect.AuditActionOnceResolve {
			// Same columns: the decision leads the reason.
			rows = append(rows, []string{e.At.Local().Format(time.RFC3339), esc(e.Who), esc(e.Name), esc(e.Owner), "-",
				"-", "-", esc(onceResolveText(e))})
			continue
		}
		rows = append(rows, []string{e.At.Local().Format(time.RFC3339), esc(e.Who), esc(e.Name), esc(e.Owner), esc(e.TokenHash),
			strconv.FormatInt(e.Fence, 10), ttlCell(e.TTL), esc(e.Reason)})
	}
	if len(rows) == 0 && f.IO.Tabular() {
		f.IO.Errorf("no forced releases or once resolutions recorded")
		return nil
	}
	header := []string{"TIME", "WHO", "NAME", "OWNER", "TOKEN", "FENCE", "TTL LEFT", "REASON"}
	wide := f.G.Output == "wide"
	if f.IO.IsStdoutTTY() && !wide {
		// On a terminal: the date and time to the second, the
		// fence's last digits, no token hash (-o wide has them).
		header = []string{"TIME", "WHO", "NAME", "OWNER", "FENCE", "TTL LEFT", "REASON"}
		for i, r := range rows {
			rows[i] = []string{entries[i].At.Local().Format("01-02 15:04:05"), r[1], r[2], r[3], shortFence(r[5]), r[6], r[7]}
		}
	}
	return f.IO.PrintTable(ui.Table{Header: header, Rows: rows, MaxCellWidth: ui.DataCellWidth, Fit: !wide, Records: wide})
}

// onceResolveText is a once resolution's REASON cell: "once resolve
// --failed (exit 3): REASON".
func onceResolveText(e inspect.AuditEntry) string {
	s := "once resolve --" + e.Decision
	if e.Decision == once.ResolveFailed {
		s += " (exit " + strconv.Itoa(e.Exit) + ")"
	}
	if e.Reason != "" {
		s += ": " + e.Reason
	}
	return s
}
