package chaos_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/testkit/chaos"
	"github.com/redis/go-redis/v9"
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
						_ = syscall.Kill(-c, syscall.SIGKILL) // teardown: it may be gone already
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
					if err := procs[i].SignalGroup(syscall.SIGKILL); err != nil {
						t.Errorf("SIGKILL to %s's group: %v", procs[i].Holder, err)
					}
					for _, c := range procs[i].Commands() {
						_ = syscall.Kill(-c, syscall.SIGKILL) // a child that exited already is no error
					}
					deadKilled = append(deadKilled, i)
				}
			}
			killedAt, _, _ := kill9(t, e, k, false, ttl)
			p := procs[pausedHolder]
			if !e.WaitEntered(p.Holder, limit) {
				t.Fatalf("holder %s never got in", p.Holder)
			}
			signal(t, p, syscall.SIGSTOP)
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
			signal(t, p, syscall.SIGCONT)
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

// tokenHashRe finds the first token hash of `inspect lock -o json`: the
// holder's ("holders" sorts before "queue" and "writers").
var tokenHashRe = regexp.MustCompile(`"token_hash":\s*"([0-9a-f]{12})"`)

// TestForceReleaseHandOff: a lock's holder is stuck (lockctl run and its
// command stopped, SIGSTOP) with a 30s lease, and a lockctl run -w waits
// behind it, listed and asleep on its wake-up stream. On call frees the
// stuck holder; the waiter must get in about as soon as it does after a
// plain release, measured first in the same run (a holder leaves, the
// waiter behind it enters): within 4 times that plus 700ms, well before
// the waiter would look again on its own (when it renews its listing, 2s
// after it was listed). The stuck holder, resumed, must find its lease
// lost (exit 76), and none of its command's late writes is accepted. The
// unprotected variant frees the holder with a plain DEL of the key, as
// redis-cli would: nobody is woken, and the waiter gets in only when it
// renews its listing. An earlier build (LOCKCTL_CHAOS_BIN_OLD) whose
// force-release woke nobody fails the same way.
func TestForceReleaseHandOff(t *testing.T) {
	type variant struct {
		label, bin string
		flags      []string
		del, old   bool
	}
	vs := []variant{
		{label: "unprotected: DEL of the stuck holder's key (redis-cli), no wake-up", bin: lockctlBin, del: true},
		{label: "lockctl inspect force-release", bin: lockctlBin},
		{label: "lockctl --fifo, inspect force-release", bin: lockctlBin, flags: []string{"--fifo"}},
	}
	if old := os.Getenv("LOCKCTL_CHAOS_BIN_OLD"); old != "" {
		vs = append(vs, variant{label: "earlier build (LOCKCTL_CHAOS_BIN_OLD) inspect force-release", bin: old, old: true})
	}
	for _, v := range vs {
		sub := "lockctl"
		switch {
		case v.del:
			sub = "unprotected"
		case v.old:
			sub = "earlier-build"
		case len(v.flags) > 0:
			sub = "lockctl-fifo"
		}
		t.Run("13.force-release/"+sub, func(t *testing.T) { forceReleaseHandOff(t, v.label, v.bin, v.flags, v.del, v.old) })
	}
}

// asleep waits until a client of c's server is blocked in XREAD: a waiter
// sleeping on its wake-up stream.
func asleep(t *testing.T, c *redis.Client) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		for _, line := range strings.Split(c.ClientList(context.Background()).Val(), "\n") {
			f := strings.Fields(line)
			if slices.Contains(f, "cmd=xread") && slices.ContainsFunc(f, func(s string) bool {
				return strings.HasPrefix(s, "flags=") && strings.Contains(s, "b")
			}) {
				return
			}
		}
	}
	t.Fatal("the waiter never slept on its wake-up stream")
}

