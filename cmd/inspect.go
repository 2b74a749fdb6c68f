package cmd

import (
	"fmt"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/pkg/inspect"
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
which keys will never free themselves, and free exactly one stuck holder.`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRunE,
	}
	addHeaderFlags(c.PersistentFlags(), &f.G)
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
	addHeaderFlags(c.Flags(), &f.G)
	return c
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

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
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
	return &progress{f: f, start: time.Now(), enabled: f.IO.IsStderrTTY() && !f.IO.JSONLog()}
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
