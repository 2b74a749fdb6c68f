package ui_test

import (
	"strings"
	"testing"

	"github.com/charmbracelet/lipgloss"
	"github.com/lockctl/lockctl/cmd/ui"
)

func TestWrap(t *testing.T) {
	for _, tc := range []struct {
		in    string
		width int
		want  string
	}{
		{"short line\n  kept   as written", 20, "short line\n  kept   as written"},
		{"one two three four five six", 20, "one two three four\nfive six"},
		{"  - item one two three four five six seven", 30, "  - item one two three four\n    five six seven"},
		{"  gcra     one two three four five six seven", 32, "  gcra     one two three four\n           five six seven"},
		{"      --ttl duration   lease length of the lock (default 30s)", 50, "      --ttl duration   lease length of the lock\n                       (default 30s)"},
		// Too little room beside the gap: continue at the line's indent.
		{"  gcra     one two three four", 20, "  gcra     one two\n  three four"},
		{"a-word-longer-than-the-width here", 20, "a-word-longer-than-the-width\nhere"},
	} {
		got := ui.Wrap(tc.in, tc.width)
		if got != tc.want {
			t.Errorf("Wrap(%q, %d):\n%s\nwant\n%s", tc.in, tc.width, got, tc.want)
		}
		for _, l := range strings.Split(got, "\n") {
			if lipgloss.Width(l) > tc.width && !strings.Contains(l, "a-word-longer") {
				t.Errorf("Wrap(%q, %d): line %q is wider", tc.in, tc.width, l)
			}
		}
	}
}