func forceReleaseHandOff(t *testing.T, label, bin string, flags []string, del, old bool) {
	srv := startRedis(t)
	e := chaos.NewEnv(t, "13.force-release", bin)
	ctx := context.Background()
	c := client(t, srv.Addr, 2*time.Second)
	name := "stuck"
	key := "lock:" + name
	ttl := 30 * time.Second
	glob := []string{"--url", srv.URL}
	spawn := func(id int, gate bool, wait string) *chaos.Proc {
		f := append([]string{"--ttl", ttl.String(), "-w", wait}, flags...)
		return e.Spawn(id, chaos.ProcSpec{Global: glob, Name: name, TTL: ttl, Flags: f,
			Work: 50 * time.Millisecond, Writes: 2, Gate: gate})
	}
	entered := func(p *chaos.Proc) {
		t.Helper()
		if !e.WaitEntered(p.Holder, 30*time.Second) {
			t.Fatalf("holder %s never got in: %s", p.Holder, p)
		}
	}
	// The waiters listed: the exclusive waiters' list and the FIFO queue.
	waiting := func() []string {
		return append(c.ZRange(ctx, lockwire.AuxKey(lockwire.KindWriters, key), 0, -1).Val(),
			c.ZRange(ctx, lockwire.AuxKey(lockwire.KindQueue, key), 0, -1).Val()...)
	}
	// listed waits until a waiter that was not listed before is: it has
	// been refused once and sleeps.
	listed := func(before []string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
			for _, tok := range waiting() {
				if !slices.Contains(before, tok) {
					return
				}
			}
		}
		t.Fatal("the waiter was never listed")
	}

	// A plain release's hand-off: h leaves, w enters.
	h := spawn(0, true, "10s")
	entered(h)
	before := waiting()
	w := spawn(1, false, "60s")
	listed(before)
	e.Res.OpenGate(h.Holder)
	h.Wait()
	w.Wait()
	plain := e.Res.Entered(w.Holder) - e.Res.LeftAt(h.Holder)

	// The stuck holder, and a waiter behind it.
	s := spawn(2, true, "10s")
	entered(s)
	signal(t, s, syscall.SIGSTOP)
	s.SignalChildren(syscall.SIGSTOP)
	out, _ := exec.Command(bin, append(glob, "inspect", "lock", name, "-o", "json")...).Output()
	m := tokenHashRe.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no token hash in inspect lock: %s", out)
	}
	hash := string(m[1])
	before = waiting()
	x := spawn(3, false, "60s")
	listed(before)
	// Listed is not yet asleep: freed between its refused attempt and its
	// sleep, a waiter finds the lock free without any wake-up. Free it
	// once it blocks on its wake-up stream (the only XREAD: the stuck
	// holder's connections are idle).
	asleep(t, c)
	freedAt := e.Rec.Now()
	how := "inspect force-release exit %d"
	code := 0
	if del {
		how = "DEL: %d key deleted"
		code = int(c.Del(ctx, key).Val())
	} else {
		cmd := exec.Command(bin, append(glob, "inspect", "force-release", name, "--token", hash, "--reason", "stuck")...)
		var errb bytes.Buffer
		cmd.Stderr = &errb
		code = exitOf(cmd.Run())
		if code != 0 {
			t.Errorf("force-release: exit %d: %s", code, errb.String())
		}
	}
	if !e.WaitEntered(x.Holder, 30*time.Second) {
		t.Fatalf("the waiter behind the stuck holder never got in: %s", x)
	}
	forced := e.Res.Entered(x.Holder) - freedAt
	// The stuck holder resumes after the waiter's fenced writes (a write
	// of its own before any newer one is no stale write a fence could
	// refuse): its lease is gone.
	x.Wait()
	signal(t, s, syscall.SIGCONT)
	s.SignalChildren(syscall.SIGCONT)
	e.Res.OpenGate(s.Holder)
	s.Wait()

	f := e.Collect(label, ttl, 4)
	f.Recover = forced
	bound := 4*plain + 700*time.Millisecond
	f.Note("a release's hand-off (the holder left, the waiter in) took %v; after the stuck holder was freed ("+how+") the waiter got in %v later (bound %v)",
		plain.Round(time.Millisecond), code, forced.Round(time.Millisecond), bound.Round(time.Millisecond))
	f.Note("the stuck holder, resumed: exit %d; the waiters: exit %d and %d", s.Exit, w.Exit, x.Exit)
	safe := f.Fenced.AcceptedStale == 0 && s.Exit == 76 && w.Exit == 0 && x.Exit == 0
	prompt := plain > 0 && forced > 0 && forced <= bound
	if del {
		f.Verdict = verdictOf(safe && !prompt, "fails as it must: nobody is woken, the waiter gets in only when it renews its listing")
		chaos.Publish(f)
		if prompt {
			t.Errorf("the unprotected DEL handed off in %v (a release in %v, bound %v): the scenario did not bite", forced, plain, bound)
		}
		return
	}
	report := earlierBuild(t, old, f, safe && prompt,
		"the waiter gets in as soon after force-release as after a release; the stuck holder resumed exits 76, no stale write accepted",
		safe && !prompt, "force-release wakes nobody: the waiter gets in only when it renews its listing")
	chaos.Publish(f)
	t.Logf("holders:\n%s\nfigures: %+v", procDetail([]*chaos.Proc{h, w, s, x}), f)
	if !prompt {
		report("force-release handed off in %v, a release in %v: want within %v", forced, plain, bound)
	}
	if s.Exit != 76 {
		report("the stuck holder, resumed after force-release: exit %d, want 76: %s", s.Exit, s)
	}
	if f.Fenced.AcceptedStale != 0 {
		report("the fenced store accepted %d stale writes", f.Fenced.AcceptedStale)
	}
	if w.Exit != 0 || x.Exit != 0 {
		report("waiters: %s; %s", w, x)
	}
}
