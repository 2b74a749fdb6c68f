package cmd

import (
	"bufio"
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

// inspector returns a pkg/inspect Inspector on the configured client and prefix.
func inspector(f *Factory) (*inspect.Inspector, error) {
	c, err := f.Client()
	if err != nil {
		return nil, err
	}
	return inspect.New(c, &inspect.Options{Prefix: f.G.Prefix, RawKeys: f.G.Prefix == ""}), nil
}

func newInspectCmd(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "inspect",
		Short: "See who holds which lock, find keys that never expire, free one stuck holder",
		Long: `Inspect the locks under the prefix: who holds each, since when, for how long,
which keys will never free themselves, and free exactly one stuck holder.

  lockctl ls                                  # every held lock (= inspect locks)
  lockctl inspect lock deploy                 # one lock in full
  lockctl inspect orphans --check             # exit 1 if any lock key has no TTL
  lockctl inspect force-release deploy --token 3f2a9c01b7de --reason "runner died"
  lockctl inspect audit -n 20
  lockctl inspect once report:2025-03-01          # the record lockctl once keeps`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error { return c.Help() },
	}
	c.AddCommand(
		newInspectLocksCmd(f, "locks [PATTERN]", []string{"ls"}),
		newInspectLockCmd(f),
		newInspectOrphansCmd(f),
		newForceReleaseCmd(f),
		newAuditCmd(f),
		newInspectOnceCmd(f),
	)
	return c
}

// newLsCmd is the top-level `lockctl ls`, the same command as `inspect locks`.
func newLsCmd(f *Factory) *cobra.Command {
	c := newInspectLocksCmd(f, "ls [PATTERN]", nil)
	c.Short = "List held locks (same as `inspect locks`)"
	return c
}

type locksOptions struct {
	wide   bool
	sortBy string
}

