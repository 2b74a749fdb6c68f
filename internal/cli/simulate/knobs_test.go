package simulate_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli/simulate"
)

func script(t *testing.T, name string) *simulate.Script {
	t.Helper()
	path := filepath.Join("testdata", "scripts", name)
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := simulate.CompileScript(path, string(src))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// variantRuns are the knob and script variants pinned by goldens, named
// after their golden files.
func variantRuns(t *testing.T) []struct {
	file, name string
	opts       *simulate.Options
} {
	return []struct {
		file, name string
		opts       *simulate.Options
	}{
		{"stale-del--pause-5s", "stale-del", &simulate.Options{Pause: 5 * time.Second}},
		{"stale-del--ttl-4s", "stale-del", &simulate.Options{TTL: 4 * time.Second}},
		{"stale-del--release-plain-del", "stale-del", &simulate.Options{ReleaseScript: script(t, "plain-del.lua")}},
		{"stale-del--release-compare-and-delete", "stale-del", &simulate.Options{ReleaseScript: script(t, "compare-and-delete.lua")}},
		{"stale-del--release-runtime-error", "stale-del", &simulate.Options{ReleaseScript: script(t, "runtime-error.lua")}},
		{"stale-del--release-endless", "stale-del", &simulate.Options{ReleaseScript: script(t, "endless.lua")}},
		{"no-renew--job-6s", "no-renew", &simulate.Options{Job: 6 * time.Second}},
		{"no-renew--ttl-3s-job-10s", "no-renew", &simulate.Options{TTL: 3 * time.Second, Job: 10 * time.Second}},
		{"no-renew--renew-pexpire", "no-renew", &simulate.Options{RenewScript: script(t, "renew-pexpire.lua")}},
		{"no-renew--renew-compare", "no-renew", &simulate.Options{RenewScript: script(t, "renew-compare.lua")}},
		{"redlock-pause--pause-4s", "redlock-pause", &simulate.Options{Pause: 4 * time.Second}},
	}
}

// TestGoldenVariants pins the text and JSON of every knob and script
// variant, and checks that each fits 80 columns.
func TestGoldenVariants(t *testing.T) {
	for _, v := range variantRuns(t) {
		t.Run(v.file, func(t *testing.T) {
			text, js, _ := render(t, v.name, v.opts)
			golden(t, v.file+".txt", text)
			golden(t, v.file+".json", js)
			fits80(t, v.file, text)
		})
	}
}

func verdicts(res *simulate.Result) []string {
	var out []string
	for _, v := range res.Variants {
		w := "UNSAFE "
		if v.Verdict.Safe {
			w = "SAFE "
		}
		out = append(out, w+v.Verdict.Summary)
	}
	return out
}

// TestKnobsMoveTheFailure: a pause shorter than the TTL (or a job that fits
// its TTL) leaves nothing overlapping, and the verdict says so; a pause
// longer than the TTL brings the failure back.
func TestKnobsMoveTheFailure(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    *simulate.Options
		safe    bool
		contain string
	}{
		{"stale-del", &simulate.Options{Pause: 5 * time.Second}, true, "the 5 s pause ended inside the 10 s lease"},
		{"stale-del", &simulate.Options{TTL: 20 * time.Second, Pause: 25 * time.Second}, false, "stale write landed 5 s after its lease ended"},
		{"redlock-pause", &simulate.Options{Pause: 4 * time.Second}, true, "the 4 s pause ended inside the 10 s lease"},
		{"no-renew", &simulate.Options{Job: 6 * time.Second}, true, "the 6 s job fits its 9 s TTL"},
		{"no-renew", &simulate.Options{TTL: 3 * time.Second, Job: 10 * time.Second}, false, "A kept working 7 s past its lease"},
	} {
		_, _, res := render(t, tc.name, tc.opts)
		v := res.Variants[0].Verdict
		if v.Safe != tc.safe || !strings.Contains(v.Summary, tc.contain) {
			t.Errorf("%s %+v: first verdict %+v, want safe=%v and %q", tc.name, *tc.opts, v, tc.safe, tc.contain)
		}
		if v.Safe && v.OverlapMS != 0 {
			t.Errorf("%s: SAFE with %d ms of overlap", tc.name, v.OverlapMS)
		}
	}
}

