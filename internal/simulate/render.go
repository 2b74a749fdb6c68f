package simulate

import (
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"
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
var fenceRE = regexp.MustCompile(`\b[1-9][0-9]{15}\b`)

// fenceTail is how many last digits of a fence the timeline shows.
const fenceTail = 8

// fences shortens every fence in s to "…" and its last 8 digits, which a
// trainee compares at a glance (…00000000 before …11000000), when its
// first digits are those of the first fence this printer showed; any other
// is shown whole, so that no two shortened fences compare the wrong way.
// -o json keeps every fence whole.
func (p *TextPrinter) fences(s string) string {
	return fenceRE.ReplaceAllStringFunc(s, func(f string) string {
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
	p.printf("%s\n", apply(st.Title, r.Scenario.Name+": "+r.Scenario.Title))
	for _, line := range wrap(r.Scenario.Summary, noteWidth) {
		p.printf("%s\n", line)
	}
	if r.Mode == "real" {
		p.printf("%s\n", apply(st.Dim, "real Redis server, real time: "+r.Scale+" (TTLs scaled the same); key names shown without the run prefix"))
	} else {
		p.printf("%s\n", apply(st.Dim, "embedded Redis, virtual time: the same output on every run"))
	}
	p.printf("%s\n", apply(st.Dim, "lanes: * acts  | holds an unexpired lease  ! believes it holds, but its lease ran out  . idle"))
	p.printf("%s\n", apply(st.Dim, "fences: 16-digit numbers alike in their first 8 digits, shown by their last 8 (…11000000 > …00000000); -o json has them whole"))
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
	if v.Technique == "partial" {
		label = "a partial fix, not enough on its own"
	}
	p.printf("\n%s\n", apply(p.style.Variant, fmt.Sprintf("%d. %s  (%s)", n, v.Name, label)))
	p.printf("%s  %s\n", apply(p.style.Dim, fmt.Sprintf("%7s", "t")), apply(p.style.Dim, strings.Join(r.Lanes, " ")))
	p.last = nil
}

// Event prints one step: a heading line when the actor or action changes,
// then the command and reply.
func (p *TextPrinter) Event(r *Result, v *VariantResult, e Event) error {
	st := p.style
	indent := strings.Repeat(" ", 9+laneWidth(r.Lanes)+2)
	if p.last == nil || p.last.TMS != e.TMS || p.last.Actor != e.Actor || p.last.Action != e.Action {
		p.printf("%s  %s  %s\n", apply(st.Time, fmt.Sprintf("%6.1fs", float64(e.TMS)/1000)), p.lanes(r.Lanes, e), apply(func(s string) string {
			if st.Actor == nil {
				return s
			}
			return st.Actor(e.Actor, s)
		}, fmt.Sprintf("%-8s", e.Actor))+" "+p.fences(e.Action))
	}
	if e.Command != "" {
		p.printf("%s%s %s\n", indent, apply(st.Dim, ">"), apply(st.Command, p.fences(e.Command)))
		reply := apply(st.Reply, p.fences(e.Reply))
		if strings.HasPrefix(e.Reply, "(error)") {
			reply = apply(st.Error, p.fences(e.Reply))
		}
		p.printf("%s%s %s\n", indent, apply(st.Dim, "<"), reply)
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

// EndVariant prints the verdict.
func (p *TextPrinter) EndVariant(r *Result, v *VariantResult) {
	word := apply(p.style.Unsafe, "UNSAFE")
	if v.Verdict.Safe {
		word = apply(p.style.Safe, "SAFE")
	}
	p.printf("  verdict: %s  %s\n", word, v.Verdict.Summary)
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

func wrap(s string, width int) []string {
	var lines []string
	line := ""
	for _, w := range strings.Fields(s) {
		if line != "" && len(line)+1+len(w) > width {
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
	width := 0
	for _, s := range list {
		if len(s.Name) > width {
			width = len(s.Name)
		}
	}
	for _, s := range list {
		if _, err := fmt.Fprintf(w, "%-*s  %s\n", width, s.Name, s.Title); err != nil {
			return err
		}
	}
	return nil
}

func secs(d time.Duration) string {
	s := fmt.Sprintf("%.1f", d.Seconds())
	return strings.TrimSuffix(s, ".0") + " s"
}