func newInspectLocksCmd(f *Factory, use string, aliases []string) *cobra.Command {
	o := &locksOptions{}
	c := &cobra.Command{
		Use:     use,
		Aliases: aliases,
		Short:   "List every held lock under the prefix",
		Long: `List every held lock under the prefix (or whose name matches the glob
PATTERN): lockctl's own locks, --limit semaphores (one row per holder, NOTE
starting "(holders n/N)"), plain SET NX locks of other clients (owner = the
raw value, age unknown) and Redisson hash locks (owner uuid:threadId).

Columns: NAME OWNER HOST PID AGE TTL FENCE WAITERS NOTE; --wide adds KEY,
TOKEN (the first 12 hex digits of SHA-1(token), which force-release accepts)
and CI (the CI job's URL, when the holder ran in CI). TTL "none" means the
key never expires (see 'inspect orphans'). WAITERS counts the processes
waiting on the release channel plus the FIFO queue.

Keys are read with SCAN and pipelined batches, never KEYS. On a terminal the
table is sorted by name. Elsewhere (TSV, -o json) rows stream in SCAN order
as they are read, so memory stays flat however many locks there are; an
explicit --sort buffers every row to sort them.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			glob := ""
			if len(args) == 1 {
				glob = args[0]
			}
			return runLocks(c, f, o, glob)
		},
	}
	c.Flags().BoolVar(&o.wide, "wide", false, "add the KEY, TOKEN (hash) and CI columns")
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
		if f.G.Output != "json" && f.IO.IsStdoutTTY() {
			sortBy = "name"
		}
	}
	header := lockHeader
	if o.wide {
		header = append(append([]string{}, lockHeader...), "KEY", "TOKEN", "CI")
	}
	json := f.G.Output == "json"
	tsv := !json && !f.IO.IsStdoutTTY()
	prog := newProgress(f)
	defer prog.done()

	var arr *ui.JSONArray
	if json {
		arr = ui.NewJSONArray(f.IO.Out)
	}
	emit := func(l inspect.Lock) error {
		switch {
		case json:
			return arr.Add(lockJSON(l))
		default:
			return ui.WriteTSV(f.IO.Out, [][]string{lockRow(l, o.wide)})
		}
	}
	var all []inspect.Lock
	buffer := sortBy != "none" || !(json || tsv)
	err = in.Locks(c.Context(), glob, &inspect.ScanOptions{Progress: prog.update}, func(l inspect.Lock) error {
		if buffer {
			all = append(all, l)
			return nil
		}
		return emit(l)
	})
	prog.done()
	if err != nil {
		return err
	}
	if buffer {
		sortLocks(all, sortBy)
		if !json && !tsv {
			rows := make([][]string, len(all))
			for i, l := range all {
				rows[i] = lockRow(l, o.wide)
			}
			if len(rows) == 0 {
				f.IO.Errorf("no locks held under %s", in.Pattern(glob))
				return nil
			}
			return f.IO.PrintTable(ui.Table{Header: header, Rows: rows})
		}
		for _, l := range all {
			if err := emit(l); err != nil {
				return err
			}
		}
	}
	if json {
		return arr.Close()
	}
	return nil
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
	if l.Kind == "lockctl" || l.Kind == "semaphore" {
		fence = strconv.FormatInt(l.Fence, 10)
	}
	note := l.Note
	switch l.Kind {
	case "string":
		note = "(plain SET lock)"
	case "redisson":
		note = fmt.Sprintf("(redisson, reentry %d)", l.Reentry)
	case "semaphore":
		note = strings.TrimSpace(holdersText(l.Holders, l.Limit) + " " + note)
	}
	row := []string{l.Name, owner, host, pid, ageText(l.Age), ttlCell(l.TTL), fence, strconv.FormatInt(l.Waiters(), 10), note}
	if wide {
		row = append(row, l.Key, l.TokenHash, orDash(l.CI))
	}
	return row
}

// holdersText is a semaphore's "(holders n/N)"; N is "?" when the holders'
// values do not record it.
func holdersText(n, limit int64) string {
	l := "?"
	if limit > 0 {
		l = strconv.FormatInt(limit, 10)
	}
	return fmt.Sprintf("(holders %d/%s)", n, l)
}

// lockJSON has a fixed set of fields; unknown values are null or -1.
type lockRecord struct {
	Name        string  `json:"name"`
	Key         string  `json:"key"`
	Kind        string  `json:"kind"`
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
}

func lockJSON(l inspect.Lock) lockRecord {
	r := lockRecord{Name: l.Name, Key: l.Key, Kind: l.Kind, Owner: l.Owner, Host: l.Host, PID: l.PID,
		AgeMS: msOrMinus(l.Age), TTLMS: msOrMinus(l.TTL), Fence: l.Fence, Waiters: l.Waiters(),
		Subscribers: l.Subscribers, Queued: l.Queued, Note: l.Note, CI: l.CI, Reentry: l.Reentry,
		Holders: l.Holders, Limit: l.Limit, TokenHash: l.TokenHash}
	if !l.AcquiredAt.IsZero() {
		s := l.AcquiredAt.UTC().Format(time.RFC3339Nano)
		r.AcquiredAt = &s
	}
	return r
}

func msOrMinus(d time.Duration) int64 {
	if d < 0 {
		return -1
	}
	return d.Milliseconds()
}

// ageText and ttlCell are compact durations for table cells.
func ageText(d time.Duration) string {
	if d < 0 {
		return "-"
	}
	return shortDuration(d)
}

func ttlCell(d time.Duration) string {
	if d < 0 {
		return "none"
	}
	return shortDuration(d)
}

func shortDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
	case d < time.Minute:
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", d/time.Minute, d%time.Minute/time.Second)
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh%02dm", d/time.Hour, d%time.Hour/time.Minute)
	}
	return fmt.Sprintf("%dd%02dh", d/(24*time.Hour), d%(24*time.Hour)/time.Hour)
}

// progress shows "scanned N keys" on a terminal's stderr during long scans.
type progress struct {
	f       *Factory
	start   time.Time
	last    time.Time
	shown   bool
	enabled bool
}

func newProgress(f *Factory) *progress {
	return &progress{f: f, start: time.Now(), enabled: f.IO.IsStderrTTY()}
}

func (p *progress) update(n int64) {
	if !p.enabled {
		return
	}
	now := time.Now()
	if now.Sub(p.start) < 500*time.Millisecond || now.Sub(p.last) < 200*time.Millisecond {
		return
	}
	p.last, p.shown = now, true
	fmt.Fprintf(p.f.IO.ErrOut, "\rlockctl: scanned %d keys...", n)
}

func (p *progress) done() {
	if p.shown {
		fmt.Fprint(p.f.IO.ErrOut, "\r\033[K")
		p.shown = false
	}
}

func newInspectLockCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "lock NAME",
		Short: "Show one lock in full: holder, value, TTL, fence counter, waiters, semaphore holders",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name, err := validName(args, "lock NAME")
			if err != nil {
				return err
			}
			in, err := inspector(f)
			if err != nil {
				return err
			}
			d, err := in.Lock(c.Context(), name)
			if err != nil {
				return err
			}
			if f.G.Output == "json" {
				return f.IO.PrintJSON(detailJSON(d))
			}
			return f.IO.PrintTable(ui.Table{Header: []string{"FIELD", "VALUE"}, Rows: detailRows(d)})
		},
	}
}

func detailRows(d *inspect.Detail) [][]string {
	rows := [][]string{{"name", d.Name}, {"key", d.Key}}
	state := "free"
	switch {
	case d.Lock != nil:
		state = "held"
	case len(d.Holders) > 0:
		state = "held " + strings.Trim(holdersText(int64(len(d.Holders)), d.Limit), "()")
	}
	rows = append(rows, []string{"state", state})
	if l := d.Lock; l != nil {
		rows = append(rows, []string{"kind", l.Kind}, []string{"owner", l.Owner})
		if !l.AcquiredAt.IsZero() {
			rows = append(rows, []string{"acquired", l.AcquiredAt.Local().Format(time.RFC3339) + " (" + ageText(l.Age) + " ago)"})
		}
		rows = append(rows, []string{"ttl", ttlCell(l.TTL)})
		if l.Kind == "lockctl" {
			rows = append(rows, []string{"fence", strconv.FormatInt(l.Fence, 10)})
		}
		if l.Kind == "redisson" || l.Reentry > 1 {
			rows = append(rows, []string{"reentry", strconv.FormatInt(l.Reentry, 10)})
		}
		rows = append(rows, []string{"token", l.TokenHash + " (sha1 prefix)"})
		if l.Note != "" {
			rows = append(rows, []string{"note", l.Note})
		}
		if l.CI != "" {
			rows = append(rows, []string{"ci", l.CI})
		}
		if d.Raw != "" {
			rows = append(rows, []string{"value", d.Raw})
		}
		for _, k := range sortedKeys(d.Fields) {
			rows = append(rows, []string{"field", k + " = " + d.Fields[k]})
		}
	}
	if len(d.Holders) > 0 {
		rows = append(rows, []string{"kind", "semaphore"}, []string{"limit", limitText(d)},
			[]string{"slots", d.SemKey + ", " + d.SemValKey})
		for i, h := range d.Holders {
			rows = append(rows, []string{fmt.Sprintf("holder %d", i+1), holderText(h)})
		}
	}
	rows = append(rows, []string{"fence counter", fmt.Sprintf("%d (%s)", d.Fence, d.FenceKey)})
	rows = append(rows, []string{"waiters", fmt.Sprintf("%d subscribed, %d queued", d.Subscribers, len(d.Queue))})
	for i, w := range d.Queue {
		rows = append(rows, []string{fmt.Sprintf("queue %d", i+1), waiterText(w)})
	}
	return rows
}

// limitText is the semaphore's bound, and every holder's when they differ
// (each acquire compares with its own --limit, so a mismatch lets more in).
func limitText(d *inspect.Detail) string {
	if d.Limit == 0 {
		return "unknown"
	}
	s := strconv.FormatInt(d.Limit, 10)
	for _, h := range d.Holders {
		if h.Limit != d.Limit {
			var all []string
			for _, h := range d.Holders {
				all = append(all, strconv.FormatInt(h.Limit, 10))
			}
			return s + " (holders disagree: " + strings.Join(all, ", ") + ")"
		}
	}
	return s
}

// holderText is one semaphore holder on one line.
func holderText(h inspect.Lock) string {
	s := orDash(h.Owner) + " (token " + h.TokenHash + ", fence " + strconv.FormatInt(h.Fence, 10) +
		", age " + ageText(h.Age) + ", ttl " + ttlCell(h.TTL) + ")"
	if h.Note != "" {
		s += " note: " + h.Note
	}
	if h.CI != "" {
		s += " ci: " + h.CI
	}
	return s
}

// waiterText is one FIFO waiter: the queue keeps only its token.
func waiterText(w inspect.Waiter) string {
	s := "token " + w.TokenHash + ", waiting " + ageText(w.Waiting)
	switch {
	case w.Heartbeat == 0:
		s += ", stopped trying (dropped at the next attempt)"
	case w.Heartbeat > 0:
		s += ", heartbeat " + shortDuration(w.Heartbeat)
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

type waiterRecord struct {
	TokenHash   string `json:"token_hash"`
	ArrivedAt   string `json:"arrived_at"`
	WaitingMS   int64  `json:"waiting_ms"`
	HeartbeatMS int64  `json:"heartbeat_ms"`
}

func detailJSON(d *inspect.Detail) map[string]any {
	queue := make([]waiterRecord, 0, len(d.Queue))
	for _, w := range d.Queue {
		queue = append(queue, waiterRecord{TokenHash: w.TokenHash, ArrivedAt: w.Arrived.Format(time.RFC3339Nano),
			WaitingMS: msOrMinus(w.Waiting), HeartbeatMS: msOrMinus(w.Heartbeat)})
	}
	holders := make([]lockRecord, 0, len(d.Holders))
	for _, h := range d.Holders {
		holders = append(holders, lockJSON(h))
	}
	m := map[string]any{
		"name": d.Name, "key": d.Key, "held": d.Held(),
		"fence_counter": d.Fence, "fence_key": d.FenceKey,
		"subscribers": d.Subscribers,
		"queue_key":   d.QueueKey, "queue": queue,
		"semaphore_key": d.SemKey, "semaphore_values_key": d.SemValKey,
		"limit": d.Limit, "holders": holders,
		"lock": nil,
	}
	if d.Lock != nil {
		lj := lockJSON(*d.Lock)
		m["lock"] = lj
		if d.Raw != "" {
			m["value"] = d.Raw
		}
		if d.Fields != nil {
			m["fields"] = d.Fields
		}
	}
	return m
}

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

--fix asks for confirmation on a terminal; elsewhere it needs --yes. Each key
is re-checked and changed in one atomic step (only if it still has no TTL),
so a lock someone took properly in the meantime is left alone.`,
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
		r.Kind, r.Owner = x.Holder.Kind, x.Holder.Owner
	}
	return r
}