// TestKnobsRefused: a knob the scenario does not use, and a value out of
// range, are ErrKnob before anything runs.
func TestKnobsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *simulate.Options
		msg  string
	}{
		{"failover", &simulate.Options{TTL: 5 * time.Second}, "failover takes no knobs: --ttl does not apply"},
		{"stale-del", &simulate.Options{Job: 5 * time.Second}, "stale-del does not use --job"},
		{"stale-del", &simulate.Options{RenewScript: script(t, "renew-compare.lua")}, "does not use --renew-script"},
		{"no-renew", &simulate.Options{Pause: 5 * time.Second}, "no-renew does not use --pause"},
		{"redlock-clock", &simulate.Options{Pause: 5 * time.Second}, "redlock-clock takes no knobs"},
		{"stale-del", &simulate.Options{TTL: 500 * time.Millisecond}, "--ttl 500ms: give 1s to 1h"},
		{"stale-del", &simulate.Options{Pause: 2 * time.Hour}, "--pause 2h0m0s"},
		{"stale-del", &simulate.Options{Pause: -time.Second}, "--pause -1s"},
	} {
		_, err := simulate.Run(context.Background(), tc.name, tc.opts)
		if !errors.Is(err, simulate.ErrKnob) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s %+v: err = %v, want ErrKnob saying %q", tc.name, tc.opts, err, tc.msg)
		}
	}
}

// TestReleaseScripts: the learner's release script decides the verdict: a
// plain DEL deletes B's lock, a compare-and-delete does not (and the stale
// write still needs the fence), a script that errors or never returns is
// stopped and reported.
func TestReleaseScripts(t *testing.T) {
	for _, tc := range []struct {
		file    string
		want    []string
		overlap int64
	}{
		{"plain-del.lua", []string{"UNSAFE your plain-del.lua deleted ", "B and C held the lock at the same time for 1.5 s"}, 1500},
		{"compare-and-delete.lua", []string{"UNSAFE your compare-and-delete.lua deleted only its caller's own lock, which fixes the double holder",
			"never two holders at once", "A's stale write landed 2 s after its lease ended, which no release can stop: only fenced writes can"}, 0},
		{"runtime-error.lua", []string{"UNSAFE your runtime-error.lua failed (runtime-error.lua:2: ERR unknown command `COMPAREDEL`"}, 0},
		{"endless.lua", []string{"UNSAFE your endless.lua ran out of time (still running after 1s, stopped; Redis would answer BUSY"}, 0},
	} {
		t.Run(tc.file, func(t *testing.T) {
			start := time.Now()
			_, _, res := render(t, "stale-del", &simulate.Options{ReleaseScript: script(t, tc.file)})
			if d := time.Since(start); d > time.Minute {
				t.Fatalf("took %s: the script was not stopped", d)
			}
			if len(res.Variants) != 2 || res.Variants[0].Technique != "yours" || res.Variants[1].Technique != "correct" || !res.Variants[1].Verdict.Safe {
				t.Fatalf("variants: %+v", res.Variants)
			}
			got := verdicts(res)[0]
			// One verdict word: what the script fixed is said in
			// words, never as a second SAFE inside an UNSAFE line.
			if w := strings.Count(strings.ToUpper(got), "SAFE"); w != 1 {
				t.Errorf("verdict %q has %d verdict words, want 1", got, w)
			}
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("verdict %q does not contain %q", got, w)
				}
			}
			if res.Variants[0].Verdict.OverlapMS != tc.overlap {
				t.Errorf("overlap %d ms, want %d", res.Variants[0].Verdict.OverlapMS, tc.overlap)
			}
			var eval int
			for _, e := range res.Variants[0].Events {
				if strings.HasPrefix(e.Command, "EVAL <"+tc.file+"> 1 lock:order:42 ") {
					eval++
				}
			}
			if eval != 2 {
				t.Errorf("%d EVALs of the script in the timeline, want A's and B's release", eval)
			}
		})
	}
}

// TestRenewScripts: a renewal that does not compare the token extends B's
// lock for a stalled A; one that compares refuses, and the watchdog stops
// A's job.
func TestRenewScripts(t *testing.T) {
	_, _, res := render(t, "no-renew", &simulate.Options{RenewScript: script(t, "renew-pexpire.lua")})
	if got := verdicts(res)[0]; !strings.HasPrefix(got, "UNSAFE your renew-pexpire.lua renewed B's lock for A; A and B held the lock at the same time for 6.5 s") {
		t.Errorf("plain PEXPIRE: %s", got)
	}
	_, _, res = render(t, "no-renew", &simulate.Options{RenewScript: script(t, "renew-compare.lua")})
	if got := verdicts(res)[0]; !strings.HasPrefix(got, "SAFE your renew-compare.lua refused to renew a lock that was no longer A's") {
		t.Errorf("compare and renew: %s", got)
	}
}

// TestScriptSyntaxError: a script that does not compile is refused before
// anything runs, naming its line.
func TestScriptSyntaxError(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "scripts", "syntax-error.lua"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = simulate.CompileScript("syntax-error.lua", string(src))
	if !errors.Is(err, simulate.ErrScript) || !strings.Contains(err.Error(), "line:3") {
		t.Fatalf("err = %v, want ErrScript naming line 3", err)
	}
}
