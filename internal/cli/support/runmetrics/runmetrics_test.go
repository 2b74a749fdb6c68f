package runmetrics

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// read parses the file as node_exporter's textfile collector does: every
// gauge's value by metric and name label.
func read(t *testing.T, path string) map[string]map[string]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	got := map[string]map[string]float64{}
	for name, mf := range mfs {
		got[name] = map[string]float64{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" {
					got[name][l.GetValue()] = m.GetGauge().GetValue()
				}
			}
		}
	}
	if len(got) != len(all) {
		t.Errorf("%d series, want %d", len(got), len(all))
	}
	return got
}

func TestLastSuccessCarriedOverPerName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.prom")
	ok := time.Unix(1700000000, 500000000)
	if err := Write(path, &Run{Name: `a"b`, Start: ok.Add(-time.Second), End: ok, Acquired: true, Succeeded: true}); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, &Run{Name: `a"b`, Start: ok, End: ok.Add(time.Hour), ExitCode: 2, Acquired: true}); err != nil {
		t.Fatal(err)
	}
	m := read(t, path)
	if v := m[lastSuccess][`a"b`]; v != 1700000000.5 {
		t.Fatalf("last success %v, want 1700000000.5 kept", v)
	}
	if v := m["lockctl_run_exit_code"][`a"b`]; v != 2 {
		t.Errorf("exit code %v", v)
	}
	// Another name in the same file is not this job's success.
	if err := Write(path, &Run{Name: "other", Start: ok, End: ok, ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	if v, found := read(t, path)[lastSuccess]["other"]; !found || v != 0 {
		t.Fatalf("another name's success was taken: %v", v)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v: the collector runs as another user", fi.Mode())
	}
	ents, _ := os.ReadDir(filepath.Dir(path))
	if len(ents) != 1 {
		t.Errorf("temporary files left: %v", ents)
	}
}

// A run that exited 0 without running the command here (skipped: -n -E 0)
// is no success: the last success stays, and acquired says it was skipped.
func TestSkippedRunIsNoSuccess(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.prom")
	ok := time.Unix(1700000000, 0)
	if err := Write(path, &Run{Name: "j", Start: ok, End: ok, Acquired: true, Succeeded: true}); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, &Run{Name: "j", Start: ok, End: ok.Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	m := read(t, path)
	for metric, want := range map[string]float64{lastSuccess: 1700000000, "lockctl_run_acquired": 0, "lockctl_run_exit_code": 0, "lockctl_run_duration_seconds": 86400} {
		if v, found := m[metric]["j"]; !found || v != want {
			t.Errorf("%s = %v, want %v", metric, v, want)
		}
	}
}

// A file that is not the text format (truncated by a full disk, edited by
// hand) is replaced; no last success is known from it.
func TestUnreadableOldFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.prom")
	if err := os.WriteFile(path, []byte("lockctl_run_last_success_timestamp_seconds{name=\"j\" 17\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, &Run{Name: "j", Start: time.Unix(1700000000, 0), End: time.Unix(1700000001, 0), ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	if v, found := read(t, path)[lastSuccess]["j"]; !found || v != 0 {
		t.Errorf("last success %v", v)
	}
}
