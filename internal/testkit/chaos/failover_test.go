package chaos_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/chaos"
	"github.com/lockctl/lockctl/internal/testkit/faultproxy"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

// replicaVia starts a replica of master whose replication link goes through
// a fault proxy, and waits until it is in sync.
func replicaVia(t *testing.T, master *redistest.Server) (*redistest.Server, *faultproxy.Proxy) {
	t.Helper()
	p, err := faultproxy.New(master.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	host, port, _ := strings.Cut(p.Addr(), ":")
	r := startRedis(t, "--replicaof", host, port)
	waitSync(t, r)
	return r, p
}

func waitSync(t *testing.T, r *redistest.Server) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		info, _ := r.Do("INFO", "replication")
		if strings.Contains(info, "master_link_status:up") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatal("replica never synced")
}

// TestFailover: the replication link is blackholed, holder a takes the lock
// on the master, the master is killed and the replica promoted by hand;
// holder b then locks on the new master. Without --wait-replicas the lock
// is lost in the failover and b gets in while a still works (a finds out at
// its deadline, exit 76); the fences b gets must still be newer than a's,
// so the fenced store refuses a and takes b. With --wait-replicas a is never
// granted the unreplicated lock at all.
func TestFailover(t *testing.T) {
	ttl := 2 * time.Second
	for _, wait := range []bool{false, true} {
		name, label := "5.failover-manual", "lockctl"
		var aFlags []string
		if wait {
			label = "lockctl --wait-replicas 1:300ms"
			aFlags = []string{"--wait-replicas", "1:300ms"}
		}
		t.Run(label, func(t *testing.T) {
			m := startRedis(t)
			r, link := replicaVia(t, m)
			e := chaos.NewEnv(t, name, lockctlBin)
			lname := "failover"
			// Earlier holders, replicated, move the fence counter on.
			for i := 0; i < 3; i++ {
				e.Spawn(10+i, chaos.ProcSpec{Global: []string{"--url", m.URL}, Name: lname, TTL: ttl,
					Flags: []string{"-n", "--ttl", ttl.String()}, Work: 10 * time.Millisecond, Writes: 1}).Wait()
			}
			_, _ = m.Do("WAIT", "1", "2000") // best effort, as WAIT's timeout is
			link.Blackhole(true)
			a := e.Spawn(0, chaos.ProcSpec{Global: append([]string{"--url", m.URL, "--timeout", "1s"}, aFlags...), Name: lname, TTL: ttl,
				Flags: []string{"-n", "--ttl", ttl.String()}, Work: 3 * ttl, Writes: 12})
			entered := e.WaitEntered(a.Holder, 3*time.Second)
			faultAt := e.Rec.Now()
			m.Kill()
			if res, err := r.Do("REPLICAOF", "NO", "ONE"); err != nil || res != "OK" {
				t.Fatalf("promote: %q %v", res, err)
			}
			b := e.Spawn(1, chaos.ProcSpec{Global: []string{"--url", r.URL, "--timeout", "500ms"}, Name: lname, TTL: ttl,
				Flags: []string{"-w", "20s", "--ttl", ttl.String()}, Work: ttl / 2, Writes: 2})
			a.Wait()
			b.Wait()
			f := e.Collect(label, ttl, 5)
			if entered {
				f.Detect = []time.Duration{a.End - faultAt}
			}
			if a.Exit == 76 {
				f.ChildrenKilled = 1
			}
			f.Recover = e.Res.Entered(b.Holder) - faultAt
			fs := f.Fenced
			if fs.Duplicates > 0 || fs.Regressions > 0 {
				f.Note("the promoted replica issued fences already issued by the old master (%d duplicate, %d lower): the fenced store refused the new holder and took %d stale write(s) from the old one", fs.Duplicates, fs.Regressions, fs.AcceptedStale)
			}
			f.Note("a granted: %v, exit %d; b exit %d, entered %v after the master died", entered, a.Exit, b.Exit, f.Recover)
			var ok bool
			if wait {
				ok = !entered && a.Exit == 69 && b.Exit == 0 && f.Unfenced.Overlaps == 0 && fs.AcceptedStale == 0
				f.Verdict = verdictOf(ok, "the unreplicated grant refused (69): a never starts, no overlap")
			} else {
				ok = entered && a.Exit == 76 && fs.AcceptedStale == 0 && fs.Regressions == 0 && fs.Duplicates == 0 && fs.RejectedFresh == 0
				f.Verdict = verdictOf(ok, "lock lost in the failover, detected (76); b's fence newer than a's; no stale write accepted")
				f.Note("the overlap on the unfenced store is the failover's: the lock was never replicated, and only fencing can protect the data")
			}
			chaos.Publish(f)
			t.Logf("a: %s\nb: %s\nfenced %+v", a, b, fs)
			if fs.AcceptedStale != 0 {
				t.Errorf("accepted stale writes: %d", fs.AcceptedStale)
			}
			if b.Exit != 0 {
				t.Errorf("b exit %d: %s", b.Exit, b)
			}
			if wait {
				if entered || a.Exit != 69 {
					t.Errorf("--wait-replicas with a blackholed replica: a started %v, exit %d; want no start, 69", entered, a.Exit)
				}
				return
			}
			if !entered || a.Exit != 76 {
				t.Errorf("a started %v, exit %d; want started, then 76", entered, a.Exit)
			}
			if fs.Regressions != 0 || fs.Duplicates != 0 || fs.RejectedFresh != 0 {
				t.Errorf("fences repeated or went backwards after the failover: regressions %d, duplicates %d, newest holder refused %d", fs.Regressions, fs.Duplicates, fs.RejectedFresh)
			}
		})
	}
}

