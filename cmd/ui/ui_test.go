package ui_test

import (
	"encoding/json"
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
	if got, want := out.String(), "a\tx\\ty\nb c\tz\\nw\n"; got != want {
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
		{"auto", true, map[string]string{"TERM": "dumb"}, false},
		{"always", true, map[string]string{"TERM": "dumb"}, true},
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

func TestEscape(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"deploy", "deploy"},
		{`C:\path`, `C:\path`},
		{"héllo wörld ✓ 日本", "héllo wörld ✓ 日本"},
		{"a\tb\nc\rd", `a\tb\nc\rd`},
		{"red\x1b[31mX\x1b[0m", `red\x1b[31mX\x1b[0m`},
		{"title\x1b]0;pwned\x07", `title\x1b]0;pwned\x07`},
		{"clip\x1b]52;c;ZWNobw==\x1b\\", `clip\x1b]52;c;ZWNobw==\x1b\`},
		{"nul\x00del\x7f", `nul\x00del\x7f`},
		{"c1\u009b2J", `c1\u009b2J`},
		{"bad\xff\xfeutf8", `bad\xff\xfeutf8`},
		{"admin\u202egnp.exe", `admin\u202egnp.exe`},
		{"zero\u200bwidth", `zero\u200bwidth`},
		{"line\u2028sep", `line\u2028sep`},
	} {
		got := ui.Escape(tc.in)
		if got != tc.want {
			t.Errorf("Escape(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if again := ui.Escape(got); again != got {
			t.Errorf("Escape is not idempotent on %q: %q", got, again)
		}
	}
}

func TestTruncate(t *testing.T) {
	if got := ui.Truncate("abcdef", 4); got != "abc…" {
		t.Fatalf("got %q", got)
	}
	if got := ui.Truncate("abcd", 4); got != "abcd" {
		t.Fatalf("got %q", got)
	}
	if got := ui.Truncate("日本語です", 5); got != "日本…" {
		t.Fatalf("got %q", got)
	}
}

// On a terminal, cells lose every control sequence that came with the data
// but keep lockctl's own colours; MaxCellWidth cuts absurd cells.
func TestTableOnTTYEscapes(t *testing.T) {
	io, _, out, _ := ui.Test()
	io.SetTTY(false, true, true)
	io.DecideColor("always", func(string) string { return "" })
	long := strings.Repeat("x", 500)
	err := io.PrintTable(ui.Table{Header: []string{"A", "B"}, MaxCellWidth: 40, Rows: [][]string{
		{"evil\x1b[2J\x1b]0;t\x07\nforged\trow", io.OK("ok")},
		{long, "b"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, bad := range []string{"\x1b[2J", "\x1b]", "\x07", "\nforged", "\tforged"} {
		if strings.Contains(s, bad) {
			t.Errorf("table holds %q:\n%s", bad, s)
		}
	}
	if !strings.Contains(s, `evil\x1b[2J\x1b]0;t\x07\nforged\trow`) {
		t.Errorf("escaped cell missing:\n%s", s)
	}
	if !strings.Contains(s, io.OK("ok")) {
		t.Errorf("own colour lost:\n%q", s)
	}
	if strings.Contains(s, long[:40]) || !strings.Contains(s, strings.Repeat("x", 39)+"…") {
		t.Errorf("long cell not cut at 40 columns:\n%s", s)
	}
	if n := strings.Count(s, "\n"); n != 3 {
		t.Errorf("%d lines, want 3:\n%s", n, s)
	}
}

// JSON keeps every value exact but never carries a raw character a terminal
// obeys: encoding/json escapes C0; DEL, C1 and format characters too.
func TestJSONEscapesTerminalControls(t *testing.T) {
	io, _, out, _ := ui.Test()
	in := "a\x1b[31m\x7f\u009b\u202e\U000e0041z"
	if err := io.PrintJSON(map[string]string{"v": in}); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	for _, r := range s {
		if r < 0x20 && r != '\n' || r == 0x7f || r >= 0x80 && r <= 0x9f || r == 0x202e || r == 0xe0041 {
			t.Fatalf("raw %U in JSON %q", r, s)
		}
	}
	var back map[string]string
	if err := json.Unmarshal(out.Bytes(), &back); err != nil || back["v"] != in {
		t.Fatalf("round trip: %q, %v", back["v"], err)
	}
	arr := ui.NewJSONArray(out)
	out.Reset()
	if err := arr.Add(map[string]string{"v": in}); err != nil {
		t.Fatal(err)
	}
	if err := arr.Close(); err != nil {
		t.Fatal(err)
	}
	if strings.ContainsRune(out.String(), 0x9b) || strings.ContainsRune(out.String(), 0x7f) {
		t.Fatalf("raw control in JSON array %q", out.String())
	}
}

func TestErrorfIsOneEscapedLine(t *testing.T) {
	io, _, _, errOut := ui.Test()
	io.Errorf("held by %s", "bob\x1b]0;x\x07\nlockctl: fake")
	if got, want := errOut.String(), "lockctl: held by bob\\x1b]0;x\\x07\\nlockctl: fake\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

// The array is exactly its elements indented by json.MarshalIndent, one
// write per element, whatever the encoder reuses between them.
func TestJSONArrayMatchesMarshalIndent(t *testing.T) {
	var out strings.Builder
	arr := ui.NewJSONArray(&out)
	elems := []any{map[string]any{"name": "a", "n": 1, "nested": []int{1, 2}}, map[string]string{"b": "<&>"}, []string{}}
	want := ""
	for i, e := range elems {
		if err := arr.Add(e); err != nil {
			t.Fatal(err)
		}
		b, _ := json.MarshalIndent(e, "  ", "  ")
		sep := ",\n  "
		if i == 0 {
			sep = "[\n  "
		}
		want += sep + strings.ReplaceAll(strings.ReplaceAll(strings.ReplaceAll(string(b), `\u003c`, "<"), `\u0026`, "&"), `\u003e`, ">")
	}
	if err := arr.Close(); err != nil {
		t.Fatal(err)
	}
	if want += "\n]\n"; out.String() != want {
		t.Fatalf("got\n%s\nwant\n%s", out.String(), want)
	}
}
