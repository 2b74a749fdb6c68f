package chaos_test

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/testkit/chaos"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
)

// TestShared: shared locks (lockctl run --shared) across real processes.
// Readers and writers tell the store what they are, whatever lock they
// take, so the store can tell the sharing the lock allows (readers inside
// together) from what it must prevent (a writer inside with anyone).
//
//   - mix: 12 readers --shared and 4 exclusive writers, several rounds: no
//     writer ever inside with anyone, readers inside together, every writer
//     in. The unprotected variant, writers that take the lock --shared too,
//     lets a writer in with the others.
//   - order: 5 readers inside together; a writer that waits gets in only
//     after all 5 left, and a sixth reader that arrives while the writer
//     waits gets in only after the writer left; the same with everyone
//     --fifo, where a reader waits only for the writers ahead of it.
//   - pause: a reader stopped past its TTL loses its slot to a writer; once
//     resumed, lockctl kills its child and exits 76, and the reads its child
//     made after the writer came are refused by the shared fence check.
//   - kill9: a reader killed with kill -9 frees its slot by its TTL for a
//     waiting writer; a waiting writer killed with kill -9 keeps new readers
//     out only until its listing among the waiting writers expires.
func TestShared(t *testing.T) {
	srv := startRedis(t)
	t.Run("12.shared-mix", func(t *testing.T) { sharedMix(t, srv) })
	t.Run("12.shared-order", func(t *testing.T) { sharedOrder(t, srv, false) })
	t.Run("12.shared-order-fifo", func(t *testing.T) { sharedOrder(t, srv, true) })
	sharedPause(t, srv)
	sharedKilledReader(t, srv)
	t.Run("12.shared-kill9-waiting-writer", func(t *testing.T) { sharedKilledWaitingWriter(t, srv) })
}

// uniqueName is a lock name of its own for each variant, so that one
// variant's leftovers (a slot, a listing) never reach the next.
func uniqueName(prefix string) string {
	return prefix + "-" + itoa(int(time.Now().UnixNano()%1e9))
}

