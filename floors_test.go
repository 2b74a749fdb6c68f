package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The folders tell the floors, and each floor imports only the floors below
// it:
//
//	main, cmd/...            the binary and its commands (cmd/genman, a tool, imports cmd)
//	internal/cli/...         CLI features above pkg/ (runner, simulate, exporter, inspectcli)
//	internal/cli/support/... CLI helpers (child processes, the connection, run's metrics file)
//	pkg/...                  the library others import
//	internal/lib/...         what the library's packages share, below pkg/
//
// cmd/ui is presentation: it imports no lockctl package at all. pkg/events,
// the event stream, imports none either, so every floor may record events
// through it (the watchdog below pkg/ records renewals and losses).
func TestFloors(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .Imports " "}}`, "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	const mod = "github.com/lockctl/lockctl/"
	floor := func(p string) (string, bool) {
		p, ok := strings.CutPrefix(p, mod)
		if !ok {
			return "", false
		}
		for _, f := range []string{"internal/testkit", "internal/cli/support", "internal/cli", "internal/lib", "pkg", "cmd/ui", "cmd"} {
			if p == f || strings.HasPrefix(p, f+"/") {
				return f, true
			}
		}
		return p, true
	}
	// may lists, for each floor, the floors its packages may import.
	may := map[string][]string{
		"cmd/ui":               {},
		"internal/lib":         {"internal/lib"},
		"pkg":                  {"pkg", "internal/lib"},
		"internal/cli/support": {"internal/cli/support", "pkg", "internal/lib"},
		"internal/cli":         {"internal/cli", "internal/cli/support", "pkg", "internal/lib"},
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		fields := strings.Fields(line)
		from, _ := floor(fields[0])
		if fields[0] == mod+"pkg/events" {
			from = "cmd/ui" // a leaf, as cmd/ui is
		}
		allowed, ok := may[from]
		if !ok {
			continue
		}
		checked++
		for _, imp := range fields[1:] {
			to, ours := floor(imp)
			if !ours || (imp == mod+"pkg/events" && from != "cmd/ui") {
				continue
			}
			ok := false
			for _, a := range allowed {
				ok = ok || a == to
			}
			if !ok {
				t.Errorf("%s (%s) imports %s (%s)", fields[0], from, imp, to)
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked only %d packages:\n%s", checked, out)
	}
}
