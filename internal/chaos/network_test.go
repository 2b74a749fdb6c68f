package chaos_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/chaos"
	"github.com/lockctl/lockctl/internal/faultproxy"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
)

// netFault is one network fault between a holder and Redis, held for a
// while through the proxy.
type netFault struct {
	name  string
	apply func(p *faultproxy.Proxy, d time.Duration)
	full  bool
}

var netFaults = []netFault{
	{name: "6.blackhole", apply: func(p *faultproxy.Proxy, d time.Duration) {
		p.Blackhole(true)
		time.Sleep(d)
		p.Blackhole(false)
	}},
	{name: "6.reset", apply: func(p *faultproxy.Proxy, d time.Duration) {
		// Every connection is reset, and every new one at once, for d.
		p.Refuse(true)
		p.Reset()
		time.Sleep(d)
		p.Refuse(false)
	}},
	{name: "6.slow-replies", full: true, apply: func(p *faultproxy.Proxy, d time.Duration) {
		p.SetSlowReplies(d)
		time.Sleep(d)
		p.SetSlowReplies(0)
	}},
	{name: "6.latency-half-ttl", full: true, apply: func(p *faultproxy.Proxy, d time.Duration) {
		p.SetLatency(500 * time.Millisecond)
		time.Sleep(d)
		p.SetLatency(0)
	}},
}

// TestNetworkFaults: a holder reaches Redis through the fault proxy, a
// second one directly. While the fault lasts (2x TTL) the proxied holder
// must give up by its local deadline: lockctl run kills its child and exits
// 76 before the server's lease runs out, so the direct holder, who gets the
// lock after expiry, never overlaps it. In-process holders run through the
// same proxy and their history must stay linearizable. A one-shot `lockctl
// lock` through the fault exits 69 within --timeout.
func TestNetworkFaults(t *testing.T) {
	srv := startRedis(t)
	ttl := time.Second
	for _, nf := range netFaults {
		for _, ignore := range []bool{false, true} {
			netScenario(t, srv, ttl, nf, ignore)
		}
	}
}

