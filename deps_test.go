package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Go runs the initialiser of every package linked into the binary at every
// start of every command, so a dependency only one command or only the
// tests need must stay out of the binary. Each entry is kept out for its
// measured start-up cost; the tests still use them as oracles.
var keptOut = []struct {
	why      string
	prefixes []string
}{
	// client_golang, with protobuf (whose init reads the binary itself),
	// procfs, expfmt and expvar, cost each `lockctl run` about 3 ms. The
	// exporter writes the text format itself; client_golang is its
	// tests' oracle only.
	{"the Prometheus client stack", []string{"github.com/prometheus/", "google.golang.org/protobuf/", "expvar"}},
}

func TestBinaryLinksNoTestOnlyDependency(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !slices.Contains(deps, "github.com/lockctl/lockctl/internal/exporter") || !slices.Contains(deps, "github.com/lockctl/lockctl/cmd") {
		t.Fatalf("go list -deps . listed %d packages, not the binary's:\n%s", len(deps), out)
	}
	for _, k := range keptOut {
		for _, p := range deps {
			for _, prefix := range k.prefixes {
				if p == prefix || strings.HasPrefix(p, strings.TrimSuffix(prefix, "/")+"/") {
					t.Errorf("lockctl links %s (%s)", p, k.why)
				}
			}
		}
	}
}
