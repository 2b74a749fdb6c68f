package runmetrics

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestLastSuccessCarriedOverPerName(t *testing.T) {
	path := filepath.Join(t.TempDir(), "job.prom")
	ok := time.Unix(1700000000, 500000000)
	if err := Write(path, &Run{Name: `a"b`, Start: ok.Add(-time.Second), End: ok, Acquired: true, Succeeded: true}); err != nil {
		t.Fatal(err)
	}
	if err := Write(path, &Run{Name: `a"b`, Start: ok, End: ok.Add(time.Hour), ExitCode: 2, Acquired: true}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), `lockctl_run_last_success_timestamp_seconds{name="a\"b"} 1700000000.5`+"\n") {
		t.Fatalf("last success not kept:\n%s", b)
	}
	// Another name in the same file is not this job's success.
	if err := Write(path, &Run{Name: "other", Start: ok, End: ok, ExitCode: 1}); err != nil {
		t.Fatal(err)
	}
	b, _ = os.ReadFile(path)
	if !strings.Contains(string(b), `lockctl_run_last_success_timestamp_seconds{name="other"} 0`+"\n") {
		t.Fatalf("another name's success was taken:\n%s", b)
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
	b, _ := os.ReadFile(path)
	for _, want := range []string{
		`lockctl_run_last_success_timestamp_seconds{name="j"} 1700000000` + "\n",
		`lockctl_run_acquired{name="j"} 0` + "\n",
		`lockctl_run_exit_code{name="j"} 0` + "\n",
	} {
		if !strings.Contains(string(b), want) {
			t.Errorf("lacks %q:\n%s", want, b)
		}
	}
}
