package ui_test

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/lockctl/lockctl/cmd/ui"
)

// A table that fits is the borderless table lockctl always printed: a header
// row, every column padded to its width with one space either side.
func TestTableLook(t *testing.T) {
	io, _, out, _ := ui.Test()
	io.SetTTY(false, true, true)
	io.DecideColor("never", func(string) string { return "" })
	err := io.PrintTable(ui.Table{Header: []string{"NAME", "OWNER", "PID"}, Rows: [][]string{
		{"deploy", "ci@h:1", "42"}, {"a", "日本語"}, {" lead", "trail ", ""},
	}, Fit: true})
	if err != nil {
		t.Fatal(err)
	}
	want := " NAME    OWNER   PID \n" +
		" deploy  ci@h:1  42  \n" +
		" a       日本語      \n" +
		" lead    trail       \n"
	if out.String() != want {
		t.Fatalf("got\n%q\nwant\n%q", out.String(), want)
	}
}

var sgrRE = regexp.MustCompile("\x1b\\[[0-9;]*m")

// displayWidth measures a line as a terminal shows it: colour sequences
// take no room, East Asian wide characters two columns.
func displayWidth(line string) int {
	return lipgloss.Width(sgrRE.ReplaceAllString(line, ""))
}

func checkFits(t *testing.T, s string, width int) {
	t.Helper()
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		if w := displayWidth(line); w > width {
			t.Errorf("line of %d columns, wider than %d:\n%q", w, width, line)
		}
	}
}

// words returns the words of s with its colour sequences taken out.
func words(s string) []string { return strings.Fields(sgrRE.ReplaceAllString(s, "")) }

// Every table fits the width it is given (the terminal's, $COLUMNS, 80):
// a listing cuts long cells with "…" and keeps a row a line; a table
// without Fit (doctor, a detail view, -o wide) wraps them, every word kept.
func TestTableFitsWidth(t *testing.T) {
	note := "release 2026.12.1 of the web tier, rolling restart of every frontend pod in eu-west-1 and then some"
	rows := [][]string{
		{"deploy-prod", "runner@fv-az123-456-a-very-long-runner-host-name:2231", "2231", note},
		{"order:payment:reconcile-eu-west-1", "alice@ops-bastion-1:4242", "4242", "日本語のメモ、とても長いメモです。日本語のメモ、とても長いメモです。"},
		{"x", strings.Repeat("y", 90), "1", ""},
	}
	header := []string{"NAME", "OWNER", "PID", "NOTE"}
	for _, width := range []int{40, 80, 120} {
		for _, fit := range []bool{true, false} {
			io, _, out, _ := ui.Test()
			io.SetTTY(false, true, true)
			io.SetWidth(width, 0)
			io.DecideColor("always", func(string) string { return "" })
			if err := io.PrintTable(ui.Table{Header: header, Rows: rows, MaxCellWidth: ui.DataCellWidth, Fit: fit}); err != nil {
				t.Fatal(err)
			}
			s := out.String()
			checkFits(t, s, width)
			if !strings.Contains(s, "NAME") || !containsSplit(s, "deploy-prod") {
				t.Errorf("width %d fit %v: header or name missing:\n%s", width, fit, s)
			}
			if fit {
				if n := strings.Count(s, "\n"); n != 4 {
					t.Errorf("width %d: %d lines, want a line a row:\n%s", width, n, s)
				}
				if !strings.Contains(s, "…") {
					t.Errorf("width %d: nothing cut:\n%s", width, s)
				}
				continue
			}
			// Wrapped: every word of every cell is there, whole or
			// broken across lines of its column.
			joined := strings.Join(words(s), "")
			for _, r := range rows {
				for _, c := range r {
					for _, w := range strings.Fields(c) {
						if !strings.Contains(joined, strings.ReplaceAll(w, " ", "")) && !containsSplit(s, w) {
							t.Errorf("width %d: %q lost:\n%s", width, w, s)
						}
					}
				}
			}
		}
	}
}

// containsSplit reports whether w appears in s read column-wise: its parts
// on consecutive lines, each part where the previous ended.
func containsSplit(s, w string) bool {
	lines := strings.Split(s, "\n")
	for i := range lines {
		rest := w
		for j := i; j < len(lines) && rest != ""; j++ {
			found := false
			for k := len(rest); k > 0; k-- {
				if strings.Contains(lines[j], rest[:k]) {
					rest, found = rest[k:], true
					break
				}
			}
			if !found {
				break
			}
		}
		if rest == "" {
			return true
		}
	}
	return false
}