func sharedMix(t *testing.T, srv *redistest.Server) {
	ttl := 5 * time.Second
	rounds := 2
	if chaos.Full() {
		rounds = 6
	}
	const readers, writers = 12, 4
	// Workers 0..3 are writers, the rest readers; each runs rounds
	// processes one after another, so holder p<id> is a writer when id <
	// writers*rounds (procLoop numbers them worker by worker).
	isWriter := func(p *chaos.Proc) bool { return p.ID < writers*rounds }
	run := func(e *chaos.Env, name string, writersShared bool) []*chaos.Proc {
		return procLoop(e, readers+writers, rounds, 0, func(w int) chaos.ProcSpec {
			r := e.Rand(w)
			s := chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: ttl,
				Flags: []string{"-w", "1m", "--ttl", ttl.String()}}
			if w < writers {
				s.Mode, s.Work, s.Writes = "exclusive", chaos.Jitter(r, 100*time.Millisecond, 0.5), 2
				if writersShared {
					s.Flags = append(s.Flags, "--shared")
				}
			} else {
				s.Mode, s.Work, s.Writes = "shared", chaos.Jitter(r, 300*time.Millisecond, 0.3), 3
				s.Flags = append(s.Flags, "--shared")
			}
			return s
		})
	}

	// The unprotected variant first: the check must have teeth.
	ue := chaos.NewEnv(t, "12.shared-mix", lockctlBin)
	uprocs := run(ue, uniqueName("mix-unprotected"), true)
	uf := ue.Collect("unprotected: writers take --shared too", ttl, readers+writers)
	uu := uf.Unfenced
	uf.Note("entries that found a conflicting holder inside: %d; readers' entries among readers: %d; torn reads %d, lost updates %d; lockctl run exits %v",
		uu.Overlaps, uu.SharedOverlaps, uu.TornReads, uu.LostUpdates, exits(uprocs))
	uf.Verdict = verdictOf(uu.Overlaps > 0, "fails as it must: a writer inside with readers or another writer")
	chaos.Publish(uf)
	t.Logf("unprotected figures: %+v", uf)
	if uu.Overlaps == 0 {
		t.Errorf("the unprotected variant never had a writer inside with anyone: the check has no teeth\n%s", procDetail(uprocs))
	}

	e := chaos.NewEnv(t, "12.shared-mix", lockctlBin)
	procs := run(e, uniqueName("mix"), false)
	f := e.Collect(fmt.Sprintf("lockctl: %d readers --shared, %d writers", readers, writers), ttl, readers+writers)
	u := f.Unfenced
	stays := e.Res.Intervals()
	bad := conflicts(stays)
	var wrongMode []string
	for _, s := range stays {
		if want := modeName(s.Shared); s.LockMode != want {
			wrongMode = append(wrongMode, fmt.Sprintf("%s (a %s) ran with LOCKCTL_MODE=%q", s.Holder, want, s.LockMode))
		}
	}
	var starved []string
	var writerWaits []time.Duration
	for _, p := range procs {
		if !isWriter(p) {
			continue
		}
		s, in := e.Res.Stay(p.Holder)
		if !in || p.Exit != 0 {
			starved = append(starved, p.String())
			continue
		}
		writerWaits = append(writerWaits, s.Waited)
	}
	_, _, longest := chaos.Quantiles(writerWaits)
	f.Note("readers' entries that found other readers inside: %d; most readers inside at once: %d; torn reads %d; writers got in %d of %d, the longest after waiting %v; lockctl run exits %v",
		u.SharedOverlaps, u.MaxShared, u.TornReads, len(writerWaits), writers*rounds, rd(longest), exits(procs))
	ok := u.Overlaps == 0 && len(bad) == 0 && u.SharedOverlaps > 0 && len(starved) == 0 && exits(procs)[0] == len(procs) &&
		u.LostUpdates == 0 && u.TornReads == 0 && f.Fenced.StaleAttempts == 0 && f.Fenced.Rejected == 0
	f.Verdict = verdictOf(ok, "no writer inside with anyone, readers inside together, every writer in, no stale access")
	chaos.Publish(f)
	t.Logf("figures: %+v", f)
	if u.Overlaps != 0 || len(bad) != 0 {
		t.Errorf("%d entries found a conflicting holder inside:\n%s", u.Overlaps, strings.Join(bad, "\n"))
	}
	if u.SharedOverlaps == 0 || u.MaxShared < 2 {
		t.Errorf("readers were never inside together (most at once %d): shared mode did not share", u.MaxShared)
	}
	if len(starved) != 0 {
		t.Errorf("writers that never got in:\n%s", strings.Join(starved, "\n"))
	}
	if got := exits(procs); got[0] != len(procs) {
		t.Errorf("lockctl run exits %v, want all 0\n%s", got, procDetail(procs))
	}
	if len(wrongMode) != 0 {
		t.Errorf("children told the wrong mode:\n%s", strings.Join(wrongMode, "\n"))
	}
	if u.LostUpdates != 0 || u.TornReads != 0 || u.Counter != writers*rounds {
		t.Errorf("lost updates %d, torn reads %d, counter %d; want 0, 0, %d", u.LostUpdates, u.TornReads, u.Counter, writers*rounds)
	}
	if f.Fenced.StaleAttempts != 0 || f.Fenced.Rejected != 0 || f.Fenced.Regressions != 0 {
		t.Errorf("fenced store: %+v; want no stale access and no refusal", f.Fenced)
	}
}

