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

// The binary links no viper: its dependencies' initialisers (go-toml,
// gotenv compiling regexps, cast with html/template, afero, mapstructure,
// fsnotify) cost every command 0.4–0.8 ms at start, for a YAML file that
// cmd reads itself. viper is the oracle of cmd's config tests only
// (TestConfigAsViper).
func TestBinaryLinksNoViper(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 50 || !slices.Contains(deps, "github.com/lockctl/lockctl/cmd") {
		t.Fatalf("go list -deps . listed %d packages, not the binary's:\n%s", len(deps), out)
	}
	for _, p := range deps {
		for _, mod := range []string{"github.com/spf13/viper", "github.com/pelletier/go-toml", "github.com/subosito/gotenv", "github.com/spf13/cast", "github.com/spf13/afero"} {
			if p == mod || strings.HasPrefix(p, mod+"/") {
				t.Errorf("lockctl links %s", p)
			}
		}
	}
}