func (r orphanRecord) row() []string {
	row := []string{r.Name, r.Key, r.Type, orDash(r.Owner)}
	if r.Action != "" {
		row = append(row, r.Action)
	}
	return row
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
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
	var fix inspect.Fix
	if o.fix != "" {
		var err error
		if fix, err = parseFix(o.fix); err != nil {
			return err
		}
		if o.check {
			return usageErrorf("--check and --fix do not go together")
		}
		if !o.yes && !(f.IO.IsStdinTTY() && f.IO.IsStderrTTY()) {
			return &UsageError{Err: fmt.Errorf("refusing to --fix %s without confirmation", o.fix),
				Hints: []string{"there is no terminal to ask on; run `lockctl inspect orphans` to review the keys, then add --yes"}}
		}
	}
	in, err := inspector(f)
	if err != nil {
		return err
	}
	json := f.G.Output == "json"
	tty := !json && f.IO.IsStdoutTTY()
	var arr *ui.JSONArray
	if json {
		arr = ui.NewJSONArray(f.IO.Out)
	}
	var found []orphanRecord
	count := 0
	prog := newProgress(f)
	err = in.Orphans(c.Context(), glob, &inspect.ScanOptions{Progress: prog.update}, func(x inspect.Orphan) error {
		count++
		r := orphanOf(x)
		switch {
		case o.fix != "" || tty:
			// Fixing needs the whole list first (to confirm); a
			// terminal table needs it to size its columns.
			found = append(found, r)
		case json:
			return arr.Add(r)
		default:
			return ui.WriteTSV(f.IO.Out, [][]string{r.row()})
		}
		return nil
	})
	prog.done()
	if err != nil {
		return err
	}
	pattern := in.Pattern(glob)
	if o.fix != "" && count > 0 {
		if err := applyFix(c, f, in, fix, o, found); err != nil {
			return err
		}
	}
	if tty {
		sort.Slice(found, func(i, j int) bool { return found[i].Name < found[j].Name })
		if count == 0 {
			f.IO.Errorf("no keys without TTL under %s", pattern)
		} else {
			header := []string{"NAME", "KEY", "TYPE", "OWNER"}
			if o.fix != "" {
				header = append(header, "ACTION")
			}
			rows := make([][]string, len(found))
			for i, r := range found {
				rows[i] = r.row()
			}
			if err := f.IO.PrintTable(ui.Table{Header: header, Rows: rows}); err != nil {
				return err
			}
		}
	} else if o.fix != "" {
		for _, r := range found {
			var err error
			if json {
				err = arr.Add(r)
			} else {
				err = ui.WriteTSV(f.IO.Out, [][]string{r.row()})
			}
			if err != nil {
				return err
			}
		}
	}
	if json {
		if err := arr.Close(); err != nil {
			return err
		}
	}
	if o.check && count > 0 {
		return &ExitError{Code: ExitFound, Err: fmt.Errorf("%d key(s) under %s have no TTL and will never free themselves", count, pattern)}
	}
	return nil
}

