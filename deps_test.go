package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// lockctl is built on a stack, each library doing what it does best: viper
// reads the settings, tablewriter lays out the tables, client_golang writes
// the metrics. None of them may be replaced by a copy of our own.
var stack = []struct{ pkg, does string }{
	{"github.com/spf13/cobra", "the commands and flags"},
	{"github.com/spf13/viper", "the settings (flags, LOCKCTL_* variables, the config file)"},
	{"github.com/redis/go-redis/v9", "the Redis client"},
	{"github.com/charmbracelet/lipgloss", "the styles"},
	{"github.com/olekukonko/tablewriter", "the tables"},
	{"github.com/prometheus/client_golang/prometheus", "the exporter's metrics and run --metrics-file"},
	{"github.com/prometheus/client_golang/prometheus/promhttp", "the exporter's /metrics"},
}

func TestBinaryLinksTheStack(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps .: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/lockctl/lockctl/cmd") {
		t.Fatalf("go list -deps . listed %d packages, not the binary's:\n%s", len(deps), out)
	}
	for _, s := range stack {
		if !slices.Contains(deps, s.pkg) {
			t.Errorf("lockctl does not link %s, which does %s", s.pkg, s.does)
		}
	}
}
