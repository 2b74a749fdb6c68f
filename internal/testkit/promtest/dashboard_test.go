package promtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The shipped dashboard holds to the model's contract, and the check
// catches what would tie it to one Grafana: a hard-coded datasource UID,
// no datasource variable, an old schema, a panel without a query.
func TestDashboardCheck(t *testing.T) {
	const path = "../../../deploy/grafana/lockctl.json"
	d, err := LoadDashboard(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	if len(d.Queries()) < 15 {
		t.Fatalf("%d queries", len(d.Queries()))
	}
	raw, _ := os.ReadFile(path)
	for name, broken := range map[string]string{
		"hard-coded uid":  strings.Replace(string(raw), `"uid": "${datasource}"`, `"uid": "P1809F7CD0C75ACF3"`, 1),
		"no ds variable":  strings.Replace(string(raw), `"type": "datasource"`, `"type": "custom"`, 1),
		"old schema":      strings.Replace(string(raw), `"schemaVersion": 39`, `"schemaVersion": 16`, 1),
		"panel, no query": strings.Replace(string(raw), `"expr": "min(lockctl_up{instance=~\"$instance\"})"`, `"expr": ""`, 1),
	} {
		if broken == string(raw) {
			t.Fatalf("%s: the replacement did not apply", name)
		}
		p := filepath.Join(t.TempDir(), "d.json")
		if err := os.WriteFile(p, []byte(broken), 0o644); err != nil {
			t.Fatal(err)
		}
		d, err := LoadDashboard(p)
		if err != nil {
			t.Fatal(err)
		}
		if d.Check() == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestExpand(t *testing.T) {
	got := Expand(`sum by (le) (increase(x{instance=~"$instance", name=~"${name}"}[$__rate_interval])) / $__range`)
	want := `sum by (le) (increase(x{instance=~".*", name=~".*"}[1m])) / 5m`
	if got != want {
		t.Fatalf("got %s", got)
	}
}