// doctor's verdict carries a faint hint; wrapped, each line of it is
// faint on its own and reset at its end, so the style never bleeds into
// the padding or the next row.
func TestTableWrapKeepsStyle(t *testing.T) {
	io, _, out, _ := ui.Test()
	io.SetTTY(false, true, true)
	io.SetWidth(60, 0)
	io.DecideColor("always", func(string) string { return "" })
	verdict := "none: a restart drops every lock and resets fence counters" + io.Faint(" → CONFIG SET appendonly yes, and appendfsync always, then CONFIG REWRITE to keep it")
	if err := io.PrintTable(ui.Table{Header: []string{"STATUS", "CHECK", "VERDICT"}, Rows: [][]string{{io.Fail("fail"), "persistence", verdict}}}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	checkFits(t, s, 60)
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if len(lines) < 4 {
		t.Fatalf("verdict not wrapped:\n%s", s)
	}
	faint, _, _ := strings.Cut(io.Faint("x"), "x")
	sawFaint := false
	for _, line := range lines[1:] {
		if i := strings.Index(line, faint); i >= 0 {
			sawFaint = true
			if !strings.Contains(line[i:], "\x1b[0m") {
				t.Errorf("faint line not reset: %q", line)
			}
		}
	}
	if !sawFaint || !strings.Contains(strings.Join(words(s), " "), "CONFIG REWRITE to keep it") {
		t.Errorf("hint lost:\n%q", s)
	}
	if !strings.Contains(lines[len(lines)-1], faint) {
		t.Errorf("the hint's last line lost its style: %q", lines[len(lines)-1])
	}
}

// The width tables fit: the terminal's; else $COLUMNS (watch(1) sets it
// for a command whose output is a pipe); else 80.
func TestTableWidth(t *testing.T) {
	io, _, out, _ := ui.Test()
	for _, tc := range []struct{ term, columns, want int }{{0, 0, 80}, {0, 120, 120}, {100, 120, 100}, {100, 0, 100}} {
		io.SetWidth(tc.term, tc.columns)
		if got := io.TableWidth(); got != tc.want {
			t.Errorf("terminal %d, COLUMNS %d: width %d, want %d", tc.term, tc.columns, got, tc.want)
		}
	}
	// -o table in a pipe: no terminal, no $COLUMNS: 80.
	io.SetWidth(0, 0)
	io.SetTableOutput(true, nil)
	long := strings.Repeat("word ", 60)
	if err := io.PrintTable(ui.Table{Header: []string{"A", "B"}, Rows: [][]string{{"a", long}}}); err != nil {
		t.Fatal(err)
	}
	checkFits(t, out.String(), 80)
	if strings.Count(strings.Join(words(out.String()), " "), "word") != 60 {
		t.Errorf("words lost:\n%s", out.String())
	}
}

// top's screen: every line within the terminal at any width, the columns
// under their titles, rows past the height summarised.
func TestRenderTopFits(t *testing.T) {
	io, _, _, _ := ui.Test()
	io.DecideColor("always", func(string) string { return "" })
	long := "order:payment:reconcile-eu-west-1-nightly-ledger-" + strings.Repeat("x", 80)
	var locks []ui.TopLock
	for i := range 30 {
		locks = append(locks, ui.TopLock{Name: long, Holder: "runner@fv-az123-456-very-long-build-host-name.example.com:2231",
			Mode: "exclusive", Age: time.Duration(i) * time.Second, TTL: 20 * time.Second, LeaseTTL: 30 * time.Second, Waiters: 3,
			Waits: []time.Duration{time.Second, 2 * time.Second}})
	}
	for _, width := range []int{20, 40, 80, 120, 200} {
		screen := io.RenderTop(ui.TopView{Title: "lock:*", Locks: locks, Refresh: 7}, width, 24)
		lines := strings.Split(strings.TrimSuffix(screen, "\r\n"), "\r\n")
		checkFits(t, strings.Join(lines, "\n"), width)
		if len(lines) != 23 {
			t.Errorf("width %d: %d lines on a 24-line screen", width, len(lines))
		}
		if !strings.Contains(lines[1], "NA") || !strings.HasPrefix(sgrRE.ReplaceAllString(lines[2], ""), "or") ||
			!strings.Contains(lines[len(lines)-1], "… 10 more") {
			t.Errorf("width %d:\n%s", width, strings.Join(lines, "\n"))
		}
		if width == 80 && !regexp.MustCompile(`NAME +HOLDER +AGE +MODE +TTL +WAITERS +QUEUE`).MatchString(lines[1]) {
			t.Errorf("80 columns lost a column: %q", lines[1])
		}
	}
}

// An -o wide listing (Records) keeps every value whole: on a terminal
// too narrow for its columns, a block of NAME value lines per row, each
// value on the line of its name; where the columns fit, the table.
func TestRecordsWhereColumnsDoNotFit(t *testing.T) {
	header := []string{"NAME", "OWNER", "KEY", "TOKEN", "MODE"}
	rows := [][]string{
		{"deploy-production-eu-west-1", "runner@build-host-7:2231", "lock:deploy-production-eu-west-1", "f6ec1fde8b5e", "exclusive"},
		{"nightly", "cron@db-1:99", "lock:nightly", "544640f3c039", "shared"},
	}
	for _, width := range []int{40, 80, 200} {
		io, _, out, _ := ui.Test()
		io.SetTTY(false, true, true)
		io.SetWidth(width, 0)
		if err := io.PrintTable(ui.Table{Header: header, Rows: rows, MaxCellWidth: ui.DataCellWidth, Records: true}); err != nil {
			t.Fatal(err)
		}
		s := out.String()
		checkFits(t, s, width)
		if width == 200 {
			if !regexp.MustCompile(`(?m)^ NAME +OWNER +KEY +TOKEN +MODE`).MatchString(s) || strings.Count(s, "\n") != 3 {
				t.Errorf("width %d: not one table, a line a row:\n%s", width, s)
			}
			continue
		}
		for _, r := range rows {
			for i, c := range r {
				if width == 40 {
					// Narrower than a value and its name: wrapped
					// under the values, whole.
					if !containsSplit(s, c) {
						t.Errorf("width %d: %q lost:\n%s", width, c, s)
					}
					continue
				}
				if !regexp.MustCompile(`(?m)^ ` + header[i] + ` +` + regexp.QuoteMeta(c) + ` *$`).MatchString(s) {
					t.Errorf("width %d: no line %q %q:\n%s", width, header[i], c, s)
				}
			}
		}
		if n := strings.Count(s, "\n\n"); n != len(rows)-1 {
			t.Errorf("width %d: %d empty lines between %d blocks:\n%s", width, n, len(rows), s)
		}
	}
}