// sharedOrder: the order of entries, from the store's intervals. Every
// holder waits inside until the test opens its gate, so the order is the
// test's, however slow the machine.
func sharedOrder(t *testing.T, srv *redistest.Server, fifo bool) {
	ttl := 10 * time.Second
	scenario, label := "12.shared-order", "lockctl --shared"
	if fifo {
		scenario, label = "12.shared-order-fifo", "lockctl --shared --fifo"
	}
	e := chaos.NewEnv(t, scenario, lockctlBin)
	name := uniqueName("order")
	key := lock.DefaultPrefix + name
	rc := client(t, srv.Addr, 2*time.Second)
	ctx := context.Background()
	spec := func(mode string) chaos.ProcSpec {
		s := chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: ttl, Mode: mode, Gate: true,
			Flags: []string{"-w", "1m", "--ttl", ttl.String()}, Work: 50 * time.Millisecond, Writes: 1}
		if mode == "shared" {
			s.Flags = append(s.Flags, "--shared")
		}
		if fifo {
			s.Flags = append(s.Flags, "--fifo")
		}
		return s
	}
	var rs []*chaos.Proc
	for i := 0; i < 5; i++ {
		rs = append(rs, e.Spawn(i, spec("shared")))
	}
	for _, r := range rs {
		if !e.WaitEntered(r.Holder, 20*time.Second) {
			t.Fatalf("reader %s never got in: %s", r.Holder, r)
		}
	}
	// A waiter lists itself after its first refused attempt (a writer
	// among the waiting writers, a reader among the shared waiters, each
	// in the FIFO queue when fair): the lists tell that it is waiting.
	listed := func() int64 {
		return rc.ZCard(ctx, lockwire.AuxKey(lockwire.KindWaiting, key)).Val() + rc.ZCard(ctx, lockwire.AuxKey(lockwire.KindQueue, key)).Val()
	}
	w := e.Spawn(5, spec("exclusive"))
	waitUntil(t, "the writer listed among the waiting writers", func() bool {
		return rc.ZCard(ctx, lockwire.AuxKey(lockwire.KindWriters, key)).Val() == 1
	})
	base := listed()
	r6 := e.Spawn(6, spec("shared"))
	waitUntil(t, "the sixth reader waiting", func() bool { return listed() >= base+1 })
	arrived := e.Rec.Now()
	for _, i := range e.Rand(0).Perm(len(rs)) {
		time.Sleep(100 * time.Millisecond)
		e.Res.OpenGate(rs[i].Holder)
	}
	if !e.WaitEntered(w.Holder, 20*time.Second) {
		t.Fatalf("the writer never got in: %s", w)
	}
	// The sixth reader has time to get in wrongly while the writer is in.
	time.Sleep(300 * time.Millisecond)
	e.Res.OpenGate(w.Holder)
	if !e.WaitEntered(r6.Holder, 20*time.Second) {
		t.Fatalf("the sixth reader never got in: %s", r6)
	}
	e.Res.OpenGate(r6.Holder)
	all := append(append([]*chaos.Proc(nil), rs...), w, r6)
	for _, p := range all {
		p.Wait()
	}

	f := e.Collect(label, ttl, len(all))
	var together, lastLeft time.Duration = 0, 0
	firstLeft := time.Duration(-1)
	for _, r := range rs {
		s, _ := e.Res.Stay(r.Holder)
		together = max(together, s.Enter)
		lastLeft = max(lastLeft, s.Leave)
		if firstLeft < 0 || s.Leave < firstLeft {
			firstLeft = s.Leave
		}
	}
	ws, _ := e.Res.Stay(w.Holder)
	s6, _ := e.Res.Stay(r6.Holder)
	f.Recover = ws.Enter - lastLeft
	f.Note("the 5 readers were all inside from %v to %v; the writer entered %v after the last of them left, the sixth reader %v after the writer left; the sixth reader arrived %v before the first reader left",
		rd(together), rd(firstLeft), rd(ws.Enter-lastLeft), rd(s6.Enter-ws.Leave), rd(firstLeft-arrived))
	inTogether := together < firstLeft
	writerAfter := ws.Enter > lastLeft
	readerAfter := s6.Enter > ws.Leave
	ok := inTogether && writerAfter && readerAfter && f.Unfenced.Overlaps == 0 && exits(all)[0] == len(all) && f.Fenced.Rejected == 0
	f.Verdict = verdictOf(ok, "readers inside together; the waiting writer in after all of them left; a later reader in after the writer left")
	chaos.Publish(f)
	t.Logf("figures: %+v", f)
	if !inTogether {
		t.Errorf("the 5 readers were never inside together: last entered %v, first left %v", together, firstLeft)
	}
	if !writerAfter {
		t.Errorf("the writer entered at %v, before the last reader left at %v", ws.Enter, lastLeft)
	}
	if !readerAfter {
		t.Errorf("the sixth reader entered at %v, before the writer left at %v", s6.Enter, ws.Leave)
	}
	if f.Unfenced.Overlaps != 0 {
		t.Errorf("%d entries found a conflicting holder inside:\n%s", f.Unfenced.Overlaps, strings.Join(conflicts(e.Res.Intervals()), "\n"))
	}
	if got := exits(all); got[0] != len(all) {
		t.Errorf("lockctl run exits %v, want all 0\n%s", got, procDetail(all))
	}
	if f.Fenced.Rejected != 0 || f.Fenced.StaleAttempts != 0 {
		t.Errorf("fenced store: %+v; want no stale access and no refusal", f.Fenced)
	}
}