// TestSentinelFailover: master, replica and three sentinels; a lockctl run
// holder holds the lock through `SENTINEL FAILOVER`. The lock key was
// replicated before, so the promoted replica has it. Sentinel does not
// pause the old master: it takes writes until Sentinel demotes it, seconds
// later, and clients switch only at +switch-master, about a second after
// the replica stopped replicating (Sentinel confirms the promotion by
// polling). Renewals sent meanwhile are lost, and the promoted replica's
// copy of the lease runs out a TTL after the last one it replicated. run
// renews at once on +switch-master. Without --wait-replicas a slow switch
// can still lose the lease, safely (76). With --wait-replicas 1 a renewal
// counts only once a replica acknowledged it, and the promoted master has
// none in sync until Sentinel demotes the old one and it resyncs, seconds
// later: a 2s lease is then lost at its deadline (76), safely. Either way
// nobody else may get in while it works, and the waiter gets the lock
// after with a newer fence.
func TestSentinelFailover(t *testing.T) {
	for _, wait := range []bool{false, true} {
		label := "lockctl --sentinel (3 sentinels)"
		var extra []string
		if wait {
			label += " --wait-replicas 1"
			extra = []string{"--wait-replicas", "1"}
		}
		t.Run(label, func(t *testing.T) {
			sentinelFailover(t, label, extra, wait)
		})
	}
}

