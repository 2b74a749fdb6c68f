package cmd_test

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

// On a terminal, ls prints a table with a header, sorted by name; doctor
// prints one line per check (on a terminal wide enough).
func TestInspectTerminalTable(t *testing.T) {
	s := redistest.StartTest(t, nil)
	for _, n := range []string{"zeta", "alpha", "mid"} {
		if _, err := s.Do("SET", "lock:"+n, "v-"+n, "PX", "60000"); err != nil {
			t.Fatal(err)
		}
	}
	io, _, out, _ := ui.Test()
	io.SetTTY(false, true, false)
	if code := cmd.MainArgs([]string{"ls", "--url", s.URL, "--color", "never"}, io); code != 0 {
		t.Fatalf("ls exited %d", code)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 4 || !strings.HasPrefix(strings.TrimSpace(lines[0]), "NAME") ||
		!strings.HasPrefix(strings.TrimSpace(lines[1]), "alpha") || !strings.HasPrefix(strings.TrimSpace(lines[3]), "zeta") {
		t.Fatalf("table:\n%s", out.String())
	}
	io, _, out, _ = ui.Test()
	io.SetTTY(false, true, false)
	// Wide enough for every verdict on its line (at 80 columns they wrap
	// where their words fall).
	io.SetWidth(1000, 0)
	code := cmd.MainArgs([]string{"doctor", "--url", s.URL, "--color", "never"}, io)
	if code != 1 || !strings.Contains(out.String(), "persistence") || !strings.Contains(out.String(), "→ CONFIG SET appendonly yes") {
		t.Fatalf("doctor exited %d:\n%s", code, out.String())
	}
}