// sharedPause: a reader stopped for 3x TTL, as TestHolderPaused does with
// an exclusive holder.
func sharedPause(t *testing.T, srv *redistest.Server) {
	type variant struct {
		name, label string
		stop        func(a *chaos.Proc, sig syscall.Signal)
		onLost      string
		childRuns   bool // the child goes on while lockctl is stopped
	}
	lockctlOnly := func(a *chaos.Proc, sig syscall.Signal) { signal(t, a, sig) }
	everything := func(a *chaos.Proc, sig syscall.Signal) { signal(t, a, sig); a.SignalChildren(sig) }
	vs := []variant{{"12.shared-pause-lockctl", "lockctl --shared (SIGSTOP of lockctl)", lockctlOnly, "term", true}}
	if chaos.Full() {
		vs = append(vs,
			variant{"12.shared-pause-everything", "lockctl --shared (SIGSTOP of lockctl and its child)", everything, "term", false},
			variant{"12.shared-pause-lockctl", "unprotected: --shared --on-lost ignore", lockctlOnly, "ignore", true})
	}
	ttl := time.Second
	for _, v := range vs {
		t.Run(v.name+"/"+v.onLost, func(t *testing.T) {
			e := chaos.NewEnv(t, v.name, lockctlBin)
			name := uniqueName("shared-pause-" + v.onLost)
			a := e.Spawn(0, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: ttl, Mode: "shared",
				Flags: []string{"--shared", "-n", "--ttl", ttl.String(), "--on-lost", v.onLost}, Work: 5 * ttl, Writes: 10})
			if !e.WaitEntered(a.Holder, 10*time.Second) {
				t.Fatalf("reader a never started: %s", a)
			}
			v.stop(a, syscall.SIGSTOP)
			stopped := e.Rec.Now()
			b := e.Spawn(1, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: ttl, Mode: "exclusive",
				Flags: []string{"-w", "20s", "--ttl", ttl.String()}, Work: 2 * ttl, Writes: 4})
			time.Sleep(3 * ttl)
			cont := e.Rec.Now()
			v.stop(a, syscall.SIGCONT)
			a.Wait()
			b.Wait()
			f := e.Collect(v.label, ttl, 2)
			detect := a.End - cont
			f.Detect = []time.Duration{detect}
			if a.Exit == 76 && v.onLost != "ignore" {
				f.ChildrenKilled = 1
			}
			bs, bin := e.Res.Stay(b.Holder)
			f.Recover = bs.Enter - stopped
			f.Note("a exit %d, b exit %d; b entered %v after the pause began; a's child made %d reads after b came, %d of them accepted; a's child last read %v after SIGCONT",
				a.Exit, b.Exit, rd(f.Recover), f.Fenced.StaleAttempts, f.Fenced.AcceptedStale, rd(e.Res.LastAct(a.Holder)-cont))
			safe := f.Fenced.AcceptedStale == 0 && b.Exit == 0 && bin && bs.Enter < cont
			if v.onLost == "ignore" {
				f.Verdict = verdictOf(f.Fenced.StaleAttempts > 0 && a.Exit != 143,
					"the reader's child keeps reading after the loss; only the fence refuses it")
			} else {
				f.Verdict = verdictOf(safe && a.Exit == 76 && f.Unfenced.Overlaps > 0 && (!v.childRuns || f.Fenced.StaleAttempts > 0),
					"the writer in after the reader's TTL; child killed after SIGCONT, exit 76; no stale read accepted (the unfenced overlap is the pause's, not the lock's)")
			}
			chaos.Publish(f)
			t.Logf("a: %s\nb: %s\nfigures: %+v", a, b, f)
			if f.Fenced.AcceptedStale != 0 {
				t.Errorf("the fenced store accepted %d stale accesses", f.Fenced.AcceptedStale)
			}
			if b.Exit != 0 {
				t.Errorf("b exit %d, want 0: %s", b.Exit, b)
			}
			if !bin || bs.Enter > cont {
				t.Errorf("the writer did not get the lock while the reader was stopped")
			}
			if f.Unfenced.Overlaps == 0 {
				t.Errorf("no overlap on the unfenced store: the scenario did not bite")
			}
			if v.childRuns && f.Fenced.StaleAttempts == 0 {
				t.Errorf("the reader's child made no read after the writer came: the scenario did not bite")
			}
			if v.onLost == "ignore" {
				return
			}
			if a.Exit != 76 {
				t.Errorf("a exit %d, want 76 (lease lost): %s", a.Exit, a)
			}
			if detect > ttl+2*time.Second {
				t.Errorf("a exited %v after SIGCONT, want within the TTL plus slack", detect)
			}
		})
	}
}

