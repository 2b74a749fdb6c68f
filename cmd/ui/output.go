package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
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
	opts := []tablewriter.Option{
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoFormat(tw.Off),
	}
	tbl := tablewriter.NewTable(s.Out, opts...)
	header := make([]any, len(t.Header))
	for i, h := range t.Header {
		header[i] = s.Bold(h)
	}
	if s.headers == nil || *s.headers {
		tbl.Header(header...)
	}
	for _, r := range t.Rows {
		row := make([]any, len(r))
		for i, c := range r {
			c = escapeStyled(c)
			if t.MaxCellWidth > 0 && !strings.Contains(c, "\x1b") {
				c = Truncate(c, t.MaxCellWidth)
			}
			row[i] = c
		}
		if err := tbl.Append(row...); err != nil {
			return err
		}
	}
	return tbl.Render()
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
	return WriteJSON(s.Out, v)
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
	_, err := io.WriteString(s.Out, b.String())
	return err
}

// PrintEnvRefusal writes, in place of PrintEnv's lines, a statement that
// stops the shell evaluating them with status code: exit leaves a script (or
// the subshell it runs in) even inside a function and without set -e, where
// a bare `false` would let the next line run without the lock.
func (s *IOStreams) PrintEnvRefusal(code int) {
	msg := ShellQuote(fmt.Sprintf("lockctl: lock not acquired; stopping this shell (exit %d)", code))
	fmt.Fprintf(s.Out, "echo %s >&2; exit %d\n", msg, code)
}

// ShellQuote quotes v for POSIX shells.
func ShellQuote(v string) string {
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}

// Styles: used only when colour is enabled.
var (
	boldStyle  = lipgloss.NewStyle().Bold(true)
	faintStyle = lipgloss.NewStyle().Faint(true)
	okStyle    = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	warnStyle  = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
	failStyle  = lipgloss.NewStyle().Foreground(lipgloss.Color("1")).Bold(true)
)

func (s *IOStreams) style(st lipgloss.Style, v string) string {
	if !s.color {
		return v
	}
	return st.Render(v)
}

func (s *IOStreams) Bold(v string) string  { return s.style(boldStyle, v) }
func (s *IOStreams) Faint(v string) string { return s.style(faintStyle, v) }
func (s *IOStreams) OK(v string) string    { return s.style(okStyle, v) }
func (s *IOStreams) Warn(v string) string  { return s.style(warnStyle, v) }
func (s *IOStreams) Fail(v string) string  { return s.style(failStyle, v) }

// Errorf writes one diagnostic line to stderr, prefixed "lockctl: ". The
// line passes through Escape: diagnostics quote lock names, holders' owners
// and server replies, and none of them may drive the terminal or forge a
// second line.
func (s *IOStreams) Errorf(format string, args ...any) {
	fmt.Fprintf(s.ErrOut, "lockctl: %s\n", Escape(fmt.Sprintf(format, args...)))
}

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