func netScenario(t *testing.T, srv *redistest.Server, ttl time.Duration, nf netFault, ignore bool) {
	label := "lockctl"
	onLost := "term"
	if ignore {
		label, onLost = "unprotected: --on-lost ignore", "ignore"
	}
	{
		t.Run(nf.name+"/"+label, func(t *testing.T) {
			if nf.full || (ignore && nf.name != "6.blackhole") {
				full(t)
			}
			p, err := faultproxy.New(srv.Addr)
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			e := chaos.NewEnv(t, nf.name, lockctlBin)
			lname := "net-" + itoa(int(time.Now().UnixNano()%1e6))
			via := urlOf(p.Addr())
			a := e.Spawn(0, chaos.ProcSpec{Global: []string{"--url", via, "--timeout", "500ms"}, Name: lname, TTL: ttl,
				Flags: []string{"-n", "--ttl", ttl.String(), "--on-lost", onLost}, Work: 5 * ttl, Writes: 20})
			if !e.WaitEntered(a.Holder, 10*time.Second) {
				t.Fatalf("holder a never started: %s", a)
			}
			// In-process holders through the proxy, on the same lock.
			l := lock.New(client(t, p.Addr(), 300*time.Millisecond), &lock.Options{PollInterval: 50 * time.Millisecond})
			cs := newClients(e, 4, 0, l, lname, ttl, 3*time.Second, 300*time.Millisecond)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			var wg sync.WaitGroup
			wg.Add(1)
			go func() { defer wg.Done(); cycles(ctx, e, cs, 4) }()

			time.Sleep(ttl / 2)
			faultAt := e.Rec.Now()
			b := e.Spawn(1, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: lname, TTL: ttl,
				Flags: []string{"-w", "20s", "--ttl", ttl.String()}, Work: ttl / 2, Writes: 2})
			var oneShot time.Duration
			var oneShotExit int
			wg.Add(1)
			go func() {
				defer wg.Done()
				time.Sleep(100 * time.Millisecond)
				start := time.Now()
				err := exec.Command(lockctlBin, "lock", lname+"-oneshot", "--url", via, "--timeout", "1s", "-n").Run()
				oneShot, oneShotExit = time.Since(start), exitOf(err)
			}()
			nf.apply(p, 2*ttl)
			a.Wait()
			b.Wait()
			wg.Wait()

			f := e.Collect(label, ttl, 6)
			r, det := renewalsOf(cs)
			f.Renewals += r
			f.Detect = det
			f.Detect = append(f.Detect, a.End-faultAt)
			if a.Exit == 76 {
				f.ChildrenKilled = 1
			}
			verdict := f.Check(e)
			lastA := e.Res.LastAct(a.Holder)
			f.Note("a exit %d %v after the fault began (its child last acted %v after); b exit %d; one-shot lock exit %d after %v",
				a.Exit, a.End-faultAt, lastA-faultAt, b.Exit, oneShotExit, oneShot.Round(time.Millisecond))
			ok := a.Exit == 76 && f.Unfenced.Overlaps == 0 && f.Fenced.AcceptedStale == 0 && verdict == "ok" && oneShotExit == 69
			t.Logf("a: %s\nb: %s\nfigures: %+v", a, b, f)
			if ignore {
				f.ChildrenKilled = 0
				f.Verdict = verdictOf(f.Unfenced.Overlaps > 0 && verdict == "illegal", "fails as it must: the child works on after the lease, overlaps, not linearizable")
				chaos.Publish(f)
				if f.Unfenced.Overlaps == 0 || verdict != "illegal" {
					t.Errorf("--on-lost ignore did not fail: overlaps %d, porcupine %s", f.Unfenced.Overlaps, verdict)
				}
				return
			}
			f.Verdict = verdictOf(ok, "the holder gave up by its local deadline; no overlap, no stale write, linearizable; one-shot exit 69")
			chaos.Publish(f)
			if a.Exit != 76 {
				t.Errorf("a exit %d, want 76 (lease lost): %s", a.Exit, a)
			}
			// The deadline is at most TTL-margin after the fault began; a
			// quarter TTL more covers a write already in flight.
			if lastA > faultAt+ttl+ttl/4 {
				t.Errorf("a's child acted %v after the fault began, past any lease of %v", lastA-faultAt, ttl)
			}
			if f.Unfenced.Overlaps != 0 || f.Fenced.AcceptedStale != 0 {
				t.Errorf("overlaps %d, accepted stale %d; want 0", f.Unfenced.Overlaps, f.Fenced.AcceptedStale)
			}
			if verdict != "ok" {
				t.Errorf("porcupine: %s", verdict)
			}
			if oneShotExit != 69 || oneShot > 4*time.Second {
				t.Errorf("one-shot lock through the fault: exit %d after %v, want 69 within --timeout 1s (plus slack)", oneShotExit, oneShot)
			}
		})
	}
}

func exitOf(err error) int {
	if err == nil {
		return 0
	}
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	return -1
}

// TestLateGrant: the grant's reply arrives after the lease's local deadline
// (replies slowed to 2x TTL, the per-call timeout longer than that). The
// lease may already be gone on the server, so lockctl must not start the
// command on it.
func TestLateGrant(t *testing.T) {
	srv := startRedis(t)
	ttl := time.Second
	p, err := faultproxy.New(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	e := chaos.NewEnv(t, "6.late-grant", lockctlBin)
	p.SetSlowReplies(2 * ttl)
	report := filepath.Join(t.TempDir(), "report.json")
	a := e.Spawn(0, chaos.ProcSpec{Global: []string{"--url", urlOf(p.Addr()), "--timeout", "3s"}, Name: "late", TTL: ttl,
		Flags: []string{"-n", "--ttl", ttl.String(), "--report-file", report}, Work: ttl, Writes: 2})
	a.Wait()
	// The child may be killed before it reaches the resource: the run
	// report and exit 76 ("lost while the child ran") also prove a start.
	var rep struct {
		ChildExit   *int    `json:"child_exit"`
		ChildSignal *string `json:"child_signal"`
	}
	if b, err := os.ReadFile(report); err == nil {
		json.Unmarshal(b, &rep)
	}
	entered := e.Res.Entered(a.Holder) >= 0 || a.Exit == 76 || rep.ChildExit != nil || rep.ChildSignal != nil
	f := e.Collect("lockctl", ttl, 1)
	f.Note("grant reply delayed 2x TTL: the command started: %v; exit %d", entered, a.Exit)
	f.Verdict = verdictOf(!entered, "no command started on a grant that arrived after its local deadline")
	chaos.Publish(f)
	t.Logf("a: %s", a)
	if entered {
		t.Errorf("lockctl started the command on a grant whose reply came %v after it was sent, past the lease's local deadline (ttl %v)", 2*ttl, ttl)
	}
}
