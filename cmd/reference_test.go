package cmd_test

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/internal/testkit/docpages"
)

// TestReadmeReferenceTables holds the documentation's exit code,
// environment and files tables (on whichever page of docpages.Pages holds
// each heading) to the Go tables the man pages are generated from, and the
// environment table to the variables the commands read.
func TestReadmeReferenceTables(t *testing.T) {
	pages, err := docpages.Pages("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		heading string
		rows    []cmd.RefRow
	}{
		{"## Exit codes", cmd.ExitStatusTable},
		{"### Environment", cmd.EnvironmentTable},
		{"### Files", cmd.FilesTable},
	} {
		page, err := docpages.WithHeading(pages, tc.heading)
		if err != nil {
			t.Fatal(err)
		}
		got, line := readmeTable(t, page, tc.heading)
		for i := 0; i < max(len(got), len(tc.rows)); i++ {
			switch {
			case i >= len(got):
				t.Errorf("%s %q: row %q missing (cmd/reference.go has it)", page.Path, tc.heading, tc.rows[i].Key)
			case i >= len(tc.rows):
				t.Errorf("%s:%d %q: row %q is not in cmd/reference.go", page.Path, line+i, tc.heading, got[i].Key)
			case got[i] != tc.rows[i]:
				t.Errorf("%s:%d %q row %d differs from cmd/reference.go:\n   page: | %s | %s |\n     Go: | %s | %s |",
					page.Path, line+i, tc.heading, i+1, got[i].Key, got[i].Meaning, tc.rows[i].Key, tc.rows[i].Meaning)
			}
		}
	}

	// Every LOCKCTL_* variable a command reads is in the environment table.
	var envText strings.Builder
	for _, r := range cmd.EnvironmentTable {
		envText.WriteString(r.Key + " " + r.Meaning + "\n")
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	name := regexp.MustCompile(`"(LOCKCTL_[A-Z0-9_]+)"`)
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range name.FindAllStringSubmatch(string(src), -1) {
			if !strings.Contains(envText.String(), "`"+m[1]+"`") {
				t.Errorf("cmd/%s reads %s, which cmd/reference.go's EnvironmentTable (and so the reference page and the man pages) does not list", f, m[1])
			}
		}
	}
}

// readmeTable returns the rows of the first Markdown table after heading
// on page, and the page's line of its first row.
func readmeTable(t *testing.T, page docpages.Page, heading string) ([]cmd.RefRow, int) {
	t.Helper()
	lines := strings.Split(page.Text, "\n")
	start := -1
	for i, l := range lines {
		if l == heading {
			start = i
			break
		}
	}
	if start < 0 {
		t.Fatalf("%s has no %q section", page.Path, heading)
	}
	var rows []cmd.RefRow
	first := 0
	for i := start + 1; i < len(lines); i++ {
		l := lines[i]
		if strings.HasPrefix(l, "#") {
			break
		}
		if !strings.HasPrefix(l, "|") {
			if rows != nil || first > 0 {
				break
			}
			continue
		}
		if first == 0 {
			first = i + 3 // the header and the separator row come first; lines count from 1
			continue
		}
		if strings.HasPrefix(l, "|---") || strings.HasPrefix(l, "| ---") {
			continue
		}
		cells := splitRow(l)
		if len(cells) != 2 {
			t.Fatalf("%s:%d: %q row has %d cells, want 2", page.Path, i+1, heading, len(cells))
		}
		rows = append(rows, cmd.RefRow{Key: cells[0], Meaning: cells[1]})
	}
	if len(rows) == 0 {
		t.Fatalf("%s %q: no table", page.Path, heading)
	}
	return rows, first
}

// splitRow splits a Markdown table row at its unescaped pipes.
func splitRow(l string) []string {
	l = strings.TrimSpace(l)
	l = strings.TrimPrefix(strings.TrimSuffix(l, "|"), "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(l); i++ {
		if l[i] == '\\' && i+1 < len(l) && l[i+1] == '|' {
			cur.WriteByte('|')
			i++
			continue
		}
		if l[i] == '|' {
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
			continue
		}
		cur.WriteByte(l[i])
	}
	return append(cells, strings.TrimSpace(cur.String()))
}

// TestManPagesHaveReferenceSections: every committed page carries EXIT
// STATUS, ENVIRONMENT and FILES with every row of the tables, as flock(1)
// does.
func TestManPagesHaveReferenceSections(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join("..", "man", "*.1"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no man pages: %v", err)
	}
	for _, p := range pages {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		page := string(b)
		for _, sec := range []string{".SH EXIT STATUS\n", ".SH ENVIRONMENT\n", ".SH FILES\n"} {
			if !strings.Contains(page, sec) {
				t.Errorf("%s has no %s section: run `make man`", filepath.Base(p), strings.TrimSpace(sec))
			}
		}
		for _, want := range []string{".TP\n75\n", ".TP\n129 / 130 / 143 / 131\n", `\fBLOCKCTL_URL\fP`, `\fB/etc/lockctl/config.yaml\fP`} {
			if !strings.Contains(page, want) {
				t.Errorf("%s lacks %q", filepath.Base(p), want)
			}
		}
	}
}
