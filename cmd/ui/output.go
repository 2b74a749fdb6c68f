package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"

	"github.com/charmbracelet/lipgloss"
)

// Table is data in rows under a header; one pure shape that every text
// printer renders.
type Table struct {
	Header []string
	Rows   [][]string
	// MaxCellWidth, when set, cuts longer cells of the terminal table with
	// an ellipsis (DataCellWidth for data from Redis). The tab-separated
	// form always has every cell whole.
	MaxCellWidth int
	// Fit keeps each row of the terminal table one line: a cell wider than
	// its column's share of the terminal is cut with an ellipsis (a
	// listing, read down its columns). Without it such a cell wraps onto
	// further lines of its row, whole (a verdict, a detail view, -o wide).
	// Either way no line is wider than the terminal (TableWidth).
	Fit bool
	// Records, without Fit (an -o wide listing, whose values stay whole):
	// where the rows whole are wider than the terminal, each row is a block
	// of lines instead, a column's name and then its value, wrapped under
	// the values, the blocks parted by an empty line, rather than columns
	// too narrow for their words.
	Records bool
}

// PrintTable renders t: a styled table on a terminal (or with -o table),
// header-less tab-separated rows otherwise (for cut, awk and while-read
// loops; --headers adds the header row, --no-headers drops it from the
// table). Either
// way no cell can reach the terminal as a control sequence or break its row:
// cells pass through Escape (on a terminal, lockctl's own colours are kept).
func (s *IOStreams) PrintTable(t Table) error {
	if !s.Tabular() {
		if err := s.WriteTSVHeader(t.Header); err != nil {
			return err
		}
		return WriteTSV(s.Out, t.Rows)
	}
	var header []string
	if s.headers == nil || *s.headers {
		header = make([]string, len(t.Header))
		for i, h := range t.Header {
			header[i] = s.Bold(escapeStyled(h))
		}
	}
	cells := make([][]string, len(t.Rows))
	for j, r := range t.Rows {
		row := make([]string, len(r))
		for i, c := range r {
			c = escapeStyled(c)
			if t.MaxCellWidth > 0 && cellWidth(c) > t.MaxCellWidth {
				c = cutCell(c, t.MaxCellWidth)
			}
			row[i] = c
		}
		cells[j] = row
	}
	over := wrapCells
	if t.Fit {
		over = cutCells
	}
	var b bytes.Buffer
	if t.Records && !t.Fit && naturalWidth(t.Header, cells) > s.TableWidth() {
		if err := s.writeRecords(&b, t.Header, cells); err != nil {
			return err
		}
		return s.writeOut(b.Bytes())
	}
	if err := writeTable(&b, header, cells, s.TableWidth(), over); err != nil {
		return err
	}
	return s.writeOut(b.Bytes())
}

// writeRecords writes each row of cells as a block of NAME value lines,
// the names from header in bold, a value too long for the terminal
// wrapped under the values; an empty line parts the blocks.
func (s *IOStreams) writeRecords(b *bytes.Buffer, header []string, cells [][]string) error {
	names := make([]string, len(header))
	for i, h := range header {
		names[i] = s.Bold(escapeStyled(h))
	}
	for j, r := range cells {
		if j > 0 {
			b.WriteString("\n")
		}
		pairs := make([][]string, len(r))
		for i, c := range r {
			name := ""
			if i < len(names) {
				name = names[i]
			}
			pairs[i] = []string{name, c}
		}
		if err := writeTable(b, nil, pairs, s.TableWidth(), wrapCells); err != nil {
			return err
		}
	}
	return nil
}

// PrintDetail renders FIELD/VALUE rows of one object (inspect lock): on a
// terminal, the fields in a column and each value after them, a long value
// wrapped onto lines of its own under the value column so that nothing
// runs past the terminal's width and nothing is cut; off a terminal,
// tab-separated rows as PrintTable writes them.
func (s *IOStreams) PrintDetail(header []string, rows [][]string) error {
	return s.PrintTable(Table{Header: header, Rows: rows})
}

// WriteTSV writes rows as tab-separated lines. Cells pass through Escape, so
// a tab or newline inside one shows as \t or \n and every row stays one line
// of exactly its columns.
func WriteTSV(w io.Writer, rows [][]string) error {
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = Escape(c)
		}
		if _, err := fmt.Fprintln(w, strings.Join(cells, "\t")); err != nil {
			return err
		}
	}
	return nil
}

// PrintJSON writes v as indented JSON followed by a newline.
func (s *IOStreams) PrintJSON(v any) error {
	var buf bytes.Buffer
	if err := WriteJSON(&buf, v); err != nil {
		return err
	}
	return s.writeOut(buf.Bytes())
}

// PrintLine writes line and a newline to stdout, in one write.
func (s *IOStreams) PrintLine(line string) error {
	return s.writeOut([]byte(line + "\n"))
}

