package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Style colours parts of the text output. Every field may be nil (plain
// text); the command layer fills it with terminal styles. A function must
// not change the visible width of what it is given.
type Style struct {
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

func apply(f func(string) string, s string) string {
	if f == nil {
		return s
	}
	return f(s)
}

// Lane symbols: the actor of the step, a holder of an unexpired lease, an
// actor that still believes it holds a lease that ran out, nothing.
const (
	symActing = "*"
	symHolder = "|"
	symStale  = "!"
	symIdle   = "."
)

// noteWidth is where explanations wrap.
const noteWidth = 76

// lineWidth is the most columns any line of the text output takes: an
// 80-column terminal shows every line whole. Longer lines (a script's
// keys and arguments, a JSON reply) wrap, indented under their start.
const lineWidth = 80

// TextPrinter writes a timeline as it happens. It implements Observer, so
// the command layer can stream a run (and pause after each event); RenderText
// drives it over a finished Result.
type TextPrinter struct {
	w     io.Writer
	style Style
	last  *Event
	err   error

	fenceHead string // the first 8 digits of the first fence shown
}

// fenceRE matches a fence: lockctl's fences are 16-digit numbers (the
// microsecond clock floor plus a count), alike in their first digits.
var fenceRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\b[1-9][0-9]{15}\b`) })

// fenceTail is how many last digits of a fence the timeline shows.
const fenceTail = 8

// fences shortens every fence in s to "…" and its last 8 digits, which a
// trainee compares at a glance (…00000000 before …11000000), when its
// first digits are those of the first fence this printer showed; any other
// is shown whole, so that no two shortened fences compare the wrong way.
// -o json keeps every fence whole.
func (p *TextPrinter) fences(s string) string {
	return fenceRE().ReplaceAllStringFunc(s, func(f string) string {
		head := f[:len(f)-fenceTail]
		if p.fenceHead == "" {
			p.fenceHead = head
		}
		if head != p.fenceHead {
			return f
		}
		return "…" + f[len(f)-fenceTail:]
	})
}

// NewTextPrinter returns a printer writing to w in style st.
func NewTextPrinter(w io.Writer, st Style) *TextPrinter { return &TextPrinter{w: w, style: st} }

// Err is the first write error.
func (p *TextPrinter) Err() error { return p.err }

func (p *TextPrinter) printf(format string, a ...interface{}) {
	if p.err == nil {
		_, p.err = fmt.Fprintf(p.w, format, a...)
	}
}

// Begin prints the scenario heading.
func (p *TextPrinter) Begin(r *Result) {
	st := p.style
	p.lines("", apply2(st.Title), hang(fit(r.Scenario.Name+": "+r.Scenario.Title, lineWidth, lineWidth-2), 2))
	for _, line := range wrap(r.Scenario.Summary, noteWidth) {
		p.printf("%s\n", line)
	}
	mode := "embedded Redis, virtual time: the same output on every run"
	if r.Mode == "real" {
		mode = "real Redis server, real time: " + r.Scale + " (TTLs scaled the same); key names shown without the run prefix"
	}
	p.lines("", apply2(st.Dim), hang(fit(mode, lineWidth, lineWidth-2), 2))
	p.lines("", apply2(st.Dim), []string{
		"lanes: * acts  | holds an unexpired lease  . idle",
		"       ! believes it holds, but its lease ran out",
	})
	p.lines("", apply2(st.Dim), hang(fit("fences: 16-digit numbers alike in their first 8 digits, shown by their last 8 (…11000000 > …00000000); -o json has them whole", lineWidth, lineWidth-8), 8))
}

// apply2 is apply as a function of its text alone.
func apply2(f func(string) string) func(string) string {
	return func(s string) string { return apply(f, s) }
}

// lines prints each line after indent, styled by style.
func (p *TextPrinter) lines(indent string, style func(string) string, lines []string) {
	for _, l := range lines {
		p.printf("%s%s\n", indent, style(l))
	}
}

// BeginVariant prints a variant heading and the lane header.
func (p *TextPrinter) BeginVariant(r *Result, v *VariantResult) {
	n := 0
	for i := range r.Variants {
		if &r.Variants[i] == v {
			n = i + 1
		}
	}
	label := v.Technique + " technique"
	switch v.Technique {
	case "partial":
		label = "a partial fix, not enough on its own"
	case "yours":
		label = "your script"
	}
	p.printf("\n")
	heading := []string{fmt.Sprintf("%d. %s  (%s)", n, v.Name, label)}
	if width(heading[0]) > lineWidth {
		// The technique's label on a line of its own.
		heading = hang(fit(fmt.Sprintf("%d. %s", n, v.Name), lineWidth, lineWidth-3), 3)
		heading = append(heading, "   ("+label+")")
	}
	p.lines("", apply2(p.style.Variant), heading)
	p.printf("%s  %s\n", apply(p.style.Dim, fmt.Sprintf("%7s", "t")), apply(p.style.Dim, strings.Join(r.Lanes, " ")))
	p.last = nil
}

// Event prints one step: a heading line when the actor or action changes,
// then the command and reply.
func (p *TextPrinter) Event(r *Result, v *VariantResult, e Event) error {
	st := p.style
	indent := strings.Repeat(" ", 9+laneWidth(r.Lanes)+2)
	if p.last == nil || p.last.TMS != e.TMS || p.last.Actor != e.Actor || p.last.Action != e.Action {
		actor := fmt.Sprintf("%-8s", e.Actor)
		head := len(indent) + width(actor) + 1
		action := fit(p.fences(e.Action), lineWidth-head, lineWidth-head)
		p.printf("%s  %s  %s\n", apply(st.Time, fmt.Sprintf("%6.1fs", float64(e.TMS)/1000)), p.lanes(r.Lanes, e), apply(func(s string) string {
			if st.Actor == nil {
				return s
			}
			return st.Actor(e.Actor, s)
		}, actor)+" "+action[0])
		p.lines(strings.Repeat(" ", head), func(s string) string { return s }, action[1:])
	}
	if e.Command != "" {
		cmd := e.Command
		if e.Node != "" {
			cmd = e.Node + ": " + cmd
		}
		p.exchange(indent, ">", st.Command, p.fences(cmd))
		style := st.Reply
		if strings.HasPrefix(e.Reply, "(error)") {
			style = st.Error
		}
		p.exchange(indent, "<", style, p.fences(e.Reply))
	}
	if e.Note != "" {
		for _, line := range wrap(p.fences(e.Note), noteWidth-len(indent)) {
			p.printf("%s%s\n", indent, apply(st.Note, "  "+line))
		}
	}
	ev := e
	p.last = &ev
	return p.err
}

// exchange prints a command (mark ">") or a reply ("<") after indent, its
// later lines indented under its arguments.
func (p *TextPrinter) exchange(indent, mark string, style func(string) string, s string) {
	cols := lineWidth - len(indent) - 2
	for i, line := range hang(fit(s, cols, cols-2), 2) {
		lead := apply(p.style.Dim, mark) + " "
		if i > 0 {
			lead = "  "
		}
		p.printf("%s%s%s\n", indent, lead, apply(style, line))
	}
}

// EndVariant prints the verdict.
func (p *TextPrinter) EndVariant(r *Result, v *VariantResult) {
	word := apply(p.style.Unsafe, "UNSAFE")
	if v.Verdict.Safe {
		word = apply(p.style.Safe, "SAFE")
	}
	plain := "UNSAFE"
	if v.Verdict.Safe {
		plain = "SAFE"
	}
	lead := "  verdict: " + plain + "  "
	lines := fit(v.Verdict.Summary, lineWidth-width(lead), lineWidth-11)
	p.printf("  verdict: %s  %s\n", word, lines[0])
	p.lines(strings.Repeat(" ", 11), func(s string) string { return s }, lines[1:])
}

func laneWidth(lanes []string) int { return len(strings.Join(lanes, " ")) }

func (p *TextPrinter) lanes(lanes []string, e Event) string {
	parts := make([]string, len(lanes))
	for i, l := range lanes {
		sym := symIdle
		switch {
		case l == e.Actor || contains(e.lanes, l):
			sym = symActing
		case contains(e.Holders, l):
			sym = symHolder
		case contains(e.stale, l):
			sym = symStale
		}
		pad := strings.Repeat(" ", len(l)-1)
		switch {
		case sym == symIdle:
			parts[i] = apply(p.style.Dim, sym) + pad
		case p.style.Actor != nil:
			parts[i] = p.style.Actor(l, sym) + pad
		default:
			parts[i] = sym + pad
		}
	}
	return strings.Join(parts, " ")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// width is the number of columns s takes: one a rune, as every character
// the text output prints is one column wide ("…" included).
func width(s string) int { return utf8.RuneCountInString(s) }

func wrap(s string, cols int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && width(line)+1+width(w) > cols {
			lines = append(lines, line)
			line = ""
		}
		if line != "" {
			line += " "
		}
		line += w
	}
	if line != "" {
		lines = append(lines, line)
	}
	return lines
}

// RenderText writes a finished run as a timeline.
func RenderText(w io.Writer, r *Result, st Style) error {
	p := NewTextPrinter(w, st)
	p.Begin(r)
	for i := range r.Variants {
		v := &r.Variants[i]
		p.BeginVariant(r, v)
		for _, e := range v.Events {
			if err := p.Event(r, v, e); err != nil {
				return err
			}
		}
		p.EndVariant(r, v)
	}
	return p.Err()
}

// RenderJSON writes a run as one indented JSON document.
func RenderJSON(w io.Writer, r *Result) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(r)
}

// RenderList writes the scenario names and titles, one a line.
func RenderList(w io.Writer, list []Info) error {
	nameWidth := 0
	for _, s := range list {
		if len(s.Name) > nameWidth {
			nameWidth = len(s.Name)
		}
	}
	for _, s := range list {
		for i, line := range fit(s.Title, lineWidth-nameWidth-2, lineWidth-nameWidth-2) {
			name := s.Name
			if i > 0 {
				name = ""
			}
			if _, err := fmt.Fprintf(w, "%-*s  %s\n", nameWidth, name, line); err != nil {
				return err
			}
		}
	}
	return nil
}

func secs(d time.Duration) string {
	s := fmt.Sprintf("%.1f", d.Seconds())
	return strings.TrimSuffix(s, ".0") + " s"
}

// fit breaks s into a first line of at most first columns and later
// lines of at most rest columns (the caller indents them). A line that fits
// is kept as it is. Otherwise s breaks at spaces, and a word too long for a
// line (a JSON value) after its commas; a piece still too long is cut with
// "…". Words break at commas only when they do not fit a line of their own.
func fit(s string, first, rest int) []string {
	if width(s) <= first {
		return []string{s}
	}
	type atom struct {
		text string
		glue bool // continues the word before it, no space between
	}
	var atoms []atom
	for _, w := range strings.Fields(s) {
		if width(w) <= rest {
			atoms = append(atoms, atom{w, false})
			continue
		}
		for i, piece := range strings.SplitAfter(w, ",") {
			if piece != "" {
				atoms = append(atoms, atom{piece, i > 0})
			}
		}
	}
	var lines []string
	line, room := "", first
	for _, a := range atoms {
		sep := " "
		if a.glue || line == "" {
			sep = ""
		}
		if line != "" && width(line)+width(sep)+width(a.text) > room {
			lines = append(lines, line)
			line, room, sep = "", rest, ""
		}
		text := a.text
		if width(text) > room && room > 1 {
			text = string([]rune(text)[:room-1]) + "…"
		}
		line += sep + text
	}
	return append(lines, line)
}

// hang indents every line but the first by n spaces.
func hang(lines []string, n int) []string {
	for i := 1; i < len(lines); i++ {
		lines[i] = strings.Repeat(" ", n) + lines[i]
	}
	return lines
}
