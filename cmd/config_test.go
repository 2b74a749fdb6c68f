package cmd_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/cmd/ui"
)

// configRun runs `lockctl version --config path` and returns its exit code,
// stderr and how long it took.
func configRun(t *testing.T, path string) (int, string, time.Duration) {
	t.Helper()
	io, _, _, errOut := ui.Test()
	start := time.Now()
	code := cmd.MainArgs([]string{"version", "--config", path}, io)
	return code, errOut.String(), time.Since(start)
}

// writeKeys writes a config file of n keys, in sections of perSection keys
// (0: all at the top level), and returns its path.
func writeKeys(t *testing.T, n, perSection int) string {
	t.Helper()
	var b strings.Builder
	for i := range n {
		if perSection > 0 {
			if i%perSection == 0 {
				fmt.Fprintf(&b, "s%d:\n", i/perSection)
			}
			b.WriteString("  ")
		}
		fmt.Fprintf(&b, "k%d: 1\n", i)
	}
	path := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// fastest is the shortest of runs of `lockctl version` on path, and the
// exit code and stderr of the last.
func fastest(t *testing.T, path string, runs int) (int, string, time.Duration) {
	t.Helper()
	var code int
	var stderr string
	best := time.Duration(1<<63 - 1)
	for range runs {
		var took time.Duration
		code, stderr, took = configRun(t, path)
		best = min(best, took)
	}
	return code, stderr, best
}

// A config file's cost grows with its size, not its square: YAML's decoder
// checks a mapping's keys for duplicates pair by pair, which took minutes of
// CPU for 200,000 keys before any command ran. Ten times the keys may take
// at most 30 times as long (linear is 10; the quadratic cost was about 70
// times).
func TestConfigManyKeysLinear(t *testing.T) {
	small := writeKeys(t, 20000, 0)
	big := writeKeys(t, 200000, 0)
	codeSmall, errSmall, tSmall := fastest(t, small, 3)
	codeBig, errBig, tBig := fastest(t, big, 2)
	for _, r := range []struct {
		code   int
		stderr string
	}{{codeSmall, errSmall}, {codeBig, errBig}} {
		if r.code != 0 && r.code != cmd.ExitUsage {
			t.Errorf("exit %d, want 0 or 64:\n%s", r.code, r.stderr)
		}
	}
	if tBig > 30*tSmall {
		t.Errorf("200,000 keys took %s, 20,000 took %s: %.0f times as long", tBig, tSmall, float64(tBig)/float64(tSmall))
	}
	t.Logf("20,000 keys: %s (exit %d), 200,000 keys: %s (exit %d)", tSmall, codeSmall, tBig, codeBig)
}

// Unknown keys in sections lockctl accepts are warned about, but a file of
// 200,000 of them does not print 200,000 warnings, each with a search for
// the nearest known key: 20, then a count of the rest.
func TestConfigUnknownKeysBounded(t *testing.T) {
	path := writeKeys(t, 200000, 1000)
	code, stderr, _ := configRun(t, path)
	if code != 0 {
		t.Fatalf("exit %d, want 0:\n%.2000s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stderr), "\n")
	if len(lines) != 21 || !strings.Contains(stderr, "unknown key s0.k0 (ignored); no command is called s0") ||
		!strings.Contains(lines[20], ": 199980 more unknown keys (ignored)") {
		t.Errorf("stderr has %d lines, want 20 warnings and a count:\n%.3000s", len(lines), stderr)
	}
}
