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

	"github.com/lockctl/lockctl/internal/testkit/chaos"
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

// TestOnceLimitRestart: what a Redis restart does to once records and rate
// limits, with and without persistence. The records live only in Redis, so
// a restart without persistence forgets them: a finished `once` runs again
// and a limiter starts from a full burst. With AOF appendfsync always both
// survive: `once` replays the recorded outcome and the limiter stays
// exhausted. Both halves are asserted, so the README's description of the
// behaviour is checked against the code.
func TestOnceLimitRestart(t *testing.T) {
	for _, v := range []struct {
		name    string
		args    []string
		persist bool
	}{
		{"11.restart-no-persistence", nil, false},
		{"11.restart-aof-always", []string{"--appendonly", "yes", "--appendfsync", "always"}, true},
	} {
		t.Run(v.name, func(t *testing.T) {
			srv := startRedis(t, v.args...)
			e := chaos.NewEnv(t, v.name, lockctlBin)
			out := filepath.Join(t.TempDir(), "runs")
			once := func() int {
				return exitOf(exec.Command(lockctlBin, "once", "nightly", "--url", srv.URL, "--", "sh", "-c", "echo run >> "+out).Run())
			}
			limit := func() int {
				return exitOf(exec.Command(lockctlBin, "limit", "api", "--url", srv.URL, "--rate", "3/1h").Run())
			}
			first := once()
			admitted := 0
			for i := 0; i < 5; i++ {
				if limit() == 0 {
					admitted++
				}
			}
			srv.Kill()
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			second := once()
			after := 0
			for i := 0; i < 5; i++ {
				if limit() == 0 {
					after++
				}
			}
			b, _ := os.ReadFile(out)
			runs := strings.Count(string(b), "run")
			f := e.Collect("lockctl once / limit 3/1h", 0, 1)
			f.Note("once: first exit %d, after the restart exit %d, the command ran %d time(s); limit 3/1h: %d of 5 admitted before the restart, %d of 5 after",
				first, second, runs, admitted, after)
			var ok bool
			if v.persist {
				ok = runs == 1 && second == 0 && admitted == 3 && after == 0
				f.Verdict = verdictOf(ok, "the restart keeps both: once replays the outcome, the limiter stays exhausted")
			} else {
				ok = runs == 2 && admitted == 3 && after == 3
				f.Verdict = verdictOf(ok, "as documented, the restart forgets both: once runs again, the limiter admits a fresh burst")
			}
			chaos.Publish(f)
			if !ok {
				t.Errorf("once ran %d time(s) (exits %d, %d); limit admitted %d then %d", runs, first, second, admitted, after)
			}
		})
	}
}
