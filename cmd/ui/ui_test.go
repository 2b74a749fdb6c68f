package ui_test

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/cmd/ui"
)

func TestTableOffTTYIsTSV(t *testing.T) {
	io, _, out, _ := ui.Test()
	err := io.PrintTable(ui.Table{Header: []string{"NAME", "OWNER"}, Rows: [][]string{{"a", "x\ty"}, {"b c", "z\nw"}}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := out.String(), "a\tx y\nb c\tz w\n"; got != want {
		t.Fatalf("TSV = %q, want %q", got, want)
	}
}

func TestTableOnTTYHasHeader(t *testing.T) {
	io, _, out, _ := ui.Test()
	io.SetTTY(false, true, true)
	io.DecideColor("never", func(string) string { return "" })
	if err := io.PrintTable(ui.Table{Header: []string{"NAME", "OWNER"}, Rows: [][]string{{"deploy", "ci@h:1"}}}); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "NAME") || !strings.Contains(s, "deploy") || strings.Contains(s, "\x1b[") {
		t.Fatalf("table = %q", s)
	}
}

func TestDecideColor(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	for _, tc := range []struct {
		when string
		tty  bool
		env  map[string]string
		want bool
	}{
		{"auto", true, nil, true},
		{"auto", false, nil, false},
		{"auto", true, map[string]string{"NO_COLOR": "1"}, false},
		{"auto", false, map[string]string{"CLICOLOR_FORCE": "1"}, true},
		{"auto", true, map[string]string{"CLICOLOR": "0"}, false},
		{"always", false, map[string]string{"NO_COLOR": "1"}, true},
		{"never", true, nil, false},
	} {
		io, _, _, _ := ui.Test()
		io.SetTTY(false, tc.tty, false)
		io.DecideColor(tc.when, env(tc.env))
		if got := io.ColorEnabled(); got != tc.want {
			t.Errorf("%s tty=%v env=%v: colour %v, want %v", tc.when, tc.tty, tc.env, got, tc.want)
		}
	}
}

func TestShellQuote(t *testing.T) {
	if got := ui.ShellQuote(`it's $HOME`); got != `'it'\''s $HOME'` {
		t.Fatalf("got %s", got)
	}
}
