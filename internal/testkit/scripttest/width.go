package scripttest

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/charmbracelet/lipgloss"
	"github.com/rogpeppe/go-internal/testscript"
)

// Escape sequences take no room on the screen: CSI (colours, cursor,
// modes), OSC, and the two-byte ones.
var escapeRE = regexp.MustCompile("\x1b\\[[0-?]*[ -/]*[@-~]|\x1b\\][^\x07\x1b]*(\x07|\x1b\\\\)|\x1b[ -~]")

// maxcols N: no line of stdout (a pty's screen after pty-wait: lines end
// at \n or \r) is wider than N terminal columns, escape sequences taking
// none and East Asian wide characters two. With !: some line is wider.
func cmdMaxCols(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: maxcols N")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	out := ts.ReadFile("stdout")
	widest, line := 0, ""
	for _, l := range strings.FieldsFunc(out, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if w := lipgloss.Width(escapeRE.ReplaceAllString(l, "")); w > widest {
			widest, line = w, l
		}
	}
	if (widest > n) != neg {
		if neg {
			ts.Fatalf("no line wider than %d columns (widest %d)", n, widest)
		}
		ts.Fatalf("a line of %d columns, wider than %d:\n%q", widest, n, line)
	}
}
