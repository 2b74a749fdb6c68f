package chaos_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/chaos"
	"github.com/lockctl/lockctl/pkg/lock"
)

// TestBaseline: 16 holders (8 lockctl run processes, 8 pkg/lock clients)
// on one lock without faults: no overlap, no stale write, a linearizable
// history. The unprotected variant (SET NX PX without renewal, DEL release,
// work longer than the TTL) must overlap and fail the check.
func TestBaseline(t *testing.T) {
	srv := startRedis(t)
	ttl := 2 * time.Second
	rounds, procRounds := 3, 2
	if chaos.Full() {
		rounds, procRounds = 12, 6
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	e := chaos.NewEnv(t, "1.baseline", lockctlBin)
	l := lock.New(client(t, srv.Addr, 2*time.Second), &lock.Options{PollInterval: 50 * time.Millisecond})
	cs := newClients(e, 8, 0, l, "baseline", ttl, time.Minute, 40*time.Millisecond)
	var wg sync.WaitGroup
	var procs []*chaos.Proc
	wg.Add(1)
	go func() {
		defer wg.Done()
		procs = procLoop(e, 8, procRounds, 0, func(w int) chaos.ProcSpec {
			return chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: "baseline",
				Flags: []string{"-w", "2m", "--ttl", ttl.String()}, Work: chaos.Jitter(e.Rand(100+w), 40*time.Millisecond, 0.5), Writes: 3, TTL: ttl}
		})
	}()
	cycles(ctx, e, cs, rounds)
	wg.Wait()

	f := e.Collect("lockctl", ttl, 16)
	r, det := renewalsOf(cs)
	f.Renewals += r
	f.Detect = det
	verdict := f.Check(e)
	f.Note("critical sections of about 40ms against a 2s TTL: few or no renewals; the fault scenarios exercise them")
	u := f.Unfenced
	ok := u.Overlaps == 0 && u.LostUpdates == 0 && f.Fenced.AcceptedStale == 0 && f.Fenced.StaleAttempts == 0 && verdict == "ok" && exits(procs)[0] == len(procs)
	f.Verdict = verdictOf(ok, "mutual exclusion held: no overlap, no stale write, linearizable")
	chaos.Publish(f)
	if u.Overlaps != 0 || u.LostUpdates != 0 {
		t.Errorf("overlaps %d, lost updates %d; want 0", u.Overlaps, u.LostUpdates)
	}
	if f.Fenced.AcceptedStale != 0 || f.Fenced.StaleAttempts != 0 || f.Fenced.Rejected != 0 {
		t.Errorf("fenced store: %+v; want no stale write and no rejection", f.Fenced)
	}
	if verdict != "ok" {
		t.Errorf("porcupine: %s", verdict)
	}
	if got := exits(procs); got[0] != len(procs) {
		t.Errorf("lockctl run exits %v, want all 0\n%s", got, procDetail(procs))
	}
	if want := rounds*8 + procRounds*8; f.Succeeded != want || u.Counter != want {
		t.Errorf("acquired %d, counter %d; want %d each", f.Succeeded, u.Counter, want)
	}

	// The unprotected variant on its own lock and resource.
	ue := chaos.NewEnv(t, "1.baseline", lockctlBin)
	uttl := 100 * time.Millisecond
	ucs := unprotected(ue, 8, 0, client(t, srv.Addr, 2*time.Second), "baseline-unprotected", uttl, 10*time.Second, 250*time.Millisecond)
	cycles(ctx, ue, ucs, rounds)
	uf := ue.Collect("unprotected: SET NX PX 100ms, no renewal, DEL", uttl, 8)
	uverdict := uf.Check(ue)
	uf.Verdict = verdictOf(uf.Unfenced.Overlaps > 0 && uverdict == "illegal", "fails as it must: overlaps, lost updates, not linearizable")
	chaos.Publish(uf)
	if uf.Unfenced.Overlaps == 0 || uverdict != "illegal" {
		t.Errorf("the unprotected variant did not fail: overlaps %d, porcupine %s", uf.Unfenced.Overlaps, uverdict)
	}
}

func verdictOf(ok bool, what string) string {
	if ok {
		return "PASS: " + what
	}
	return "FAIL: expected " + what
}