// sharedKilledReader: kill -9 of a reader while a writer waits, as
// TestHolderKilled does with an exclusive holder.
func sharedKilledReader(t *testing.T, srv *redistest.Server) {
	ttl := time.Second
	alones := []bool{false}
	if chaos.Full() {
		alones = append(alones, true)
	}
	for _, alone := range alones {
		scenario, label := "12.shared-kill9-reader", "lockctl --shared (kill -9 of lockctl and its child)"
		if alone {
			scenario, label = "12.shared-kill9-reader-lockctl-alone", "lockctl --shared (kill -9 of lockctl alone)"
		}
		t.Run(scenario, func(t *testing.T) {
			e := chaos.NewEnv(t, scenario, lockctlBin)
			name := uniqueName("shared-kill9")
			key := lock.DefaultPrefix + name
			rc := client(t, srv.Addr, 2*time.Second)
			a := e.Spawn(0, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: ttl, Mode: "shared",
				Flags: []string{"--shared", "-n", "--ttl", ttl.String()}, Work: 4 * ttl, Writes: 8})
			if !e.WaitEntered(a.Holder, 10*time.Second) {
				t.Fatalf("reader a never started: %s", a)
			}
			b := e.Spawn(1, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: ttl, Mode: "exclusive",
				Flags: []string{"-w", "20s", "--ttl", ttl.String()}, Work: ttl / 2, Writes: 2})
			waitUntil(t, "the writer listed among the waiting writers", func() bool {
				return rc.ZCard(context.Background(), lockwire.AuxKey(lockwire.KindWriters, key)).Val() == 1
			})
			killed, kids, survived := kill9(t, e, a, alone, ttl)
			a.Wait()
			b.Wait()
			f := e.Collect(label, ttl, 2)
			bs, bin := e.Res.Stay(b.Holder)
			f.Recover = bs.Enter - killed
			if !alone {
				f.ChildrenKilled = len(kids)
			}
			f.Note("the writer entered %v after the kill; b exit %d", rd(f.Recover), b.Exit)
			ok := bin && b.Exit == 0 && f.Recover > 0 && f.Recover <= ttl+2*time.Second && f.Fenced.AcceptedStale == 0
			if alone {
				f.Note("lockctl's guard killed the reader's child when lockctl died: %d of %d alive half a TTL later, %d reads after the writer came", survived, len(kids), f.Fenced.StaleAttempts)
				ok = ok && survived == 0 && f.Fenced.StaleAttempts == 0
				f.Verdict = verdictOf(ok, "the writer in within TTL + one retry; the reader's child died with lockctl")
			} else {
				ok = ok && f.Unfenced.Overlaps == 0
				f.Verdict = verdictOf(ok, "the writer in within TTL + one retry, alone")
			}
			chaos.Publish(f)
			t.Logf("b: %s\nfigures: %+v", b, f)
			if !bin || b.Exit != 0 {
				t.Errorf("the writer did not get in: %s", b)
			}
			if f.Recover <= 0 || f.Recover > ttl+2*time.Second {
				t.Errorf("the writer got in %v after the kill, want within TTL %v + one retry", f.Recover, ttl)
			}
			if f.Fenced.AcceptedStale != 0 {
				t.Errorf("the fenced store accepted %d stale accesses", f.Fenced.AcceptedStale)
			}
			if alone && (survived > 0 || f.Fenced.StaleAttempts > 0) {
				t.Errorf("the reader's child outlived lockctl (%d alive half a TTL later, %d reads after the writer came)", survived, f.Fenced.StaleAttempts)
			}
			if !alone && f.Unfenced.Overlaps != 0 {
				t.Errorf("%d entries found a conflicting holder inside:\n%s", f.Unfenced.Overlaps, strings.Join(conflicts(e.Res.Intervals()), "\n"))
			}
		})
	}
}

