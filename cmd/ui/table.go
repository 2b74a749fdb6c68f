package ui

import (
	"bytes"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/pkg/twwidth"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// overflow is what a table does with a cell wider than its column's share
// of the terminal.
type overflow int

const (
	// cutCells cuts it with "…": every row stays one line (listings, read
	// down a column).
	cutCells overflow = iota
	// wrapCells wraps it onto further lines of its row, at spaces where it
	// can: nothing is lost (doctor's verdicts, detail views, -o wide).
	wrapCells
)

// cellWidth is a cell's width in terminal columns, measured as tablewriter
// measures it when it lays the table out (lockctl's colour sequences count
// none, wide characters two), so that lines fit as computed.
func cellWidth(s string) int { return twwidth.Width(s) }

// writeTable writes rows (under header, when it is not nil) as the terminal
// table, laid out by tablewriter: no borders or rules, every cell trimmed
// of surrounding spaces and padded to its column's width, one space either
// side; short rows get empty cells. Cells are escaped already (they may
// carry lockctl's own SGR colours, nothing else). Columns wider than width
// allows give way (fitWidths) and their cells are cut or wrapped as over
// says, so that no line is wider than width.
func writeTable(w io.Writer, header []string, rows [][]string, width int, over overflow) error {
	n := len(header)
	for _, r := range rows {
		n = max(n, len(r))
	}
	if n == 0 {
		return nil
	}
	norm := func(r []string) []string {
		out := make([]string, n)
		for i, c := range r {
			out[i] = strings.TrimSpace(c)
		}
		return out
	}
	if header != nil {
		header = norm(header)
	}
	cells := make([][]string, len(rows))
	for i, r := range rows {
		cells[i] = norm(r)
	}

	natural := make([]int, n)
	floor := make([]int, n)
	for i := range n {
		if header != nil {
			natural[i] = cellWidth(header[i])
			floor[i] = max(natural[i], 3)
		}
	}
	for _, r := range cells {
		for i, c := range r {
			natural[i] = max(natural[i], cellWidth(c))
		}
	}
	for i := range floor {
		floor[i] = min(max(floor[i], 3), natural[i])
	}
	widths := fitWidths(natural, floor, width, over)

	fit := func(c string, w int) string {
		if cellWidth(c) <= w {
			return c
		}
		if over == wrapCells {
			return strings.Join(wrapCell(c, w), "\n")
		}
		return cutCell(c, w)
	}
	// Each column is as wide as what it shows once fitted (a wrapped
	// column can come out narrower than its share).
	final := make([]int, n)
	for i := range n {
		if widths[i] < natural[i] {
			if header != nil {
				header[i] = fit(header[i], widths[i])
			}
			for _, r := range cells {
				r[i] = fit(r[i], widths[i])
			}
		}
		if header != nil {
			final[i] = linesWidth(header[i])
		}
		for _, r := range cells {
			final[i] = max(final[i], linesWidth(r[i]))
		}
	}

	return layOut(w, header, cells, final, " ", " ")
}

// layOut is tablewriter's part: header (nil: none) and cells, which fit
// their columns, in columns of the given widths (padding not counted),
// padded by padLeft and padRight, without borders or rules.
func layOut(w io.Writer, header []string, cells [][]string, widths []int, padLeft, padRight string) error {
	perColumn := tw.NewMapper[int, int]()
	for i, cw := range widths {
		perColumn.Set(i, cw+len(padLeft)+len(padRight))
	}
	var b bytes.Buffer
	tbl := tablewriter.NewTable(&b,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithPadding(tw.Padding{Left: padLeft, Right: padRight, Overwrite: true}),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoFormat(tw.Off),
		// The cells fit their columns already; should a width still
		// differ, tablewriter cuts rather than letting a line run over.
		tablewriter.WithHeaderAutoWrap(tw.WrapTruncate),
		tablewriter.WithRowAutoWrap(tw.WrapTruncate),
		tablewriter.WithColumnWidths(perColumn),
	)
	if header != nil {
		tbl.Header(anys(header)...)
	}
	for _, r := range cells {
		if err := tbl.Append(anys(r)...); err != nil {
			return err
		}
	}
	if err := tbl.Render(); err != nil {
		return err
	}
	_, err := w.Write(b.Bytes())
	return err
}

func anys(r []string) []any {
	out := make([]any, len(r))
	for i, c := range r {
		out[i] = c
	}
	return out
}

// naturalWidth is the width of the terminal table of header and rows with
// every cell whole on one line: each column as wide as its widest cell,
// padded by one space either side (writeTable's layout).
func naturalWidth(header []string, rows [][]string) int {
	var widths []int
	grow := func(r []string) {
		for i, c := range r {
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], cellWidth(strings.TrimSpace(c)))
		}
	}
	grow(header)
	for _, r := range rows {
		grow(r)
	}
	total := 0
	for _, w := range widths {
		total += w + 2
	}
	return total
}

