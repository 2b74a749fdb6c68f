package chaos

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Seed is the run's seed: LOCKCTL_CHAOS_SEED when set, else the clock. Every
// scenario derives its random streams and its fault schedule from it, so a
// failing seed replays the same schedule.
func Seed() uint64 {
	seedOnce.Do(func() {
		if s := os.Getenv("LOCKCTL_CHAOS_SEED"); s != "" {
			n, err := strconv.ParseUint(s, 10, 64)
			if err != nil {
				panic("LOCKCTL_CHAOS_SEED must be an unsigned integer: " + s)
			}
			seed = n
			return
		}
		seed = uint64(time.Now().UnixNano()) % 1_000_000_000
	})
	return seed
}

var (
	seedOnce sync.Once
	seed     uint64
)

// Full reports whether the full tier runs (LOCKCTL_CHAOS=full).
func Full() bool { return os.Getenv("LOCKCTL_CHAOS") == "full" }

// Env is one scenario's run: its recorder, resource, random streams and the
// processes to clean up.
type Env struct {
	T       testing.TB
	Name    string
	Seed    uint64
	Rec     *Recorder
	Res     *Resource
	Lockctl string // the built lockctl binary
	TestBin string // this test binary, which doubles as the critical section
	Started time.Time

	dir string // run reports of the lockctl processes

	mu       sync.Mutex
	procs    []*Proc
	renewals int64 // renewals of finished lockctl processes
}

// NewEnv starts a scenario: a fresh recorder and resource, cleaned up with
// the test.
func NewEnv(t testing.TB, name, lockctl string) *Env {
	rec := NewRecorder()
	res, err := NewResource(rec)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	e := &Env{T: t, Name: name, Seed: Seed(), Rec: rec, Res: res, Lockctl: lockctl, TestBin: self, Started: time.Now(), dir: t.TempDir()}
	t.Cleanup(func() {
		e.mu.Lock()
		procs := e.procs
		e.mu.Unlock()
		for _, p := range procs {
			select {
			case <-p.done:
			default:
				// Teardown: a holder that exited meanwhile is no error.
				_ = p.SignalGroup(syscall.SIGCONT)
				_ = p.SignalGroup(syscall.SIGKILL)
				p.Wait()
			}
		}
		res.Close()
	})
	t.Logf("%s: seed %d (replay with LOCKCTL_CHAOS_SEED=%d)", name, e.Seed, e.Seed)
	return e
}

func (e *Env) track(p *Proc) {
	e.mu.Lock()
	e.procs = append(e.procs, p)
	e.mu.Unlock()
}

// Rand is the random stream of one worker of this scenario: the same seed,
// scenario and worker give the same numbers.
func (e *Env) Rand(worker int) *rand.Rand {
	h := fnv.New64a()
	h.Write([]byte(e.Name))
	return rand.New(rand.NewPCG(e.Seed, h.Sum64()+uint64(worker)))
}

// Jitter is d scaled by a factor in [1-f, 1+f] from r.
func Jitter(r *rand.Rand, d time.Duration, f float64) time.Duration {
	return time.Duration(float64(d) * (1 - f + 2*f*r.Float64()))
}

// Quantiles returns p50, p99 and max of ds (zeros when empty).
func Quantiles(ds []time.Duration) (p50, p99, max time.Duration) {
	if len(ds) == 0 {
		return 0, 0, 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	at := func(q float64) time.Duration { return s[int(q*float64(len(s)-1)+0.5)] }
	return at(0.5), at(0.99), s[len(s)-1]
}

// Figures are one variant of one scenario, as the report shows them.
type Figures struct {
	Scenario string
	Variant  string // "lockctl" or the unprotected variant's description
	Seed     uint64
	Duration time.Duration
	TTL      time.Duration
	Holders  int

	Attempted, Succeeded, Busy, Errors, Unknown int
	Renewals                                    int64
	Losses                                      int
	Detect                                      []time.Duration
	ChildrenKilled                              int

	Unfenced UnfencedStats
	Fenced   FencedStats
	Checked  string // porcupine verdict, "" when not checked
	Recover  time.Duration
	Verdict  string
	Notes    []string
}

// Collect fills the figures every scenario shares from the run so far.
func (e *Env) Collect(variant string, ttl time.Duration, holders int) *Figures {
	acq := e.Rec.Count(Acquire)
	f := &Figures{Scenario: e.Name, Variant: variant, Seed: e.Seed, Duration: time.Since(e.Started), TTL: ttl, Holders: holders,
		Succeeded: acq[OK], Busy: acq[Busy], Errors: acq[Fail], Unknown: acq[Unknown],
		Unfenced: e.Res.Unfenced(), Fenced: e.Res.FencedFigures()}
	f.Attempted = f.Succeeded + f.Busy + f.Errors + f.Unknown
	e.mu.Lock()
	f.Renewals = e.renewals
	e.mu.Unlock()
	for _, op := range e.Rec.Ops() {
		if op.Kind == Lost {
			f.Losses++
		}
	}
	return f
}

// Check runs porcupine on the history and stores the verdict.
func (f *Figures) Check(e *Env) string {
	f.Checked = Linearizable(e.Rec.Ops(), 20*time.Second)
	return f.Checked
}

// Note adds a line to the figures' notes.
func (f *Figures) Note(format string, args ...any) {
	f.Notes = append(f.Notes, fmt.Sprintf(format, args...))
}

var (
	reportMu sync.Mutex
	report   []*Figures
)

// Publish adds figures to the report (written by WriteReport).
func Publish(f *Figures) {
	reportMu.Lock()
	report = append(report, f)
	reportMu.Unlock()
}

// Failed lists, one line each, the published figures whose verdict is a
// failure: a run that published one fails, even where its test asserted
// less than the verdict does.
func Failed() []string {
	reportMu.Lock()
	defer reportMu.Unlock()
	var out []string
	for _, f := range report {
		if !strings.HasPrefix(f.Verdict, "PASS") {
			out = append(out, fmt.Sprintf("%s (%s): %s", f.Scenario, f.Variant, f.Verdict))
		}
	}
	return out
}
