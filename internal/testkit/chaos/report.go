package chaos

import (
	"fmt"
	"os"
	"sort"
	"strings"
	"time"
)

// Scenario is one entry of the report's index: its number, title and, when
// it is not built, why.
type Scenario struct {
	ID, Title string
	NotBuilt  string // the whole scenario is not built, and why
	Missing   string // the parts of it that are not built
}

// Scenarios is the report's index, in the specification's order.
var Scenarios = []Scenario{
	{ID: "1", Title: "Baseline, no faults"},
	{ID: "2", Title: "Holder paused for 3x TTL"},
	{ID: "3", Title: "Holder kill -9"},
	{ID: "4", Title: "Redis restart"},
	{ID: "5", Title: "Failover"},
	{ID: "6", Title: "Network faults between a holder and Redis"},
	{ID: "7", Title: "Server stalls longer than the TTL"},
	{ID: "8", Title: "Eviction"},
	{ID: "9", Title: "Cluster"},
	{ID: "10", Title: "Redlock"},
	{ID: "11", Title: "once and limit under concurrency and restarts"},
	{ID: "12", Title: "Shared locks across processes"},
	{ID: "13", Title: "Pile-up: many processes on one lock, waiters and holders killed and paused mid-queue, a stuck holder force-released"},
	{ID: "14", Title: "Foreign locks: Redisson read-write and fair locks beside lockctl"},
	{ID: "15", Title: "lockctl's own pipes and output, and once that never runs twice"},
}

func ms(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	return d.Round(time.Millisecond).String()
}

// rows turns figures into the report's table rows: label, then one cell per
// variant.
func rows(fs []*Figures) [][]string {
	cell := func(get func(f *Figures) string) []string {
		out := make([]string, len(fs))
		for i, f := range fs {
			out[i] = get(f)
		}
		return out
	}
	row := func(label string, get func(f *Figures) string) []string {
		return append([]string{label}, cell(get)...)
	}
	return [][]string{
		row("seed", func(f *Figures) string { return fmt.Sprint(f.Seed) }),
		row("duration", func(f *Figures) string { return ms(f.Duration.Truncate(100 * time.Millisecond)) }),
		row("TTL", func(f *Figures) string { return ms(f.TTL) }),
		row("holders", func(f *Figures) string { return fmt.Sprint(f.Holders) }),
		row("acquisitions attempted / ok / busy / error / unknown", func(f *Figures) string {
			return fmt.Sprintf("%d / %d / %d / %d / %d", f.Attempted, f.Succeeded, f.Busy, f.Errors, f.Unknown)
		}),
		row("renewals", func(f *Figures) string { return fmt.Sprint(f.Renewals) }),
		row("losses detected", func(f *Figures) string { return fmt.Sprint(f.Losses) }),
		row("detection latency p50 / p99 / max", func(f *Figures) string {
			if len(f.Detect) == 0 {
				return "-"
			}
			a, b, c := Quantiles(f.Detect)
			return ms(a) + " / " + ms(b) + " / " + ms(c)
		}),
		row("children killed", func(f *Figures) string { return fmt.Sprint(f.ChildrenKilled) }),
		row("unfenced: overlaps (time) / max inside / lost updates", func(f *Figures) string {
			u := f.Unfenced
			return fmt.Sprintf("%d (%s) / %d / %d", u.Overlaps, ms(u.OverlapTime), u.MaxInside, u.LostUpdates)
		}),
		row("fenced: accepted / rejected / **accepted stale** / duplicates / regressions", func(f *Figures) string {
			s := f.Fenced
			return fmt.Sprintf("%d / %d / **%d** / %d / %d", s.Accepted, s.Rejected, s.AcceptedStale, s.Duplicates, s.Regressions)
		}),
		row("writes from a superseded holder (what an unfenced store takes)", func(f *Figures) string { return fmt.Sprint(f.Fenced.StaleAttempts) }),
		row("porcupine", func(f *Figures) string {
			if f.Checked == "" {
				return "-"
			}
			return f.Checked
		}),
		row("time to recover", func(f *Figures) string {
			if f.Recover == 0 {
				return "-"
			}
			return ms(f.Recover)
		}),
		row("verdict", func(f *Figures) string { return f.Verdict }),
	}
}

