package cmd_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/cli/simulate"
)

// goldenDir holds the one golden copy of each scenario's output; the
// command must print exactly what the package renders.
var goldenDir = filepath.Join("..", "internal", "cli", "simulate", "testdata")

// noServer points every way of configuring a server at a closed port and
// hides any user config: the embedded run must need none of them.
func noServer(t *testing.T) {
	t.Helper()
	t.Setenv("LOCKCTL_URL", "redis://127.0.0.1:1/0")
	t.Setenv("REDIS_URL", "redis://127.0.0.1:1/0")
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	t.Setenv("NO_COLOR", "")
}

func runMain(t *testing.T, io *ui.IOStreams, args ...string) int {
	t.Helper()
	return cmd.MainArgs(args, io)
}

func wantGolden(t *testing.T, file string, got []byte) {
	t.Helper()
	want, err := os.ReadFile(filepath.Join(goldenDir, file))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("output differs from %s:\n--- got ---\n%s", file, got)
	}
}

// TestSimulateGolden: `lockctl simulate NAME` (plain and -o json) and
// `simulate list` print the package's goldens byte for byte, with the
// configured server unreachable.
func TestSimulateGolden(t *testing.T) {
	noServer(t)
	io, _, out, errOut := ui.Test()
	if code := runMain(t, io, "simulate", "list"); code != 0 {
		t.Fatalf("simulate list exited %d: %s", code, errOut)
	}
	wantGolden(t, "list.txt", out.Bytes())
	for _, s := range simulate.List() {
		for _, format := range []string{"text", "json"} {
			io, _, out, errOut := ui.Test()
			if code := runMain(t, io, "simulate", s.Name, "--color", "never", "-o", format); code != 0 {
				t.Fatalf("simulate %s -o %s exited %d: %s", s.Name, format, code, errOut)
			}
			if errOut.Len() > 0 {
				t.Errorf("simulate %s: stderr %q", s.Name, errOut)
			}
			ext := map[string]string{"text": ".txt", "json": ".json"}[format]
			wantGolden(t, s.Name+ext, out.Bytes())
		}
	}
}

// TestSimulateColor: --color always styles the timeline, and the styles
// change no visible character.
func TestSimulateColor(t *testing.T) {
	noServer(t)
	io, _, out, _ := ui.Test()
	if code := runMain(t, io, "simulate", "stale-del", "--color", "always"); code != 0 {
		t.Fatalf("exited %d", code)
	}
	if !strings.Contains(out.String(), "\x1b[") {
		t.Fatal("no escape sequences with --color always")
	}
	plain := stripANSI(out.String())
	want, _ := os.ReadFile(filepath.Join(goldenDir, "stale-del.txt"))
	if plain != string(want) {
		t.Errorf("coloured output, escapes removed, differs from the plain golden:\n%s", plain)
	}
}

func stripANSI(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == 0x1b && i+1 < len(s) && s[i+1] == '[' {
			j := i + 2
			for j < len(s) && (s[j] < 0x40 || s[j] > 0x7e) {
				j++
			}
			i = j
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TestSimulateStep: on a terminal, --step pauses after each event; q stops
// the replay with status 0, and enough Enters play it to the end.
func TestSimulateStep(t *testing.T) {
	noServer(t)
	const prompt = "[Enter] next step, q quits"

	io, in, out, _ := ui.Test()
	io.SetTTY(true, true, true)
	in.WriteString("\n\nq\n")
	if code := runMain(t, io, "simulate", "stale-del", "--step", "--color", "never"); code != 0 {
		t.Fatalf("q exited %d", code)
	}
	if n := strings.Count(out.String(), prompt); n != 3 {
		t.Errorf("%d prompts before q, want 3:\n%s", n, out)
	}
	if strings.Contains(out.String(), "verdict:") {
		t.Errorf("the replay went on after q:\n%s", out)
	}

	io, in, out, _ = ui.Test()
	io.SetTTY(true, true, true)
	in.WriteString(strings.Repeat("\n", 500))
	if code := runMain(t, io, "simulate", "stale-del", "--step", "--color", "never"); code != 0 {
		t.Fatalf("exited %d", code)
	}
	if n := strings.Count(out.String(), "verdict:"); n != 3 {
		t.Errorf("%d verdicts after stepping through, want 3", n)
	}
	// Without the prompts and their erasure, the text is the golden.
	var kept []string
	for _, line := range strings.SplitAfter(out.String(), "\n") {
		if i := strings.Index(line, "  "+prompt+" \x1b[1A\x1b[2K"); i >= 0 {
			line = line[:i] + line[i+len("  "+prompt+" \x1b[1A\x1b[2K"):]
		}
		kept = append(kept, line)
	}
	want, _ := os.ReadFile(filepath.Join(goldenDir, "stale-del.txt"))
	if strings.Join(kept, "") != string(want) {
		t.Errorf("stepped text differs from the golden:\n%s", strings.Join(kept, ""))
	}

	// Off a terminal --step is ignored with a note, and the run completes.
	io, _, out, errOut := ui.Test()
	if code := runMain(t, io, "simulate", "stale-del", "--step"); code != 0 {
		t.Fatalf("off a terminal: exited %d", code)
	}
	if !strings.Contains(errOut.String(), "--step ignored") || strings.Contains(out.String(), prompt) {
		t.Errorf("off a terminal: stderr %q, prompt printed: %v", errOut, strings.Contains(out.String(), prompt))
	}
}

// TestSimulateCompletion: scenario names complete, with their titles.
func TestSimulateCompletion(t *testing.T) {
	noServer(t)
	io, _, out, _ := ui.Test()
	if code := runMain(t, io, "__complete", "simulate", ""); code != 0 {
		t.Fatalf("exited %d", code)
	}
	for _, s := range simulate.List() {
		if !strings.Contains(out.String(), s.Name+"\t"+s.Title+"\n") {
			t.Errorf("completion lacks %s:\n%s", s.Name, out)
		}
	}
	if !strings.Contains(out.String(), "list\t") {
		t.Errorf("completion lacks the list subcommand:\n%s", out)
	}
}