func applyFix(c *cobra.Command, f *Factory, in *inspect.Inspector, fix inspect.Fix, o *orphansOptions, found []orphanRecord) error {
	what := "delete"
	if !fix.Delete {
		what = "set a TTL of " + fix.Expire.String() + " on"
	}
	if !o.yes {
		for _, r := range found {
			f.IO.Errorf("  %s (%s, owner %s)", r.Key, r.Type, orDash(r.Owner))
		}
		fmt.Fprintf(f.IO.ErrOut, "lockctl: %s these %d key(s)? [y/N] ", what, len(found))
		line, _ := bufio.NewReader(f.IO.In).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(line)); a != "y" && a != "yes" {
			return &ExitError{Code: ExitFound, Err: errors.New("nothing changed")}
		}
	}
	keys := make([]string, len(found))
	for i, r := range found {
		keys[i] = r.Key
	}
	done, err := in.FixOrphans(c.Context(), keys, fix)
	changed := 0
	for i := range found {
		switch {
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
		f.IO.Errorf("%d key(s) changed since the scan (a TTL was set or the lock was re-taken) and were left alone", skipped)
	}
	return nil
}

type forceOptions struct {
	token  string
	reason string
}

func newForceReleaseCmd(f *Factory) *cobra.Command {
	o := &forceOptions{}
	c := &cobra.Command{
		Use:   "force-release NAME --token T [--reason S]",
		Short: "Free a stuck lock, only if the given holder still holds it",
		Long: `Free NAME only if the holder identified by --token still holds it; a holder
that took over in the meantime is left alone (exit 65, naming it).

--token is the holder's token, or the hash that 'inspect locks --wide' shows
(a prefix of at least 8 hex digits of SHA-1(token)). For a plain SET lock of
another client the token is its whole value; for a Redisson lock, its
uuid:threadId field. For a --limit lock it frees the one semaphore slot the
token holds; the other holders keep theirs. The comparison, the delete,
waking the waiters and the audit record (who, when, which holder, why; see
'inspect audit') happen in one atomic script.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name, err := validName(args, "lock NAME")
			if err != nil {
				return err
			}
			if o.token == "" {
				return &UsageError{Err: errors.New("missing --token"),
					Hints: []string{"`lockctl inspect locks --wide` shows each holder's token hash"}}
			}
			in, err := inspector(f)
			if err != nil {
				return err
			}
			r, err := in.ForceRelease(c.Context(), name, o.token, &inspect.ReleaseOptions{Reason: o.reason})
			var held *lock.HeldError
			switch {
			case errors.As(err, &held) && held.Holder.Kind == "semaphore":
				return withHint(reword(err, "no slot of %s is held by %s; nothing changed (%d holder(s); the first to expire is %s, token %s, ttl %s)",
					name, o.token, held.Holder.Holders, orDash(held.Holder.Owner), inspect.TokenHash(held.Holder.Token), ttlCell(held.Holder.TTL)),
					"`lockctl inspect lock "+name+"` lists every holder's token hash")
			case errors.As(err, &held):
				return withHint(reword(err, "%s is held by %s (token %s)%s, not by %s; nothing changed", name,
					held.Holder.Owner, inspect.TokenHash(held.Holder.Token), ttlText(held.Holder.TTL), o.token),
					"the holder changed since you looked: run `lockctl inspect lock "+name+"` again")
			case errors.Is(err, lock.ErrNotHeld):
				return reword(err, "%s is not held (expired or already released); nothing changed", name)
			case err != nil:
				return err
			}
			if f.G.Output == "json" {
				m := map[string]any{"name": name, "key": r.Holder.Key, "released": true,
					"kind": r.Holder.Kind, "owner": r.Holder.Owner, "fence": r.Holder.Fence,
					"token_hash": r.TokenHash, "ttl_ms": msOrMinus(r.Holder.TTL), "audit_id": r.AuditID}
				if r.Holder.Kind == "semaphore" {
					m["holders_left"] = r.HoldersLeft
				}
				return f.IO.PrintJSON(m)
			}
			what := "released " + name
			if r.Holder.Kind == "semaphore" {
				what = fmt.Sprintf("freed a slot of %s (%d still held)", name, r.HoldersLeft)
			}
			f.IO.Errorf("%s held by %s (token %s, fence %d); recorded in the audit log as %s",
				what, orDash(r.Holder.Owner), r.TokenHash, r.Holder.Fence, r.AuditID)
			return nil
		},
	}
	c.Flags().StringVar(&o.token, "token", "", "the holder's token, or its hash from `inspect locks --wide`")
	c.Flags().StringVar(&o.reason, "reason", "", "why, for the audit log")
	return c
}

func newAuditCmd(f *Factory) *cobra.Command {
	var n int64
	c := &cobra.Command{
		Use:   "audit",
		Short: "List forced releases, oldest first (newest last)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if n < 0 {
				return usageErrorf("-n %d: want a count of 0 (all) or more", n)
			}
			in, err := inspector(f)
			if err != nil {
				return err
			}
			entries, err := in.Audit(c.Context(), n)
			if err != nil {
				return err
			}
			if f.G.Output == "json" {
				out := make([]map[string]any, 0, len(entries))
				for _, e := range entries {
					out = append(out, map[string]any{"id": e.ID, "at": e.At.Format(time.RFC3339Nano), "who": e.Who,
						"name": e.Name, "key": e.Key, "kind": e.Kind, "owner": e.Owner, "token_hash": e.TokenHash,
						"fence": e.Fence, "ttl_ms": msOrMinus(e.TTL), "reason": e.Reason})
				}
				return f.IO.PrintJSON(out)
			}
			rows := make([][]string, 0, len(entries))
			for _, e := range entries {
				rows = append(rows, []string{e.At.Local().Format(time.RFC3339), e.Who, e.Name, e.Owner, e.TokenHash,
					strconv.FormatInt(e.Fence, 10), ttlCell(e.TTL), e.Reason})
			}
			if len(rows) == 0 && f.IO.IsStdoutTTY() {
				f.IO.Errorf("no forced releases recorded")
				return nil
			}
			return f.IO.PrintTable(ui.Table{Header: []string{"TIME", "WHO", "NAME", "OWNER", "TOKEN", "FENCE", "TTL LEFT", "REASON"}, Rows: rows})
		},
	}
	c.Flags().Int64VarP(&n, "n", "n", 0, "show only the N newest entries (0: all)")
	return c
}
