package ui

import (
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
}

// PrintTable renders t: a styled table on a terminal, header-less
// tab-separated rows otherwise (for cut, awk and while-read loops).
func (s *IOStreams) PrintTable(t Table) error {
	if !s.stdoutTTY {
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
	tbl.Header(header...)
	for _, r := range t.Rows {
		row := make([]any, len(r))
		for i, c := range r {
			row[i] = c
		}
		if err := tbl.Append(row...); err != nil {
			return err
		}
	}
	return tbl.Render()
}

// WriteTSV writes rows as tab-separated lines; tabs and newlines inside a
// cell become spaces so that every row stays one line.
func WriteTSV(w io.Writer, rows [][]string) error {
	clean := strings.NewReplacer("\t", " ", "\n", " ", "\r", " ")
	for _, r := range rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = clean.Replace(c)
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

// WriteJSON writes v as indented JSON, without HTML escaping.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
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

// Errorf writes one diagnostic line to stderr, prefixed "lockctl: ".
func (s *IOStreams) Errorf(format string, args ...any) {
	fmt.Fprintf(s.ErrOut, "lockctl: "+format+"\n", args...)
}

// JSONArray writes a JSON array element by element, so that long listings
// stream without being held in memory.
type JSONArray struct {
	w   io.Writer
	n   int
	err error
}

// NewJSONArray starts an array on w; nothing is written until Add or Close.
func NewJSONArray(w io.Writer) *JSONArray { return &JSONArray{w: w} }

// Add writes one element.
func (a *JSONArray) Add(v any) error {
	if a.err != nil {
		return a.err
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("  ", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	b := strings.TrimSuffix(buf.String(), "\n")
	sep := ",\n  "
	if a.n == 0 {
		sep = "[\n  "
	}
	a.n++
	_, a.err = fmt.Fprintf(a.w, "%s%s", sep, b)
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
