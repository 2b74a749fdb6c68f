package ui_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/lockctl/lockctl/cmd/ui"
)

// safeLine reports why s could act on a terminal or break a line, or "".
func safeLine(s string, allowTab bool) string {
	if !utf8.ValidString(s) {
		return "invalid UTF-8"
	}
	for _, r := range s {
		switch {
		case r == '\t' && allowTab:
		case r < 0x20 || r == 0x7f:
			return "a C0 control or DEL"
		case r >= 0x80 && r <= 0x9f:
			return "a C1 control"
		case r == '\u2028' || r == '\u2029':
			return "a line or paragraph separator"
		case unicode.Is(unicode.Cf, r):
			return "an invisible format character"
		}
	}
	return ""
}

// FuzzEscape: whatever a name, owner, note or raw value from Redis holds,
// what Escape prints is one line of valid UTF-8 with no control, no ESC and
// nothing invisible; printable text is kept as is; and the tab-separated
// rows keep one line per row and their column count.
func FuzzEscape(f *testing.F) {
	for _, s := range []string{"deploy", "ci@build-3:4242", `C:\path`, "héllo 日本 🔒", "a\tb\nc\rd",
		"red\x1b[31mX\x1b[0m", "title\x1b]0;pwned\x07", "clip\x1b]52;c;ZWNobw==\x1b\\", "nul\x00del\x7f",
		"c1\u009b2J", "\xc2\x9b", "bad\xff\xfeutf8", "\xed\xa0\x80", "admin\u202egnp.exe", "zero\u200bwidth",
		"line\u2028sep", "\ufeffbom", "\U000e0001tag", "", "\\x1b"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := ui.Escape(s)
		if why := safeLine(got, false); why != "" {
			t.Fatalf("Escape(%q) = %q: holds %s", s, got, why)
		}
		if safeLine(s, false) == "" && got != s {
			t.Fatalf("Escape(%q) = %q: printable text must stay as it is", s, got)
		}
		var b strings.Builder
		if err := ui.WriteTSV(&b, [][]string{{s, "x", s}}); err != nil {
			t.Fatal(err)
		}
		row, ok := strings.CutSuffix(b.String(), "\n")
		if !ok || strings.Count(row, "\t") != 2 {
			t.Fatalf("WriteTSV of %q = %q: want one line of three columns", s, b.String())
		}
		if why := safeLine(row, true); why != "" {
			t.Fatalf("WriteTSV of %q = %q: holds %s", s, b.String(), why)
		}
	})
}
