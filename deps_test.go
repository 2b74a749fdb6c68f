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
	// viper's dependencies (go-toml, gotenv compiling regexps, cast with
	// html/template, afero, mapstructure, fsnotify) cost every command
	// 0.4–0.8 ms, for a YAML file cmd reads itself; viper is the oracle of
	// TestConfigAsViper only.
	{"viper and its decoders", []string{"github.com/spf13/viper", "github.com/pelletier/go-toml", "github.com/subosito/gotenv", "github.com/spf13/cast", "github.com/spf13/afero"}},
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
