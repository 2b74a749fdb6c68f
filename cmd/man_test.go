package cmd_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/lockctl/lockctl/cmd/manpage"
)

// TestManPagesUpToDate fails when man/ drifts from the command tree;
// `make man` regenerates the pages.
func TestManPagesUpToDate(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "")
	dir := t.TempDir()
	if err := manpage.Write(commandTree(t), dir); err != nil {
		t.Fatal(err)
	}
	list := func(d string) []string {
		m, err := filepath.Glob(filepath.Join(d, "*.1"))
		if err != nil {
			t.Fatal(err)
		}
		for i := range m {
			m[i] = filepath.Base(m[i])
		}
		sort.Strings(m)
		return m
	}
	got, committed := list(dir), list(filepath.Join("..", "man"))
	if len(got) == 0 || !equalStrings(got, committed) {
		t.Fatalf("man/ has %v, the command tree makes %v: run `make man`", committed, got)
	}
	for _, name := range got {
		a, _ := os.ReadFile(filepath.Join(dir, name))
		b, _ := os.ReadFile(filepath.Join("..", "man", name))
		if !bytes.Equal(a, b) {
			t.Errorf("man/%s is stale: run `make man`", name)
		}
	}
	// The same tree twice gives the same bytes: no clock in the header.
	again := t.TempDir()
	if err := manpage.Write(commandTree(t), again); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(dir, "lockctl.1"))
	b, _ := os.ReadFile(filepath.Join(again, "lockctl.1"))
	if !bytes.Equal(a, b) {
		t.Error("two generations of lockctl.1 differ")
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRunManSignals: lockctl-run(1) says how signals end and are passed
// on, as the README does: death by ^C and ^\ after the clean-up, and no
// second copy of a signal the group got by itself (systemd's KillMode).
func TestRunManSignals(t *testing.T) {
	page, err := os.ReadFile(filepath.Join("..", "man", "lockctl-run.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"dies of the same signal",
		"not when the group got the same signal by itself",
		"KillMode=mixed",
		"a shell sees 130 / 131",
	} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("man/lockctl-run.1 does not say %q", want)
		}
	}
}