// sharedKilledWaitingWriter: a writer that waits while a reader holds is
// killed with kill -9. Its listing among the waiting writers keeps a new
// reader out until it expires (it is not refreshed any more), then the
// reader gets in beside the first. The listing's expiry is read from Redis,
// so the check is an order of events, not a guess at the timing.
func sharedKilledWaitingWriter(t *testing.T, srv *redistest.Server) {
	ttl := 10 * time.Second
	e := chaos.NewEnv(t, "12.shared-kill9-waiting-writer", lockctlBin)
	name := uniqueName("shared-dead-writer")
	key := lock.DefaultPrefix + name
	wkey := lockwire.AuxKey(lockwire.KindWriters, key)
	rc := client(t, srv.Addr, 2*time.Second)
	ctx := context.Background()
	spec := func(mode string, flags ...string) chaos.ProcSpec {
		return chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: ttl, Mode: mode,
			Flags: append(flags, "--ttl", ttl.String()), Work: 50 * time.Millisecond, Writes: 1}
	}
	r1spec := spec("shared", "--shared", "-n")
	r1spec.Gate = true
	r1 := e.Spawn(0, r1spec)
	if !e.WaitEntered(r1.Holder, 10*time.Second) {
		t.Fatalf("reader r1 never got in: %s", r1)
	}
	w := e.Spawn(1, spec("exclusive", "-w", "1m"))
	waitUntil(t, "the writer listed among the waiting writers", func() bool { return rc.ZCard(ctx, wkey).Val() == 1 })
	killed := e.Rec.Now()
	signal(t, w, syscall.SIGKILL)
	w.Wait()
	// The listing the dead writer left, and its expiry on this test's clock.
	listed, err := rc.ZRangeWithScores(ctx, wkey, 0, -1).Result()
	if err != nil || len(listed) != 1 {
		t.Fatalf("the dead writer's listing: %v, %v", listed, err)
	}
	// The server read its clock somewhere between before and after: the
	// expiry is bracketed on this test's clock.
	before := e.Rec.Now()
	srvNow, err := rc.Time(ctx).Result()
	after := e.Rec.Now()
	if err != nil {
		t.Fatal(err)
	}
	until := time.UnixMilli(int64(listed[0].Score)).Sub(srvNow)
	expires, expiresLate := before+until, after+until
	r2 := e.Spawn(2, spec("shared", "--shared", "-w", "30s"))
	r2.Wait()
	e.Res.OpenGate(r1.Holder)
	r1.Wait()
	left := rc.ZCard(ctx, wkey).Val()

	f := e.Collect("lockctl --shared (kill -9 of a waiting writer)", ttl, 3)
	s1, _ := e.Res.Stay(r1.Holder)
	s2, in2 := e.Res.Stay(r2.Holder)
	_, win := e.Res.Stay(w.Holder)
	f.Recover = s2.Enter - killed
	f.Note("the dead writer's listing expired %v after the kill; the new reader arrived %v before that and got in %v after it, beside the first reader; writers listed at the end: %d",
		rd(expires-killed), rd(expires-r2.Start), rd(s2.Enter-expires), left)
	bit := r2.Start < expires-500*time.Millisecond
	// A little slack for the server's millisecond clock.
	heldOut := s2.Enter >= expires-5*time.Millisecond
	// The reader retries at least once a second (lockctl's polling
	// interval): the listing's expiry publishes nothing.
	freed := in2 && r2.Exit == 0 && s2.Enter <= expiresLate+time.Second+3*time.Second
	beside := in2 && s2.Enter < s1.Leave
	ok := bit && heldOut && freed && beside && !win && f.Unfenced.Overlaps == 0 && left == 0 && r1.Exit == 0
	f.Verdict = verdictOf(ok, "the dead waiting writer keeps new readers out only until its listing expires")
	chaos.Publish(f)
	t.Logf("r1: %s\nw: %s\nr2: %s\nfigures: %+v", r1, w, r2, f)
	if !bit {
		t.Fatalf("the new reader arrived at %v, not before the listing expired at %v: the scenario did not bite", r2.Start, expires)
	}
	if !heldOut {
		t.Errorf("the new reader got in at %v, before the dead writer's listing expired at %v", s2.Enter, expires)
	}
	if !freed {
		t.Errorf("the new reader did not get in within a poll (1s) and slack after the listing expired at %v: %s (entered %v)", expiresLate, r2, s2.Enter)
	}
	if !beside {
		t.Errorf("the new reader did not get in while the first still held (entered %v, first left %v)", s2.Enter, s1.Leave)
	}
	if win {
		t.Errorf("the killed writer's child ran")
	}
	if f.Unfenced.Overlaps != 0 {
		t.Errorf("%d entries found a conflicting holder inside", f.Unfenced.Overlaps)
	}
	if left != 0 {
		t.Errorf("%d writers still listed after the listing's expiry", left)
	}
	if r1.Exit != 0 {
		t.Errorf("r1 exit %d: %s", r1.Exit, r1)
	}
}

// conflicts lists the pairs of stays in which a writer was inside with
// anyone else, from the intervals alone.
func conflicts(stays []chaos.Interval) []string {
	end := func(s chaos.Interval) time.Duration {
		if s.Leave < 0 {
			return 1 << 62
		}
		return s.Leave
	}
	var out []string
	for i, a := range stays {
		for _, b := range stays[i+1:] {
			if a.Shared && b.Shared {
				continue
			}
			if a.Enter < end(b) && b.Enter < end(a) {
				out = append(out, fmt.Sprintf("%s (%s) [%v..%v] and %s (%s) [%v..%v]",
					a.Holder, modeName(a.Shared), a.Enter, a.Leave, b.Holder, modeName(b.Shared), b.Enter, b.Leave))
			}
		}
	}
	return out
}

// rd rounds d for the report's notes.
func rd(d time.Duration) time.Duration { return d.Round(time.Millisecond) }

func modeName(shared bool) string {
	if shared {
		return "shared"
	}
	return "exclusive"
}

// waitUntil polls cond until it holds, failing the test after 20s.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}