func sentinelFailover(t *testing.T, label string, extra []string, wait bool) {
	r, err := redistest.StartReplicated("chaos", 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	ttl := 2 * time.Second
	e := chaos.NewEnv(t, "5.failover-sentinel", lockctlBin)
	global := append([]string{"--sentinel", strings.Join(r.SentinelAddrs, ","), "--sentinel-master", "chaos", "--timeout", "500ms"}, extra...)
	for i := 0; i < 2; i++ {
		e.Spawn(10+i, chaos.ProcSpec{Global: global, Name: "sf", TTL: ttl,
			Flags: []string{"-n", "--ttl", ttl.String()}, Work: 10 * time.Millisecond, Writes: 1}).Wait()
	}
	a := e.Spawn(0, chaos.ProcSpec{Global: global, Name: "sf", TTL: ttl,
		Flags: []string{"-n", "--ttl", ttl.String()}, Work: 4 * ttl, Writes: 16})
	if !e.WaitEntered(a.Holder, 10*time.Second) {
		t.Fatalf("holder a never started: %s", a)
	}
	b := e.Spawn(1, chaos.ProcSpec{Global: global, Name: "sf", TTL: ttl,
		Flags: []string{"-w", "60s", "--ttl", ttl.String()}, Work: ttl / 2, Writes: 2})
	time.Sleep(ttl / 2)
	_, _ = r.Master.Do("WAIT", "1", "1000") // best effort, as WAIT's timeout is
	faultAt := e.Rec.Now()
	if res, err := r.Sentinels[0].Do("SENTINEL", "FAILOVER", "chaos"); err != nil || res != "OK" {
		t.Fatalf("SENTINEL FAILOVER: %q %v", res, err)
	}
	promoted := time.Duration(-1)
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if info, _ := r.Replica.Do("INFO", "replication"); strings.Contains(info, "role:master") {
			promoted = e.Rec.Now() - faultAt
			break
		}
	}
	a.Wait()
	b.Wait()
	f := e.Collect(label, ttl, 4)
	verdict := f.Check(e)
	fs := f.Fenced
	f.Note("replica promoted %v after SENTINEL FAILOVER; a exit %d, b exit %d", promoted, a.Exit, b.Exit)
	kept := a.Exit == 0 || a.Exit == 76
	// A waiter whose attempt meets the switch (the client closes its
	// connections to the old master) tries again within --timeout and
	// reaches the new master. With --wait-replicas the new master has no
	// replica in sync until Sentinel demotes the old one, seconds later:
	// no grant can be acknowledged meanwhile, and the waiter may end on
	// that (69).
	bOK := b.Exit == 0 || (wait && b.Exit == 69)
	if b.Exit == 69 {
		f.Note("the waiter (-w 60s) exited 69: no replica of the new master acknowledged its grant")
	}
	ok := kept && bOK && f.Unfenced.Overlaps == 0 && fs.AcceptedStale == 0 && fs.Duplicates == 0 && fs.Regressions == 0 && verdict == "ok"
	if wait {
		f.Verdict = verdictOf(ok, "the lease rides through or, with no replica of the new master acknowledging a renewal, is lost safely (76); the waiter gets a newer fence after; linearizable")
	} else {
		f.Verdict = verdictOf(ok, "the lease rides through or is lost safely (76); the waiter gets a newer fence after; linearizable")
	}
	chaos.Publish(f)
	t.Logf("a: %s\nb: %s\nfenced %+v", a, b, fs)
	if promoted < 0 {
		t.Fatal("the replica was never promoted")
	}
	if !kept || !bOK {
		t.Errorf("a exit %d, b exit %d; want a 0 (renewals follow the new master) or 76 (lost safely), b 0 (with --wait-replicas 69 too)", a.Exit, b.Exit)
	}
	if f.Unfenced.Overlaps != 0 || fs.AcceptedStale != 0 || fs.Duplicates != 0 || fs.Regressions != 0 || verdict != "ok" {
		t.Errorf("overlaps %d, fenced %+v, porcupine %s", f.Unfenced.Overlaps, fs, verdict)
	}
}

// TestSentinelSplitBrain: master, replica and three sentinels, with a fault
// proxy between the master and everything that watches or replicates it.
// Holder a runs on the master (--url: it keeps reaching it); the proxy
// then blackholes, the sentinels promote the replica, and the old master,
// cut off, goes on taking a's renewals. Waiter b then locks on the new
// master, where a's lease runs out a TTL after the last renewal it
// replicated.
//
// Without --wait-replicas, a renews on the old master to the end (exit 0)
// while b holds the lock: an overlap no client of that master can see.
// With --wait-replicas 1 a renewal no replica acknowledged does not move
// a's deadline, so a loses the lease (76) and stops its command before b
// gets the lock: no overlap.
func TestSentinelSplitBrain(t *testing.T) {
	full(t)
	for _, wait := range []bool{false, true} {
		label := "lockctl --url old master"
		var extra []string
		if wait {
			label += " --wait-replicas 1"
			extra = []string{"--wait-replicas", "1"}
		}
		t.Run(label, func(t *testing.T) { splitBrain(t, label, extra, wait) })
	}
}

