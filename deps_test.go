package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// The binary links none of the Prometheus client stack: Go runs the
// initialiser of every package linked in at every start of every command,
// and client_golang's, with protobuf (whose init reads the binary itself),
// procfs, expfmt and expvar, cost each `lockctl run` about 3 ms. The
// exporter writes the text format itself; client_golang is its tests'
// oracle only.
func TestBinaryLinksNoPrometheusClient(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !slices.Contains(deps, "github.com/lockctl/lockctl/internal/exporter") {
		t.Fatalf("go list -deps . listed %d packages, not the binary's:\n%s", len(deps), out)
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/prometheus/") || strings.HasPrefix(p, "google.golang.org/protobuf/") || p == "expvar" {
			t.Errorf("lockctl links %s", p)
		}
	}
}
