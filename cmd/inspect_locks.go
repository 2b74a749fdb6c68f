package cmd

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/spf13/cobra"
)

type locksOptions struct {
	wide   bool
	sortBy string
	watch  time.Duration
}

func newInspectLocksCmd(f *Factory, use string, aliases []string) *cobra.Command {
	o := &locksOptions{}
	c := &cobra.Command{
		Use:     use,
		Aliases: aliases,
		Short:   "List every held lock under the prefix",
		Long: `List every held lock under the prefix (or whose name matches the glob
PATTERN): lockctl's own locks (--shared holders and --limit semaphores one
row per holder), plain SET NX locks of other clients and Redisson locks.

Columns: NAME OWNER HOST PID AGE TTL FENCE WAITERS NOTE; --wide adds KEY,
TOKEN (the hash force-release accepts), CI and MODE. TTL "none" means the
key never expires (see 'inspect orphans').

Keys are read with SCAN, never KEYS; off a terminal rows stream as they are
read. Values from Redis show escaped. --watch D lists again every D.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			glob := ""
			if len(args) == 1 {
				glob = args[0]
			}
			if o.watch > 0 {
				return watchLocks(c, f, o, glob)
			}
			return runLocks(c, f, o, glob)
		},
	}
	setFinePrint(c, `List every held lock under the prefix (or whose name matches the glob
PATTERN): lockctl's own locks, locks taken --shared (one row per shared
holder, NOTE starting "(shared, holders n)"), --limit semaphores (one row per
holder, NOTE starting "(holders n/N)"), plain SET NX locks of other clients
(owner = the raw value, age unknown), Redisson hash locks (owner
uuid:threadId, fair locks included) and Redisson read-write locks (one
read-only row per hold, NOTE "(redisson read lock, ...)" or "(redisson
write lock, ...)"; the keys Redisson keeps beside them are not listed).

Columns: NAME OWNER HOST PID AGE TTL FENCE WAITERS NOTE; --wide adds KEY,
TOKEN (the first 12 hex digits of SHA-1(token), which force-release
accepts), CI (the CI job's URL, when the holder ran in CI) and MODE:
"exclusive" (the one holder of the lock), "shared" (one of its shared
holders), "semaphore" (one slot of a --limit lock), or "read" and "write"
(a hold of a Redisson read-write lock). TTL "none" means the key never
expires (see 'inspect orphans'); a TTL followed by "stale" is a holder that
has stopped renewing (no renewal for more than two of its renewal periods:
killed, stopped, or cut off from Redis), whose lease runs out at that TTL
with nobody behind it ('inspect lock NAME' says more). WAITERS counts the processes waiting on
the release channel plus the FIFO queue (for a Redisson fair lock, its
queue).

Keys are read with SCAN and pipelined batches, never KEYS. On a terminal the
table is sorted by name. Elsewhere (TSV, -o json) rows stream in SCAN order
as they are read, so memory stays flat however many locks there are; an
explicit --sort buffers every row to sort them.

Names, owners, notes and CI URLs are whatever was written to Redis: control
characters show escaped (\x1b, \n, \t, \xNN), so no value can drive the
terminal or break a row; on a terminal, cells past 100 columns are cut with
"…", and the table fits the terminal's width: NOTE gives way first, then the
widest column, cut with "…"; FENCE shows its last 6 digits. -o wide keeps
every value whole (a block of lines per lock where the columns do not fit
the terminal), as do the tab-separated rows; -o json has every value exact.

--watch D prints a fresh listing every D until interrupted: on a terminal
the screen is cleared first (like watch(1)); elsewhere listings follow one
another, each ended by an empty line (-o json: one array per listing).
'lockctl top' is the live full-screen view.`)
	c.Flags().Var(newDuration(&o.watch, 0, false, false), "watch", "print a fresh table every D until interrupted (on a terminal the screen is cleared first)")
	c.Flags().BoolVar(&o.wide, "wide", false, "add the KEY, TOKEN (hash) and CI columns (= -o wide)")
	c.Flags().Var(newEnum(&o.sortBy, "", "name", "ttl", "age", "none"), "sort", "sort by name, ttl (soonest expiry first) or age (oldest first); default name on a terminal, none (SCAN order, streamed) otherwise")
	return c
}

var lockHeader = []string{"NAME", "OWNER", "HOST", "PID", "AGE", "TTL", "FENCE", "WAITERS", "NOTE"}

func runLocks(c *cobra.Command, f *Factory, o *locksOptions, glob string) error {
	in, err := inspector(f)
	if err != nil {
		return err
	}
	sortBy := o.sortBy
	if sortBy == "" {
		sortBy = "none"
		if f.G.Output != "json" && f.IO.Tabular() {
			sortBy = "name"
		}
	}
	wide := o.wide || f.G.Output == "wide"
	header := lockHeader
	if wide {
		header = append(append([]string{}, lockHeader...), "KEY", "TOKEN", "CI", "MODE")
	}
	json := f.G.Output == "json"
	tsv := !json && !f.IO.Tabular()
	prog := newProgress(f)
	defer prog.done()

	var arr *ui.JSONArray
	if json {
		arr = ui.NewJSONArray(f.IO.Out)
	}
	if tsv {
		if err := f.IO.WriteTSVHeader(header); err != nil {
			return err
		}
	}
	emit := func(l inspect.Lock) error {
		switch {
		case json:
			return arr.Add(lockJSON(l))
		default:
			return ui.WriteTSV(f.IO.Out, [][]string{lockRow(l, wide)})
		}
	}
	var all []inspect.Lock
	buffer := sortBy != "none" || !json && !tsv
	err = in.Locks(c.Context(), glob, &inspect.ScanOptions{Progress: prog.update}, func(l inspect.Lock) error {
		if buffer {
			all = append(all, l)
			return nil
		}
		return emit(l)
	})
	prog.done()
	partial, err := incomplete(err)
	if err != nil {
		return err
	}
	if buffer {
		sortLocks(all, sortBy)
		if !json && !tsv {
			rows := make([][]string, len(all))
			for i, l := range all {
				rows[i] = lockRow(l, wide)
			}
			if len(rows) == 0 {
				if partial == nil {
					f.IO.Errorf("no locks held under %s", in.Pattern(glob))
				}
				return partial
			}
			if !wide {
				for _, r := range rows {
					r[6] = shortFence(r[6])
				}
			}
			if err := f.IO.PrintTable(ui.Table{Header: header, Rows: rows, MaxCellWidth: ui.DataCellWidth, Fit: !wide, Records: wide}); err != nil {
				return err
			}
			return partial
		}
		for _, l := range all {
			if err := emit(l); err != nil {
				return err
			}
		}
	}
	if json {
		if err := arr.Close(); err != nil {
			return err
		}
	}
	return partial
}

// incomplete splits a listing's error: a Cluster listing that missed some
// nodes (inspect.ErrIncomplete) printed what it read and returns partial
// for its exit status; any other error stops the listing.
func incomplete(err error) (partial, other error) {
	if errors.Is(err, inspect.ErrIncomplete) {
		return err, nil
	}
	return nil, err
}

func sortLocks(all []inspect.Lock, by string) {
	// Unknown values (no TTL, unknown age) sort last.
	big := func(d time.Duration) time.Duration {
		if d < 0 {
			return 1<<63 - 1
		}
		return d
	}
	sort.SliceStable(all, func(i, j int) bool {
		a, b := all[i], all[j]
		switch by {
		case "ttl":
			if big(a.TTL) != big(b.TTL) {
				return big(a.TTL) < big(b.TTL)
			}
		case "age":
			if a.Age != b.Age {
				return a.Age > b.Age
			}
		}
		return a.Name < b.Name
	})
}

func lockRow(l inspect.Lock, wide bool) []string {
	owner, host, pid := l.Owner, "-", "-"
	if l.Host != "" {
		owner, host, pid = l.User, l.Host, strconv.Itoa(l.PID)
	}
	fence := "-"
	if (l.Format == lock.FormatLockctl && l.Reason == "") || l.Reason == lock.ReasonSemaphore || l.Reason == lock.ReasonShared {
		fence = strconv.FormatInt(l.Fence, 10)
	}
	note := ui.Escape(l.Note)
	switch l.Kind() {
	case "string":
		note = "(plain SET lock)"
	case "redisson":
		note = fmt.Sprintf("(redisson, reentry %d)", l.Reentry)
		if l.RWMode != "" {
			// A read-write lock's hold: shown, never taken or released here.
			note = fmt.Sprintf("(redisson %s lock, reentry %d, holds %d)", l.RWMode, l.Reentry, l.Holders)
		}
	case "semaphore":
		note = strings.TrimSpace(holdersText(l.Holders, l.Limit) + " " + note)
	case "shared":
		note = strings.TrimSpace(fmt.Sprintf("(shared, holders %d) %s", l.Holders, note))
	}
	ttl := ttlCell(l.TTL)
	if l.Renewal.Stale {
		// The TTL counts down with nobody behind it.
		ttl += " " + staleMark
	}
	row := []string{ui.Escape(l.Name), ui.Escape(owner), ui.Escape(host), pid, ageText(l.Age), ttl, fence,
		strconv.FormatInt(l.Waiters(), 10), note}
	if wide {
		// MODE last: the columns before it keep the places scripts cut.
		row = append(row, ui.Escape(l.Key), l.TokenHash, ui.Escape(orDash(l.JobURL)), l.Mode())
	}
	return row
}

// staleMark ends the TTL cell of a holder that has stopped renewing
// (inspect.Renewal.Stale): its TTL runs out with nobody behind it.
const staleMark = "stale"

// lockJSON has a fixed set of fields; unknown values are null or -1.
type lockRecord struct {
	Name        string  `json:"name"`
	Key         string  `json:"key"`
	Kind        string  `json:"kind"`
	Mode        string  `json:"mode"`
	Owner       string  `json:"owner"`
	Host        string  `json:"host"`
	PID         int     `json:"pid"`
	AcquiredAt  *string `json:"acquired_at"`
	AgeMS       int64   `json:"age_ms"`
	TTLMS       int64   `json:"ttl_ms"`
	Fence       int64   `json:"fence"`
	Waiters     int64   `json:"waiters"`
	Subscribers int64   `json:"subscribers"`
	Queued      int64   `json:"queued"`
	Note        string  `json:"note"`
	CI          string  `json:"ci"`
	Reentry     int64   `json:"reentry"`
	Holders     int64   `json:"holders"`
	Limit       int64   `json:"limit"`
	TokenHash   string  `json:"token_hash"`
	// The renewal record: the server time of the last renewal (null for
	// a foreign lock, which records none), its age, the holder's period
	// (null for a lease renewed by hand), and renewing: false once the
	// holder has gone more than two periods without a renewal, null when
	// that cannot be told (no period, no record).
	RenewedAt    *string `json:"renewed_at"`
	RenewalAgeMS int64   `json:"renewal_age_ms"`
	RenewEveryMS *int64  `json:"renew_every_ms"`
	Renewing     *bool   `json:"renewing"`
	// Process is "alive", "gone" or "reused" when the holder's host is
	// this one and inspect lock checked its pid; null otherwise.
	Process *string `json:"process"`
	// Token is set only on request (inspect lock --show-token): it is
	// what renews and releases the lock.
	Token string `json:"token,omitempty"`
}

func lockJSON(l inspect.Lock) lockRecord {
	r := lockRecord{Name: l.Name, Key: l.Key, Kind: l.Kind(), Mode: l.Mode(), Owner: l.Owner, Host: l.Host, PID: l.PID,
		AgeMS: msOrMinus(l.Age), TTLMS: msOrMinus(l.TTL), Fence: l.Fence, Waiters: l.Waiters(),
		Subscribers: l.Subscribers, Queued: l.Queued, Note: l.Note, CI: l.JobURL, Reentry: l.Reentry,
		Holders: l.Holders, Limit: l.Limit, TokenHash: l.TokenHash}
	if !l.AcquiredAt.IsZero() {
		s := l.AcquiredAt.UTC().Format(time.RFC3339Nano)
		r.AcquiredAt = &s
	}
	r.RenewalAgeMS = -1
	if rn := l.Renewal; rn.Recorded {
		s := rn.At.UTC().Format(time.RFC3339Nano)
		r.RenewedAt, r.RenewalAgeMS = &s, rn.Age.Milliseconds()
		if rn.Every > 0 {
			every, renewing := rn.Every.Milliseconds(), !rn.Stale
			r.RenewEveryMS, r.Renewing = &every, &renewing
		}
	}
	if l.Process != inspect.ProcessUnknown {
		p := string(l.Process)
		r.Process = &p
	}
	return r
}

// watchLocks repeats the listing every o.watch until ctx ends (exit 0: an
// interrupt is how a watch ends).
func watchLocks(c *cobra.Command, f *Factory, o *locksOptions, glob string) error {
	ctx := c.Context()
	tty := f.IO.IsStdoutTTY() && f.G.Output != "json"
	t := time.NewTicker(o.watch)
	defer t.Stop()
	for {
		if tty {
			fmt.Fprint(f.IO.Out, "\x1b[H\x1b[2J")
			fmt.Fprintf(f.IO.Out, "%s\n\n", f.IO.Faint(fmt.Sprintf("every %s: lockctl inspect locks %s  %s", o.watch, glob, time.Now().Format("15:04:05"))))
		}
		err := runLocks(c, f, o, glob)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if !tty {
			fmt.Fprintln(f.IO.Out)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// shortFence is a fence as the terminal table shows it: its last six
// digits after "…". Fences of one name share their leading digits (the
// clock floor they started from), so the tail is what tells them apart; a
// 16-digit fence would take a fifth of an 80-column screen. -o wide, the
// tab-separated rows and -o json keep it whole.
func shortFence(s string) string {
	if len(s) <= 8 {
		return s
	}
	return "…" + s[len(s)-6:]
}