// writeOut writes b to stdout whole, or returns a *WriteError.
func (s *IOStreams) writeOut(b []byte) error {
	n, err := s.Out.Write(b)
	if err == nil && n < len(b) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return &WriteError{Err: err}
	}
	return nil
}

// RequireOut refuses, with a *WriteError, to go on with a command whose
// output is its result (the token of `lock`) when stdout was closed at
// start: nobody would get it.
func (s *IOStreams) RequireOut() error {
	if s.stdoutClosed {
		return &WriteError{Err: ErrStdoutClosed}
	}
	return nil
}

// WriteJSON writes v as indented JSON, without HTML escaping. Strings keep
// their exact value; the characters a terminal would obey are \u-escaped
// (encoding/json does C0 controls; jsonSafe the rest).
func WriteJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(jsonSafe(buf.Bytes()))
	return err
}

// PrintEnv writes NAME='value' lines, shell-quoted so that `eval` is safe,
// sorted by name, in one write: a reader never gets some of the lines.
func (s *IOStreams) PrintEnv(vars map[string]string) error {
	names := make([]string, 0, len(vars))
	for k := range vars {
		names = append(names, k)
	}
	sort.Strings(names)
	var b strings.Builder
	for _, k := range names {
		fmt.Fprintf(&b, "%s=%s\n", k, ShellQuote(vars[k]))
	}
	return s.writeOut([]byte(b.String()))
}

// PrintEnvRefusal writes, in place of PrintEnv's lines, a statement that
// stops the shell evaluating them with status code: exit leaves a script (or
// the subshell it runs in) even inside a function and without set -e, where
// a bare `false` would let the next line run without the lock.
// quiet (-q, -E 0) leaves out the message: the shell stops silently.
func (s *IOStreams) PrintEnvRefusal(code int, quiet bool) {
	if quiet {
		fmt.Fprintf(s.Out, "exit %d\n", code)
		return
	}
	msg := ShellQuote(fmt.Sprintf("lockctl: lock not acquired; stopping this shell (exit %d)", code))
	fmt.Fprintf(s.Out, "echo %s >&2; exit %d\n", msg, code)
}

// ShellQuote quotes v for POSIX shells.
func ShellQuote(v string) string {
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// Styles: used only when colour is enabled, and built on first use (as
// package variables they would cost every lockctl start).
var (
	boldStyle  = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Bold(true) })
	faintStyle = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Faint(true) })
	okStyle    = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color("2")) })
	warnStyle  = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color("3")) })
	failStyle  = sync.OnceValue(func() lipgloss.Style { return lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true) })
)

func (s *IOStreams) style(st lipgloss.Style, v string) string {
	if !s.color {
		return v
	}
	return st.Render(v)
}

// Bold renders v in bold when colour is on, else returns it as is.
func (s *IOStreams) Bold(v string) string { return s.style(boldStyle(), v) }

// Faint renders v faint when colour is on, else returns it as is.
func (s *IOStreams) Faint(v string) string { return s.style(faintStyle(), v) }

// OK renders v in green when colour is on, else returns it as is.
func (s *IOStreams) OK(v string) string { return s.style(okStyle(), v) }

// Warn renders v in yellow when colour is on, else returns it as is.
func (s *IOStreams) Warn(v string) string { return s.style(warnStyle(), v) }

// Fail renders v in bold red when colour is on, else returns it as is.
func (s *IOStreams) Fail(v string) string { return s.style(failStyle(), v) }

// JSONArray writes a JSON array element by element, so that long listings
// stream without being held in memory. One encoder and its buffers serve
// every element: a listing adds one per lock.
type JSONArray struct {
	w   io.Writer
	n   int
	err error
	buf bytes.Buffer
	enc *json.Encoder
	out []byte
}

// NewJSONArray starts an array on w; nothing is written until Add or Close.
func NewJSONArray(w io.Writer) *JSONArray {
	a := &JSONArray{w: w}
	a.enc = json.NewEncoder(&a.buf)
	a.enc.SetEscapeHTML(false)
	a.enc.SetIndent("  ", "  ")
	return a
}

// Add writes one element, in one write.
func (a *JSONArray) Add(v any) error {
	if a.err != nil {
		return a.err
	}
	a.buf.Reset()
	if err := a.enc.Encode(v); err != nil {
		return err
	}
	b := bytes.TrimSuffix(jsonSafe(a.buf.Bytes()), []byte("\n"))
	sep := ",\n  "
	if a.n == 0 {
		sep = "[\n  "
	}
	a.n++
	a.out = append(append(a.out[:0], sep...), b...)
	_, a.err = a.w.Write(a.out)
	return a.err
}

// Close ends the array ("[]" when empty).
func (a *JSONArray) Close() error {
	if a.err != nil {
		return a.err
	}
	if a.n == 0 {
		_, a.err = fmt.Fprintln(a.w, "[]")
	} else {
		_, a.err = fmt.Fprint(a.w, "\n]\n")
	}
	return a.err
}
