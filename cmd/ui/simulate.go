package ui

import (
	"sync"

	"github.com/charmbracelet/lipgloss"
)

// actorColors give each simulated client its own lane colour, so a reader
// can follow A, B and C down the timeline. Servers and operators share one
// colour: they are the scenery, not the contenders.
var actorColors = map[string]lipgloss.Color{
	"A": lipgloss.Color("12"), // bright blue
	"B": lipgloss.Color("13"), // bright magenta
	"C": lipgloss.Color("14"), // bright cyan
	"D": lipgloss.Color("10"), // bright green
}

var (
	simServerStyle = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color("11")) }) // yellow
	simStaleStyle  = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color("9")).Bold(true) })
	simTitleStyle  = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Bold(true) })
	simVarStyle    = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("11")) })
	simErrorStyle  = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color("1")) })
	simSafeStyle   = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color("2")).Bold(true) })
	simUnsafeStyle = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true) })
	simNoteStyle   = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Faint(true).Italic(true) })
	simDimStyle    = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Faint(true) })
)

// TimelineStyle is how a `lockctl simulate` timeline is coloured: a
// function per part of it (nil prints the part plain). Its fields are the
// simulate package's Style's, so the command converts one into the other
// and cmd/ui stays a presentation package that knows no feature.
type TimelineStyle struct {
	Title   func(string) string // scenario title
	Variant func(string) string // variant heading
	Time    func(string) string
	Actor   func(actor, s string) string // lane symbols and actor names
	Command func(string) string
	Reply   func(string) string
	Error   func(string) string // error replies
	Note    func(string) string
	Safe    func(string) string // "SAFE" verdicts
	Unsafe  func(string) string // "UNSAFE" verdicts
	Dim     func(string) string // idle lanes, legends
}

// SimulateStyle colours `lockctl simulate` timelines; with colour off it is
// the zero TimelineStyle, which prints plain text.
func (s *IOStreams) SimulateStyle() TimelineStyle {
	if !s.color {
		return TimelineStyle{}
	}
	return TimelineStyle{
		Title:   render(simTitleStyle()),
		Variant: render(simVarStyle()),
		Time:    render(simDimStyle()),
		Actor:   simActor,
		Command: func(v string) string { return v },
		Reply:   func(v string) string { return v },
		Error:   render(simErrorStyle()),
		Note:    render(simNoteStyle()),
		Safe:    render(simSafeStyle()),
		Unsafe:  render(simUnsafeStyle()),
		Dim:     render(simDimStyle()),
	}
}

func render(st lipgloss.Style) func(string) string {
	return func(v string) string { return st.Render(v) }
}

// simActor colours a lane symbol or an actor's name. The "!" lane symbol
// (an actor that believes it holds a lease that ran out) is the danger the
// scenarios teach, so it is red whoever it belongs to.
func simActor(actor, v string) string {
	if v == "!" {
		return simStaleStyle().Render(v)
	}
	if c, ok := actorColors[actor]; ok {
		return lipgloss.NewStyle().Foreground(c).Bold(true).Render(v)
	}
	return simServerStyle().Render(v)
}
