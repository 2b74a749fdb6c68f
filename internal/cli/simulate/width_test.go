package simulate_test

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/charmbracelet/lipgloss"
	"github.com/lockctl/lockctl/internal/cli/simulate"
)

// fits80 fails for every line of out wider than 80 columns (display
// width, not bytes: "…" is one column and three bytes).
func fits80(t *testing.T, what string, out []byte) {
	t.Helper()
	for i, line := range strings.Split(strings.TrimSuffix(string(out), "\n"), "\n") {
		if w := lipgloss.Width(line); w > 80 {
			t.Errorf("%s line %d is %d columns wide:\n%s", what, i+1, w, line)
		}
	}
}

// TestTextFits80Columns: every line of simulate's text output, for every
// scenario (and the list), fits an 80-column terminal, where a wider line
// would wrap into the timeline's lanes.
func TestTextFits80Columns(t *testing.T) {
	for _, name := range names() {
		text, _, _ := render(t, name, nil)
		fits80(t, name, text)
	}
	// The real server's heading is longer.
	text, _, _ := render(t, "stale-del", &simulate.Options{URL: srv.URL, Second: 40 * time.Millisecond})
	fits80(t, "stale-del on a real server", text)
	var b bytes.Buffer
	if err := simulate.RenderList(&b, simulate.List()); err != nil {
		t.Fatal(err)
	}
	fits80(t, "list", b.Bytes())
}