// linesWidth is the width of the widest line of a (wrapped) cell.
func linesWidth(c string) int {
	w := 0
	for line := range strings.SplitSeq(c, "\n") {
		w = max(w, cellWidth(line))
	}
	return w
}

// fitWidths returns each column's width (its cells', padding not counted)
// such that the table's lines, each column padded by one space either side,
// fit width where the columns can give way: when cutting, the last column
// (free text: a note, a reason) first, then the widest column; when
// wrapping, the widest column first; one column at a time, never below its
// floor (its header's width, at least 3 columns). A table whose floors
// alone are too wide gives up its headers' widths too, down to 3 columns.
func fitWidths(natural, floor []int, width int, over overflow) []int {
	n := len(natural)
	w := append([]int(nil), natural...)
	total := func() int {
		t := 0
		for _, x := range w {
			t += x + 2
		}
		return t
	}
	if over == cutCells {
		for last := n - 1; total() > width && w[last] > floor[last]; {
			w[last]--
		}
	}
	shrinkWidest := func(floor func(i int) int) {
		for total() > width {
			widest := -1
			for i := range w {
				if w[i] > floor(i) && (widest < 0 || w[i] > w[widest]) {
					widest = i
				}
			}
			if widest < 0 {
				return
			}
			w[widest]--
		}
	}
	shrinkWidest(func(i int) int { return floor[i] })
	shrinkWidest(func(i int) int { return min(3, natural[i]) })
	return w
}

// A token of a cell: a rune with its width, or one of lockctl's SGR
// sequences (width 0).
type token struct {
	s   string
	w   int
	sgr bool
}

func tokens(s string) []token {
	var ts []token
	for i := 0; i < len(s); {
		if n := sgrLen(s[i:]); n > 0 {
			ts = append(ts, token{s: s[i : i+n], sgr: true})
			i += n
			continue
		}
		_, size := utf8.DecodeRuneInString(s[i:])
		r := s[i : i+size]
		ts = append(ts, token{s: r, w: cellWidth(r)})
		i += size
	}
	return ts
}

// styleAfter is the SGR sequences in force after ts, starting from open.
func styleAfter(open []string, ts []token) []string {
	for _, t := range ts {
		if !t.sgr {
			continue
		}
		if t.s == "\x1b[0m" || t.s == "\x1b[m" {
			open = nil
		} else {
			open = append(open[:len(open):len(open)], t.s)
		}
	}
	return open
}

const sgrReset = "\x1b[0m"

// cutCell cuts c to at most w columns, ending in "…"; a style in force
// where it is cut is reset after the ellipsis.
func cutCell(c string, w int) string {
	ell := cellWidth("…")
	var b strings.Builder
	used := 0
	ts := tokens(c)
	end := len(ts)
	for i, t := range ts {
		if t.sgr {
			continue
		}
		if used+t.w > w-ell {
			end = i
			break
		}
		used += t.w
	}
	for _, t := range ts[:end] {
		b.WriteString(t.s)
	}
	b.WriteString("…")
	if len(styleAfter(nil, ts[:end])) > 0 {
		b.WriteString(sgrReset)
	}
	return b.String()
}

// wrapCell splits c into lines of at most w columns, at a space where one
// falls in the second half of the line, else mid-word. A style in force at
// a break is reset at the end of the line and taken up again on the next,
// so that it colours the text it was meant for and nothing else.
func wrapCell(c string, w int) []string {
	ts := tokens(c)
	var lines []string
	var open []string
	for {
		used, end, space := 0, len(ts), -1
		for i, t := range ts {
			if t.sgr {
				continue
			}
			if used+t.w > w {
				end = i
				break
			}
			if t.s == " " {
				space = i
			}
			used += t.w
		}
		cut := end
		if end < len(ts) && space > end/2 {
			cut = space
		}
		if cut == 0 && end < len(ts) {
			cut = 1 // a character wider than the column: on a line of its own
		}
		line := ts[:cut]
		for len(line) > 0 && line[len(line)-1].s == " " {
			line = line[:len(line)-1]
		}
		var b strings.Builder
		b.WriteString(strings.Join(open, ""))
		for _, t := range line {
			b.WriteString(t.s)
		}
		open = styleAfter(open, ts[:cut])
		if cut == len(ts) {
			return append(lines, b.String())
		}
		if len(open) > 0 {
			b.WriteString(sgrReset)
		}
		lines = append(lines, b.String())
		ts = ts[cut:]
		for len(ts) > 0 && (ts[0].s == " " || ts[0].sgr) {
			if ts[0].sgr {
				open = styleAfter(open, ts[:1])
			}
			ts = ts[1:]
		}
		if len(ts) == 0 {
			return lines
		}
	}
}
