package ui

import (
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// HelpWidth is the width help text is laid out for off a terminal (a pipe,
// a file, a pager), and on a terminal whose width is unknown.
const HelpWidth = 80

// Wrap breaks the lines of s longer than width terminal columns at spaces.
// A continuation keeps the line's indentation, and lines up under the text
// of a list item ("- ", "* ") or of an indented two-column row (a term,
// two spaces or more, its meaning). Lines that fit are left as they are, so
// hand-made layouts (tables, aligned examples) survive; a word longer than
// width stays whole on a line of its own.
func Wrap(s string, width int) string {
	if width <= 0 {
		return s
	}
	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	for _, line := range lines {
		if lipgloss.Width(line) <= width {
			out = append(out, line)
			continue
		}
		out = append(out, wrapLine(line, width)...)
	}
	return strings.Join(out, "\n")
}

// wrapLine breaks one line, its continuations indented by hangingIndent.
func wrapLine(line string, width int) []string {
	hang := hangingIndent(line)
	if width-hang < 20 {
		// Too little room beside a deep indent: continue at the line's
		// own indentation instead.
		hang = len(line) - len(strings.TrimLeft(line, " "))
	}
	pad := strings.Repeat(" ", hang)
	var out []string
	cur := ""
	for rest := line; rest != ""; {
		// The next word with the spaces before it, kept as written
		// within a line (a two-column row's gap) and dropped at a break.
		body := strings.TrimLeft(rest, " ")
		gap := rest[:len(rest)-len(body)]
		word := body
		if i := strings.IndexByte(body, ' '); i >= 0 {
			word = body[:i]
		}
		rest = body[len(word):]
		if strings.TrimSpace(cur) != "" && lipgloss.Width(cur+gap+word) > width {
			out = append(out, cur)
			cur, gap = pad, ""
		}
		cur += gap + word
	}
	return append(out, cur)
}

// hangingIndent is the column a wrapped line's continuations start at: after
// a list marker, after the gap of a two-column row, else the line's own
// indentation.
func hangingIndent(line string) int {
	body := strings.TrimLeft(line, " ")
	indent := len(line) - len(body)
	for _, marker := range []string{"- ", "* "} {
		if strings.HasPrefix(body, marker) {
			return indent + len(marker)
		}
	}
	if indent > 0 {
		// "  term     meaning": the meaning's column.
		if i := strings.Index(body, "  "); i > 0 {
			rest := strings.TrimLeft(body[i:], " ")
			if rest != "" {
				return lipgloss.Width(line[:len(line)-len(rest)])
			}
		}
	}
	return indent
}
