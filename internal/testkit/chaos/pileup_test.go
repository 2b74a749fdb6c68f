package chaos_test

import (
	"context"
	"fmt"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockwire"
	"github.com/lockctl/lockctl/internal/testkit/chaos"
)

// TestPileUp: many lockctl run processes on one lock at once (40 in the short
// tier, 200 in the full one), as the seed's hot order lock. Mid-queue, three
// waiting processes are killed (-9) while they are listed as waiters, then the
// holder of the moment is killed (-9, lockctl and its command), and later
// another holder is paused (SIGSTOP of lockctl and its command) for 2x TTL.
// Every other process must get in; no hand-off may take longer than one TTL
// plus room for a loaded machine, neither after a holder died (the lock frees
// by its TTL) nor after a release that named a waiter who had died (the others
// poll); the paused holder exits 76 and none of its late writes is accepted.
// The unprotected variant runs the paused holder with --on-lost ignore: its
// command goes on writing after the loss, and only the fence refuses it.
func TestPileUp(t *testing.T) {
	n := 40
	if chaos.Full() {
		n = 200
	}
	srv := startRedis(t)
	ttl := 2 * time.Second
	variants := []struct {
		label        string
		flags        []string
		pausedOnLost string
	}{
		{"lockctl", nil, "term"},
		{"lockctl --fifo", []string{"--fifo"}, "term"},
		{"unprotected: the paused holder runs with --on-lost ignore", nil, "ignore"},
	}
	for _, v := range variants {
		t.Run(fmt.Sprintf("13.pile-up/%d%s", n, map[bool]string{true: "-fifo"}[len(v.flags) > 0])+map[bool]string{true: "-unguarded"}[v.pausedOnLost == "ignore"], func(t *testing.T) {
			e := chaos.NewEnv(t, "13.pile-up", lockctlBin)
			name := "pile-" + itoa(int(time.Now().UnixNano()%1e6))
			// Two gated processes (they hold the lock until told) become
			// the victims in the order they get in: the first is killed,
			// the second paused. The last few processes arrive while the
			// paused holder is stopped, so that someone waits behind it
			// whatever order the others got in.
			gated := []int{n / 3, 2 * n / 3}
			late := n - 5
			procs := make([]*chaos.Proc, n)
			spawn := func(i int) {
				flags := append([]string{"-w", "300s", "--ttl", ttl.String()}, v.flags...)
				if slices.Contains(gated, i) {
					flags = append(flags, "--on-lost", v.pausedOnLost)
				}
				procs[i] = e.Spawn(i, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: ttl,
					Flags: flags, Work: 20 * time.Millisecond, Writes: 2, Gate: slices.Contains(gated, i)})
			}
			for i := range late {
				spawn(i)
			}
			// Runs before the Env's clean-up: a gated command without a
			// guard (--on-lost ignore) would outlive its lockctl and keep
			// the process's output open.
			t.Cleanup(func() {
				for _, i := range gated {
					for _, c := range procs[i].Commands() {
						syscall.Kill(-c, syscall.SIGKILL)
					}
					e.Res.OpenGate(procs[i].Holder)
				}
			})
			limit := time.Duration(n)*time.Second + 60*time.Second
			deadline := time.Now().Add(limit)
			first := -1
			for first < 0 && time.Now().Before(deadline) {
				for _, i := range gated {
					if e.Res.Entered(procs[i].Holder) >= 0 {
						first = i
					}
				}
				time.Sleep(5 * time.Millisecond)
			}
			if first < 0 {
				var in, out []string
				for _, q := range procs[:late] {
					if e.Res.Entered(q.Holder) >= 0 {
						in = append(in, q.Holder)
					} else {
						out = append(out, q.Holder)
					}
				}
				c := client(t, srv.Addr, time.Second)
				ctx := context.Background()
				key := "lock:" + name
				t.Fatalf("no gated holder got in; in: %v; waiting: %v; lock %v; queue %v; heartbeats %v; writers %v", in, out,
					c.Get(ctx, key).Val(), c.ZRangeWithScores(ctx, lockwire.AuxKey(lockwire.KindQueue, key), 0, -1).Val(),
					c.ZRangeWithScores(ctx, lockwire.AuxKey(lockwire.KindQueueHB, key), 0, -1).Val(),
					c.ZRangeWithScores(ctx, lockwire.AuxKey(lockwire.KindWriters, key), 0, -1).Val())
			}
			killedHolder, pausedHolder := gated[0], gated[1]
			if first == gated[1] {
				killedHolder, pausedHolder = gated[1], gated[0]
			}
			k := procs[killedHolder]
			// The processes that still wait are listed as waiters by now
			// (each was refused at least once); kill three of them.
			var deadKilled []int
			for i := late - 1; i >= 0 && len(deadKilled) < 3; i-- {
				if i != killedHolder && i != pausedHolder && e.Res.Entered(procs[i].Holder) < 0 {
					procs[i].SignalGroup(syscall.SIGKILL)
					for _, c := range procs[i].Commands() {
						syscall.Kill(-c, syscall.SIGKILL)
					}
					deadKilled = append(deadKilled, i)
				}
			}
			killedAt, _, _ := kill9(t, e, k, false, ttl)
			p := procs[pausedHolder]
			if !e.WaitEntered(p.Holder, limit) {
				t.Fatalf("holder %s never got in", p.Holder)
			}
			p.Signal(syscall.SIGSTOP)
			p.SignalChildren(syscall.SIGSTOP)
			stoppedAt := e.Rec.Now()
			for i := late; i < n; i++ {
				spawn(i)
			}
			// Resume once the next holder has written with its fence (it
			// does so as it enters), as in scenario 2: a write of the
			// paused holder's before any newer one is no stale write the
			// fence could refuse.
			time.Sleep(2 * ttl)
			for resume := time.Now().Add(limit); time.Now().Before(resume); time.Sleep(10 * time.Millisecond) {
				entered := false
				for i, q := range procs {
					if q != nil && i != pausedHolder && e.Res.Entered(q.Holder) > stoppedAt {
						entered = true
						break
					}
				}
				if entered {
					break
				}
			}
			p.Signal(syscall.SIGCONT)
			p.SignalChildren(syscall.SIGCONT)
			e.Res.OpenGate(p.Holder)
			for _, q := range procs {
				q.Wait()
			}
			f := e.Collect(v.label, ttl, n)

			// The entries in order; each hand-off's gap, and the
			// recovery after each fault.
			type entry struct {
				at time.Duration
				id int
			}
			var entries []entry
			for i, q := range procs {
				if at := e.Res.Entered(q.Holder); at >= 0 {
					entries = append(entries, entry{at, i})
				}
			}
			slices.SortFunc(entries, func(a, b entry) int { return int(a.at - b.at) })
			next := func(after time.Duration, not int) time.Duration {
				for _, en := range entries {
					if en.at > after && en.id != not {
						return en.at - after
					}
				}
				return -1
			}
			afterKill := next(killedAt, killedHolder)
			afterPause := next(stoppedAt, pausedHolder)
			var worst time.Duration
			var worstAt time.Duration
			for i := 1; i < len(entries); i++ {
				gap := entries[i].at - entries[i-1].at
				// The two faults' own recoveries are measured above.
				if entries[i-1].id == killedHolder || entries[i-1].id == pausedHolder {
					continue
				}
				if gap > worst {
					worst, worstAt = gap, entries[i].at
				}
			}
			f.Recover = max(afterKill, afterPause)
			var stranded, failed []string
			for i, q := range procs {
				switch {
				case i == killedHolder || slices.Contains(deadKilled, i):
				case i == pausedHolder:
				case q.Exit != 0:
					failed = append(failed, fmt.Sprintf("%s exit %d", q.Holder, q.Exit))
				}
				if i != killedHolder && !slices.Contains(deadKilled, i) && e.Res.Entered(q.Holder) < 0 {
					stranded = append(stranded, q.Holder)
				}
			}
			f.Note("%d processes; %d waiters killed mid-queue, a holder killed, a holder paused for %v", n, len(deadKilled), 2*ttl)
			f.Note("next entry %v after the kill -9 of the holder, %v after the pause began; longest other hand-off %v (at %v)",
				afterKill.Round(time.Millisecond), afterPause.Round(time.Millisecond), worst.Round(time.Millisecond), worstAt.Round(time.Millisecond))
			f.Note("paused holder exit %d; %d processes failed, %d never got in", p.Exit, len(failed), len(stranded))
			bound := ttl + 2*time.Second
			safe := f.Fenced.AcceptedStale == 0
			live := len(failed) == 0 && len(stranded) == 0 && afterKill > 0 && afterKill <= bound && afterPause > 0 && afterPause <= bound && worst <= bound
			if v.pausedOnLost == "ignore" {
				f.Verdict = verdictOf((f.Fenced.StaleAttempts > 0 || f.Fenced.Rejected > 0) && p.Exit != 143,
					"the paused holder's command keeps writing after the loss; only the fence refuses it")
			} else {
				f.Verdict = verdictOf(safe && live && p.Exit == 76,
					"everyone else got in; no hand-off took longer than one TTL after a death; the paused holder exits 76 and no stale write is accepted")
			}
			chaos.Publish(f)
			t.Logf("figures: %+v", f)
			// Only the paused holder may have been inside with anyone:
			// its pause outlived its lease (the fence refuses its late
			// writes); any other overlap is the lock's failure.
			iv := e.Res.Intervals()
			for i, a := range iv {
				for _, b := range iv[i+1:] {
					if a.Holder != p.Holder && b.Holder != p.Holder && (a.Leave < 0 || a.Leave > b.Enter) {
						t.Errorf("%s and %s were inside together: %+v, %+v", a.Holder, b.Holder, a, b)
					}
				}
			}
			if f.Fenced.AcceptedStale != 0 {
				t.Errorf("the fenced store accepted %d stale writes", f.Fenced.AcceptedStale)
			}
			if len(failed) > 0 || len(stranded) > 0 {
				t.Errorf("failed: %v; never got in: %v", failed, stranded)
			}
			if afterKill <= 0 || afterKill > bound {
				t.Errorf("the next holder came %v after the holder's kill -9, want within %v", afterKill, bound)
			}
			if afterPause <= 0 || afterPause > bound {
				t.Errorf("the next holder came %v after the pause began, want within %v", afterPause, bound)
			}
			if worst > bound {
				t.Errorf("a hand-off took %v (the entry at %v), want within %v", worst, worstAt, bound)
			}
			if v.pausedOnLost == "ignore" {
				if f.Fenced.StaleAttempts == 0 && f.Fenced.Rejected == 0 {
					t.Errorf("--on-lost ignore: the paused holder's command made no write after the loss")
				}
				return
			}
			if p.Exit != 76 {
				t.Errorf("paused holder exit %d, want 76: %s", p.Exit, p)
			}
		})
	}
}
