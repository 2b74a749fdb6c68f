package ui

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/charmbracelet/lipgloss"
)

// TopLock is one row of `lockctl top`.
type TopLock struct {
	Name, Holder string
	Mode         string        // exclusive, shared or semaphore: one row per holder
	Age          time.Duration // -1 unknown
	TTL          time.Duration // -1 none
	LeaseTTL     time.Duration // the TTL it was taken with; 0 unknown
	Waiters      int64
	Queued       int64
	Waits, Holds []time.Duration // recent, oldest first
}

// TopView is one screen of `lockctl top`.
type TopView struct {
	Title   string    // what is shown (the key pattern)
	Locks   []TopLock // sorted by the caller
	Refresh int64
	Status  string // e.g. an error reaching Redis
}

var (
	topHeader = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Bold(true).Reverse(true) })
	barFull   = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color("2")) })
	barLow    = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color("3")) })
)

const sparkRunes = "▁▂▃▄▅▆▇█"

// Sparkline draws ds (at most width of the newest) scaled to their maximum.
func Sparkline(ds []time.Duration, width int) string {
	if len(ds) > width {
		ds = ds[len(ds)-width:]
	}
	var hi time.Duration
	for _, d := range ds {
		hi = max(hi, d)
	}
	runes := []rune(sparkRunes)
	var b strings.Builder
	for _, d := range ds {
		i := 0
		if hi > 0 {
			i = int(float64(d) / float64(hi) * float64(len(runes)-1))
		}
		b.WriteRune(runes[i])
	}
	return b.String() + strings.Repeat(" ", width-len(ds))
}

// ttlBar is the remaining share of the lease as a bar of width cells.
func (s *IOStreams) ttlBar(l TopLock, width int) string {
	if l.TTL < 0 {
		return pad("none", width)
	}
	if l.LeaseTTL <= 0 {
		return pad(l.TTL.Round(time.Second).String(), width)
	}
	frac := min(1, float64(l.TTL)/float64(l.LeaseTTL))
	n := int(frac*float64(width) + 0.5)
	st := barFull()
	if frac < 0.34 {
		st = barLow()
	}
	return s.style(st, strings.Repeat("█", n)) + strings.Repeat("░", width-n)
}

func pad(v string, w int) string {
	v = Truncate(v, w)
	if n := lipgloss.Width(v); n < w {
		v += strings.Repeat(" ", w-n)
	}
	return v
}

func shortDur(d time.Duration) string {
	switch {
	case d < 0:
		return "-"
	case d < time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d < time.Hour:
		return d.Round(time.Second).String()
	}
	return d.Round(time.Minute).String()
}

// RenderTop draws v for a terminal width×height; columns are dropped as
// the width shrinks (sparklines first, then waiters, then the TTL bar), and
// rows past the height are summarised in the last line.
func (s *IOStreams) RenderTop(v TopView, width, height int) string {
	width = max(width, 20)
	height = max(height, 4)
	type col struct {
		title string
		w     int
		cell  func(TopLock) string
	}
	cols := []col{
		{"NAME", 20, func(l TopLock) string { return Escape(l.Name) }},
		{"HOLDER", 22, func(l TopLock) string { return Escape(l.Holder) }},
		{"AGE", 8, func(l TopLock) string { return shortDur(l.Age) }},
		{"MODE", 9, func(l TopLock) string { return l.Mode }},
		{"TTL", 12, nil},
		{"WAITERS", 7, func(l TopLock) string { return fmt.Sprint(l.Waiters) }},
		{"QUEUE", 5, func(l TopLock) string { return fmt.Sprint(l.Queued) }},
		{"WAITS", 12, nil},
		{"HOLDS", 12, nil},
	}
	need := func(cs []col) int {
		n := 0
		for _, c := range cs {
			n += c.w + 1
		}
		return n
	}
	drop := func(title string) {
		for i, c := range cols {
			if c.title == title {
				cols = append(cols[:i], cols[i+1:]...)
				return
			}
		}
	}
	// The sparklines go first; then NAME and HOLDER give up columns (down
	// to 12 and 14), so that an 80-column terminal keeps WAITERS; then
	// queue, TTL bar, mode and waiters go.
	for _, t := range []string{"HOLDS", "WAITS"} {
		if need(cols) > width {
			drop(t)
		}
	}
	for need(cols) > width && (cols[0].w > 12 || cols[1].w > 14) {
		if cols[1].w-14 >= cols[0].w-12 {
			cols[1].w--
		} else {
			cols[0].w--
		}
	}
	for _, t := range []string{"QUEUE", "TTL", "MODE", "WAITERS"} {
		if need(cols) > width {
			drop(t)
		}
	}
	if need(cols) > width {
		// Narrower than NAME HOLDER AGE: shrink NAME and HOLDER.
		spare := max(width-(cols[2].w+3), 8)
		cols[0].w, cols[1].w = spare/2, spare-spare/2
		cols[0].w--
		cols[1].w--
	}
	var b strings.Builder
	title := fmt.Sprintf("lockctl top — refresh #%d — %d held — %s — q quits", v.Refresh, len(v.Locks), v.Title)
	b.WriteString(s.style(boldStyle(), Truncate(title, width)) + "\r\n")
	var head []string
	for _, c := range cols {
		head = append(head, pad(c.title, c.w))
	}
	b.WriteString(s.style(topHeader(), pad(strings.Join(head, " "), width)) + "\r\n")
	rows := height - 3
	for i, l := range v.Locks {
		if i == rows-1 && len(v.Locks) > rows {
			b.WriteString(s.style(faintStyle(), fmt.Sprintf("… %d more", len(v.Locks)-i)) + "\r\n")
			break
		}
		var cells []string
		for _, c := range cols {
			switch c.title {
			case "TTL":
				cells = append(cells, s.ttlBar(l, c.w))
			case "WAITS":
				cells = append(cells, Sparkline(l.Waits, c.w))
			case "HOLDS":
				cells = append(cells, Sparkline(l.Holds, c.w))
			default:
				cells = append(cells, pad(c.cell(l), c.w))
			}
		}
		b.WriteString(strings.Join(cells, " ") + "\r\n")
	}
	if len(v.Locks) == 0 && v.Status == "" {
		// An error (Redis unreachable, a Cluster listing incomplete) is
		// never "no locks held": the keys it could not read may hold some.
		b.WriteString(s.style(faintStyle(), "no locks held") + "\r\n")
	}
	if v.Status != "" {
		b.WriteString(s.style(warnStyle(), Truncate(v.Status, width)) + "\r\n")
	}
	return b.String()
}
