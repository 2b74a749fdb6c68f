// Package ui is lockctl's presentation layer: terminal detection, colour,
// tables, JSON and shell-env output. Every lipgloss and tablewriter call of
// the program lives in this package.
package ui

import (
	"bytes"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/muesli/termenv"
	"golang.org/x/term"
)

// IOStreams are the program's standard streams plus the terminal facts that
// decide how output looks. They are decided once, at start-up.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	stdinTTY  bool
	stdoutTTY bool
	stderrTTY bool
	color     bool
	width     int
	// columns is $COLUMNS, the width for a table whose terminal is
	// unknown (watch(1) sets it for the command it runs in a pipe).
	columns int

	// forceTable (-o table) prints the human table off a terminal too;
	// headers (--headers / --no-headers) overrides whether text listings
	// carry their header row: nil is the default (on a table, off rows).
	forceTable bool
	headers    *bool

	// log writes every diagnostic (log.go).
	log logger

	// stdoutClosed: stdout was closed when lockctl started (see
	// closedAtStart); output written there would reach nobody.
	stdoutClosed bool
}

// System returns streams bound to the process's stdin, stdout and stderr.
func System() *IOStreams {
	s := &IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	s.stdinTTY = term.IsTerminal(int(os.Stdin.Fd()))
	s.stdoutTTY = term.IsTerminal(int(os.Stdout.Fd()))
	s.stderrTTY = term.IsTerminal(int(os.Stderr.Fd()))
	if s.stdoutTTY {
		if w, _, err := term.GetSize(int(os.Stdout.Fd())); err == nil {
			s.width = w
		}
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		s.columns = n
	}
	s.color = s.stdoutTTY && os.Getenv("NO_COLOR") == ""
	s.stdoutClosed = closedAtStart(1)
	return s
}

// Test returns streams backed by buffers; no stream is a terminal.
func Test() (s *IOStreams, in, out, errOut *bytes.Buffer) {
	in, out, errOut = &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

// SetStdoutClosed overrides the detection of a stdout closed at start
// (tests).
func (s *IOStreams) SetStdoutClosed(closed bool) { s.stdoutClosed = closed }

// SetTTY overrides terminal detection (tests, and `--color always` does not use it).
func (s *IOStreams) SetTTY(stdin, stdout, stderr bool) {
	s.stdinTTY, s.stdoutTTY, s.stderrTTY = stdin, stdout, stderr
}

// SetTableOutput applies -o table (forceTable) and --headers/--no-headers
// (headers, nil when neither was given).
func (s *IOStreams) SetTableOutput(forceTable bool, headers *bool) {
	s.forceTable, s.headers = forceTable, headers
}

// Tabular reports whether text listings print the human table (a terminal,
// or -o table) rather than tab-separated rows.
func (s *IOStreams) Tabular() bool { return s.stdoutTTY || s.forceTable }

// WriteTSVHeader writes header as the first row of tab-separated output
// when --headers asked for one; listings that stream rows call it first.
func (s *IOStreams) WriteTSVHeader(header []string) error {
	if s.headers == nil || !*s.headers {
		return nil
	}
	return WriteTSV(s.Out, [][]string{header})
}

// IsStdinTTY reports whether stdin is a terminal.
func (s *IOStreams) IsStdinTTY() bool { return s.stdinTTY }

// IsStdoutTTY reports whether stdout is a terminal.
func (s *IOStreams) IsStdoutTTY() bool { return s.stdoutTTY }

// IsStderrTTY reports whether stderr is a terminal.
func (s *IOStreams) IsStderrTTY() bool { return s.stderrTTY }

// ColorEnabled reports whether output is coloured (DecideColor sets it).
func (s *IOStreams) ColorEnabled() bool {
	return s.color
}

// DecideColor applies --color and the NO_COLOR / CLICOLOR / CLICOLOR_FORCE
// conventions; in auto mode TERM=dumb (Emacs shells, some CI logs) gets no
// colour either. when is "auto", "always" or "never"; getenv is os.Getenv in
// production.
func (s *IOStreams) DecideColor(when string, getenv func(string) string) {
	switch when {
	case "always":
		s.color = true
	case "never":
		s.color = false
	default:
		switch {
		case getenv("NO_COLOR") != "":
			s.color = false
		case getenv("CLICOLOR_FORCE") != "" && getenv("CLICOLOR_FORCE") != "0":
			s.color = true
		case getenv("CLICOLOR") == "0", getenv("TERM") == "dumb":
			s.color = false
		default:
			s.color = s.stdoutTTY
		}
	}
	if s.color {
		// lipgloss inspects the process's stdout on its own; a forced
		// colour must also reach it when stdout is a pipe.
		lipgloss.SetColorProfile(termenv.ANSI256)
	} else {
		lipgloss.SetColorProfile(termenv.Ascii)
	}
}

// ValidColor reports whether when is a --color value.
func ValidColor(when string) bool {
	switch strings.ToLower(when) {
	case "auto", "always", "never":
		return true
	}
	return false
}

// Width is the terminal width, or 0 when stdout is not a terminal.
func (s *IOStreams) Width() int { return s.width }

// SetWidth overrides the terminal's width (tests) and $COLUMNS (0: unset).
func (s *IOStreams) SetWidth(terminal, columns int) { s.width, s.columns = terminal, columns }

// TableWidth is the width tables fit: the terminal's, else $COLUMNS, else
// 80 (-o table in a pipe, a terminal that does not tell its size).
func (s *IOStreams) TableWidth() int {
	switch {
	case s.width > 0:
		return s.width
	case s.columns > 0:
		return s.columns
	}
	return 80
}