func splitBrain(t *testing.T, label string, extra []string, wait bool) {
	m := startRedis(t)
	r, link := replicaVia(t, m)
	_, port, _ := strings.Cut(link.Addr(), ":")
	sentinels, err := redistest.StartSentinels("split", atoiOrFail(t, port), 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, s := range sentinels {
			s.Stop()
		}
	})
	ttl := 3 * time.Second
	e := chaos.NewEnv(t, "5.failover-split-brain", lockctlBin)
	a := e.Spawn(0, chaos.ProcSpec{Global: append([]string{"--url", m.URL}, extra...), Name: "sb", TTL: ttl,
		Flags: []string{"-n", "--ttl", ttl.String()}, Work: 3 * ttl, Writes: 12})
	if !e.WaitEntered(a.Holder, 10*time.Second) {
		t.Fatalf("holder a never started: %s", a)
	}
	time.Sleep(ttl / 6)
	cut := e.Rec.Now()
	link.Blackhole(true)
	promoted := time.Duration(-1)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if info, _ := r.Do("INFO", "replication"); strings.Contains(info, "role:master") {
			promoted = e.Rec.Now() - cut
			break
		}
	}
	if promoted < 0 {
		t.Fatal("the sentinels never promoted the replica")
	}
	b := e.Spawn(1, chaos.ProcSpec{Global: []string{"--url", r.URL}, Name: "sb", TTL: ttl,
		Flags: []string{"-w", "30s", "--ttl", ttl.String()}, Work: ttl / 3, Writes: 2})
	a.Wait()
	b.Wait()
	f := e.Collect(label, ttl, 2)
	left, got := e.Res.LeftAt(a.Holder), e.Res.Entered(b.Holder)
	f.Detect = []time.Duration{a.End - cut}
	if a.Exit == 76 {
		f.ChildrenKilled = 1
	}
	f.Recover = got - cut
	warned := strings.Count(a.Stderr.String(), "replicas acknowledged")
	f.Note("link cut; replica promoted %v after; a exit %d, its command left %v after the cut; b exit %d, entered %v after the cut; a warned of unacknowledged renewals %d time(s)",
		msOf(promoted), a.Exit, msOf(left-cut), b.Exit, msOf(got-cut), warned)
	u := f.Unfenced
	var ok bool
	if wait {
		ok = a.Exit == 76 && b.Exit == 0 && got >= left && u.Overlaps == 0
		f.Verdict = verdictOf(ok, "unacknowledged renewals do not keep the lease: a loses it (76) before b gets it; no overlap")
	} else {
		ok = a.Exit == 0 && b.Exit == 0 && u.Overlaps > 0
		f.Verdict = verdictOf(ok, "the unprotected variant: a renews on the cut-off master to the end (0) while b holds the lock; overlap")
	}
	chaos.Publish(f)
	t.Logf("a: %s\nb: %s\nunfenced %+v", a, b, u)
	if wait {
		if a.Exit != 76 || b.Exit != 0 || got < left || u.Overlaps != 0 {
			t.Errorf("a exit %d (want 76), b exit %d (want 0); a's command left at %v, b entered at %v; overlaps %d (want 0)",
				a.Exit, b.Exit, left, got, u.Overlaps)
		}
		return
	}
	if a.Exit != 0 || u.Overlaps == 0 {
		t.Errorf("without --wait-replicas: a exit %d, overlaps %d; want 0 and an overlap (the scenario must be able to fail)", a.Exit, u.Overlaps)
	}
}

func atoiOrFail(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
