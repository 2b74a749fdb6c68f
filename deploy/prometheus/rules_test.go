package rules_test

import (
	"os/exec"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/promtest"
)

func promtool(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := promtest.Need("promtool")
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestRulesValid(t *testing.T) {
	out := promtool(t, "check", "rules", "lockctl-rules.yml")
	if !strings.Contains(out, "SUCCESS: 12 rules found") {
		t.Fatalf("unexpected promtool output:\n%s", out)
	}
}

// TestRulesUnit runs the unit tests of every alert (lockctl-rules.test.yml):
// each fires on the series that should fire it and stays quiet before.
func TestRulesUnit(t *testing.T) {
	promtool(t, "test", "rules", "lockctl-rules.test.yml")
}