// WriteReport writes every published figure as Markdown to path.
func WriteReport(path string) error {
	reportMu.Lock()
	defer reportMu.Unlock()
	var b strings.Builder
	b.WriteString(reportHead)
	fmt.Fprintf(&b, "Last run: seed %d, tier %s, %s.\n\n", Seed(), tier(), time.Now().UTC().Format("2006-01-02 15:04 UTC"))
	byID := map[string][]*Figures{}
	for _, f := range report {
		id := strings.SplitN(f.Scenario, ".", 2)[0]
		byID[id] = append(byID[id], f)
	}
	b.WriteString("## Summary\n\n| scenario | variant | verdict |\n|---|---|---|\n")
	for _, sc := range Scenarios {
		fs := append([]*Figures(nil), byID[sc.ID]...)
		sort.SliceStable(fs, func(i, j int) bool { return fs[i].Scenario < fs[j].Scenario })
		if len(fs) == 0 {
			why := "not run in this tier"
			if sc.NotBuilt != "" {
				why = sc.NotBuilt
			}
			fmt.Fprintf(&b, "| %s. %s | | %s |\n", sc.ID, sc.Title, why)
		}
		for _, f := range fs {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", f.Scenario, f.Variant, f.Verdict)
		}
	}
	b.WriteString("\n")
	for _, sc := range Scenarios {
		fmt.Fprintf(&b, "## %s. %s\n\n", sc.ID, sc.Title)
		fs := byID[sc.ID]
		if len(fs) == 0 {
			if sc.NotBuilt != "" {
				fmt.Fprintf(&b, "%s.\n\n", sc.NotBuilt)
			} else {
				b.WriteString("not run in this tier.\n\n")
			}
			continue
		}
		if sc.Missing != "" {
			fmt.Fprintf(&b, "%s.\n\n", sc.Missing)
		}
		groups := map[string][]*Figures{}
		var names []string
		for _, f := range fs {
			if _, ok := groups[f.Scenario]; !ok {
				names = append(names, f.Scenario)
			}
			groups[f.Scenario] = append(groups[f.Scenario], f)
		}
		sort.Strings(names)
		for _, name := range names {
			g := groups[name]
			fmt.Fprintf(&b, "### %s\n\n", name)
			b.WriteString("| |")
			for _, f := range g {
				fmt.Fprintf(&b, " %s |", f.Variant)
			}
			b.WriteString("\n|---|")
			for range g {
				b.WriteString("---|")
			}
			b.WriteString("\n")
			for _, r := range rows(g) {
				b.WriteString("| " + strings.Join(r, " | ") + " |\n")
			}
			b.WriteString("\n")
			for _, f := range g {
				for _, n := range f.Notes {
					fmt.Fprintf(&b, "- %s: %s\n", f.Variant, n)
				}
			}
			b.WriteString("\n")
		}
	}
	b.WriteString(reportTail)
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

func tier() string {
	if Full() {
		return "full (`make chaos`)"
	}
	return "short (the CI tier of `make test`)"
}

const reportHead = `# lockctl reliability report

Generated by ` + "`make reliability`" + ` (the full tier of ` + "`internal/testkit/chaos`" + `; ` + "`make chaos`" + ` runs it
without writing this file). Do not edit by hand.

Every scenario runs real ` + "`redis-server`" + ` processes on loopback and real holders:
` + "`lockctl run`" + ` processes (the built binary) and in-process ` + "`pkg/lock`" + ` clients. Their
critical sections write to two stores on a loopback HTTP server: an **unfenced** one that
only counts (holders inside at once, overlap time, lost updates of a read-sleep-write
counter) and a **fenced** one that accepts a write only as ` + "`lockctl fence check --token`" + `
would. Beside its verdict the fenced store keeps the ground truth no fence can see: which
holder arrived last. A write it accepted from an older holder is an **accepted stale**
write; that figure must be 0 wherever lockctl claims safety. Lock histories are checked
for linearizability with porcupine against a lease-lock model (a holder keeps the lock
from its grant until it releases or gives the lease up; "busy" is also legal while a
given-up lease may still live on the server). In scenario 12 the holders are readers and
writers: there an overlap is a writer inside with anyone, readers inside together are
counted apart (shared mode must share), and a reader's fence is checked as
` + "`lockctl fence check --shared`" + ` would; porcupine's model is a mutex and is not applied.

Each scenario runs the unprotected variant beside lockctl (plain ` + "`SET NX PX`" + ` without
renewal and ` + "`DEL`" + ` release, ` + "`--on-lost ignore`" + `, writers that take the lock ` + "`--shared`" + `, a
stand-in holder that leaves SIGPIPE at its default, ` + "`once`" + `'s default at-least-once mode, or a listing
that skips a dead master), to show that the scenario can fail. Where a variant is an earlier build
of lockctl (` + "`LOCKCTL_CHAOS_BIN_OLD`" + `), its verdict is that it fails as the code did before the fix.
The pass rules are assertions in ` + "`internal/testkit/chaos`" + `; this file only reports figures.
Replay a run with ` + "`LOCKCTL_CHAOS_SEED=<seed> make chaos`" + `.

`

const reportTail = `## Limits no client can close

- A holder whose own process is stopped (SIGSTOP, a VM pause, a long GC) cannot stop its
  work on time: the unfenced store sees an overlap in scenario 2 whatever the lock does.
  Only the fenced store, which refuses the older fence, keeps the data safe.
- Without fencing, a lock lost on the server (eviction, a restart without persistence, a
  failover before replication) lets a second holder in while the first still works; the
  lock can only notice at its next renewal. The "writes from a superseded holder" row is
  what an unfenced store would have taken in each of those scenarios.
- Under ` + "`allkeys-lru`" + ` the fence counter is a key like any other and can be evicted with
  the lock; whether it is depends on the server's sampling, not on the seed. Fences still
  never go backwards: a recreated counter starts from the server's clock (see docs/safety.md).
- A SIGKILL of lockctl alone cannot reach its child: the child has its own process group
  and keeps working without a lease (scenario 3); only the fence stops its writes.
- A FAIL verdict is an assertion of the suite that failed in this run; ` + "`go test`" + ` names
  it with the seed that replays it.
`
