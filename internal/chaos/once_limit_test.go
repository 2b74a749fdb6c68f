package chaos_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/chaos"
)

// TestOnceConcurrent: 8 processes run `lockctl once` on one key at the same
// moment; the command runs exactly once, the others exit 75 (in progress)
// or replay the recorded outcome (0).
func TestOnceConcurrent(t *testing.T) {
	srv := startRedis(t)
	e := chaos.NewEnv(t, "11.once-concurrent", lockctlBin)
	out := filepath.Join(t.TempDir(), "runs")
	n := 8
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := exec.Command(lockctlBin, "once", "job", "--url", srv.URL, "--", "sh", "-c", "echo run >> "+out+"; sleep 0.3").Run()
			codes[i] = exitOf(err)
		}()
	}
	wg.Wait()
	b, _ := os.ReadFile(out)
	runs := strings.Count(string(b), "run")
	f := e.Collect("lockctl once (8 processes)", 0, n)
	f.Attempted = n
	hist := map[int]int{}
	for _, c := range codes {
		hist[c]++
	}
	f.Succeeded, f.Busy = hist[0], hist[75]
	f.Note("the command ran %d time(s); exit statuses %v", runs, hist)
	f.Verdict = verdictOf(runs == 1 && hist[0]+hist[75] == n, "exactly once")
	chaos.Publish(f)
	if runs != 1 {
		t.Errorf("the command ran %d times, want exactly 1", runs)
	}
	if hist[0]+hist[75] != n {
		t.Errorf("exit statuses %v, want only 0 and 75", hist)
	}
}

// TestLimitWindow: 8 processes hammer `lockctl limit --rate 10/s` for 2s.
// In no window of one period may more than rate + burst calls be admitted
// (counting only admissions whose whole call fell inside the window, so
// the bound is never blamed on scheduling).
func TestLimitWindow(t *testing.T) {
	srv := startRedis(t)
	e := chaos.NewEnv(t, "11.limit-window", lockctlBin)
	rate, burst, period := 10, 10, time.Second
	run := 2 * time.Second
	type call struct{ start, end time.Duration }
	var mu sync.Mutex
	var allowed []call
	limited := 0
	other := map[int]int{}
	var wg sync.WaitGroup
	deadline := time.Now().Add(run)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(deadline) {
				s := e.Rec.Now()
				err := exec.Command(lockctlBin, "limit", "api", "--url", srv.URL, "--rate", "10/s", "--burst", "10").Run()
				c := call{s, e.Rec.Now()}
				mu.Lock()
				switch code := exitOf(err); code {
				case 0:
					allowed = append(allowed, c)
				case 75:
					limited++
				default:
					other[code]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(allowed, func(i, j int) bool { return allowed[i].start < allowed[j].start })
	worst := 0
	for i := range allowed {
		ws := allowed[i].start
		n := 0
		for _, c := range allowed[i:] {
			if c.start >= ws && c.end <= ws+period {
				n++
			}
		}
		if n > worst {
			worst = n
		}
	}
	f := e.Collect("lockctl limit gcra, 8 processes", 0, 8)
	f.Attempted, f.Succeeded, f.Busy = len(allowed)+limited+len(other), len(allowed), limited
	for _, n := range other {
		f.Errors += n
	}
	f.Note("rate %d/s, burst %d: %d admitted in %v; most admitted within one period: %d (bound %d); other exits %v",
		rate, burst, len(allowed), run, worst, rate+burst, other)
	f.Verdict = verdictOf(worst <= rate+burst && len(other) == 0, "never more than rate + burst in any window")
	chaos.Publish(f)
	if worst > rate+burst {
		t.Errorf("%d admitted within one period, bound %d", worst, rate+burst)
	}
	if len(other) != 0 {
		t.Errorf("unexpected exit statuses %v", other)
	}
	if len(allowed) < rate {
		t.Errorf("only %d admitted in %v: the limiter refused too much", len(allowed), run)
	}
}
