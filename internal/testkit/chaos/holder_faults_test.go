package chaos_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/chaos"
)

// TestHolderPaused: lockctl run holds a lock, is stopped for 3x TTL while a
// second holder takes the lock, then continues. lockctl must kill its child
// right after SIGCONT and exit 76, and the fenced store must accept none of
// the paused holder's writes. The unfenced store shows the overlap that no
// lock can prevent when the holder itself is frozen. The unprotected variant
// (--on-lost ignore) lets the child go on writing.
func TestHolderPaused(t *testing.T) {
	type variant struct {
		name, label string
		stop        func(a *chaos.Proc, sig syscall.Signal)
		onLost      string
	}
	lockctlOnly := func(a *chaos.Proc, sig syscall.Signal) { signal(t, a, sig) }
	group := func(a *chaos.Proc, sig syscall.Signal) {
		if err := a.SignalGroup(sig); err != nil {
			t.Errorf("%s to %s's group: %v", sig, a.Holder, err)
		}
	}
	everything := func(a *chaos.Proc, sig syscall.Signal) { signal(t, a, sig); a.SignalChildren(sig) }
	vs := []variant{
		{"2.pause-lockctl", "lockctl (SIGSTOP of lockctl)", lockctlOnly, "term"},
		{"2.pause-everything", "lockctl (SIGSTOP of lockctl and its child)", everything, "term"},
		{"2.pause-lockctl", "unprotected: --on-lost ignore", lockctlOnly, "ignore"},
	}
	if chaos.Full() {
		vs = append(vs, variant{"2.pause-group", "lockctl (SIGSTOP of lockctl's group)", group, "term"})
	}
	srv := startRedis(t)
	ttl, bTTL := time.Second, 4*time.Second
	for _, v := range vs {
		t.Run(v.name+"/"+v.onLost, func(t *testing.T) {
			e := chaos.NewEnv(t, v.name, lockctlBin)
			name := "pause-" + v.onLost + "-" + itoa(int(time.Now().UnixNano()%1e6))
			a := e.Spawn(0, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: ttl,
				Flags: []string{"-n", "--ttl", ttl.String(), "--on-lost", v.onLost}, Work: 5 * ttl, Writes: 10})
			if !e.WaitEntered(a.Holder, 10*time.Second) {
				t.Fatalf("holder a never started: %s", a)
			}
			v.stop(a, syscall.SIGSTOP)
			stopped := e.Rec.Now()
			// b's own lease plays no part in what is shown (a paused past
			// its 1s lease, b taking over meanwhile, a stopped on
			// SIGCONT): a longer one keeps b's renewals in time on a
			// loaded machine, where a 1s lease was lost now and then.
			b := e.Spawn(1, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: bTTL,
				Flags: []string{"-w", "20s", "--ttl", bTTL.String()}, Work: 2 * ttl, Writes: 4})
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
			f.Recover = e.Res.Entered(b.Holder) - stopped
			f.Note("a exit %d, b exit %d; a's child last wrote %v after SIGCONT; b entered %v after the pause began",
				a.Exit, b.Exit, e.Res.LastAct(a.Holder)-cont, f.Recover)
			safe := f.Fenced.AcceptedStale == 0 && b.Exit == 0
			if v.onLost == "ignore" {
				f.Verdict = verdictOf(f.Fenced.StaleAttempts > 0 && a.Exit != 143,
					"the child keeps writing after the loss; only the fence refuses it")
			} else {
				f.Verdict = verdictOf(safe && a.Exit == 76 && f.Unfenced.Overlaps > 0,
					"child killed after SIGCONT, exit 76, no stale write accepted (the unfenced overlap is the pause's, not the lock's)")
			}
			chaos.Publish(f)
			t.Logf("a: %s\nb: %s\nfigures: %+v", a, b, f)
			if f.Fenced.AcceptedStale != 0 {
				t.Errorf("the fenced store accepted %d stale writes", f.Fenced.AcceptedStale)
			}
			if b.Exit != 0 {
				t.Errorf("b exit %d, want 0: %s", b.Exit, b)
			}
			if e.Res.Entered(b.Holder) < 0 || e.Res.Entered(b.Holder) > cont {
				t.Errorf("b did not get the lock while a was stopped")
			}
			if f.Unfenced.Overlaps == 0 {
				t.Errorf("no overlap on the unfenced store: the scenario did not bite")
			}
			if v.onLost == "ignore" {
				if f.Fenced.StaleAttempts == 0 {
					t.Errorf("--on-lost ignore: the child made no write after the loss")
				}
				return
			}
			if a.Exit != 76 {
				t.Errorf("a exit %d, want 76: %s", a.Exit, a)
			}
			// The child is signalled at lockctl's first wake-up; with the
			// default 5s grace capped to the margin it dies well within a TTL,
			// plus room for a loaded machine.
			if detect > ttl+2*time.Second {
				t.Errorf("a exited %v after SIGCONT, want within the TTL plus slack", detect)
			}
		})
	}
}

// kill9 sends SIGKILL to holder a's lockctl, and to the process groups of
// its command too unless alone. It returns when the kill happened, the
// command's groups (lockctl's guard left out), and how many of them have a
// live member half a TTL later, while the lease the command ran under may
// still be on the server: looked at before a.Wait, which also waits for
// the command's copy of lockctl's stderr to close.
func kill9(t *testing.T, e *chaos.Env, a *chaos.Proc, alone bool, ttl time.Duration) (killed time.Duration, kids []int, survived int) {
	t.Helper()
	kids = a.Commands()
	if len(kids) == 0 {
		t.Fatalf("holder %s has no child: %s", a.Holder, a)
	}
	t.Cleanup(func() {
		for _, k := range kids {
			_ = syscall.Kill(-k, syscall.SIGKILL) // teardown: it may be gone already
		}
	})
	killed = e.Rec.Now()
	signal(t, a, syscall.SIGKILL)
	if !alone {
		for _, k := range kids {
			_ = syscall.Kill(-k, syscall.SIGKILL) // a child that exited already is no error
		}
	}
	time.Sleep(ttl / 2)
	return killed, kids, chaos.Alive(kids)
}

// TestHolderKilled: kill -9 of a holder (lockctl and its child). The next
// waiter must get the lock within the TTL plus one retry. Killing lockctl
// alone must not leave its child running outside any lease: lockctl's guard
// kills the child's group at once. The unprotected variants: with --on-lost
// ignore (no guard) the child goes on working outside any lease, and only
// the fence stops its writes; a SET NX lock without expiry never recovers.
func TestHolderKilled(t *testing.T) {
	srv := startRedis(t)
	ttl := time.Second
	variants := []struct {
		name, label string
		alone       bool
		flags       []string
	}{
		{"3.kill9-everything", "lockctl (kill -9 of lockctl and its child)", false, nil},
		{"3.kill9-lockctl-alone", "lockctl (kill -9 of lockctl alone)", true, nil},
		{"3.kill9-lockctl-alone", "unprotected: --on-lost ignore (no guard), kill -9 of lockctl alone", true, []string{"--on-lost", "ignore"}},
	}
	for _, v := range variants {
		unguarded := len(v.flags) > 0
		t.Run(v.name+map[bool]string{true: "-unguarded"}[unguarded], func(t *testing.T) {
			e := chaos.NewEnv(t, v.name, lockctlBin)
			lname := v.name + itoa(int(time.Now().UnixNano()%1e6))
			a := e.Spawn(0, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: lname, TTL: ttl,
				Flags: append([]string{"-n", "--ttl", ttl.String()}, v.flags...), Work: 4 * ttl, Writes: 8})
			if !e.WaitEntered(a.Holder, 10*time.Second) {
				t.Fatalf("holder a never started: %s", a)
			}
			b := e.Spawn(1, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: lname, TTL: ttl,
				Flags: []string{"-w", "20s", "--ttl", ttl.String()}, Work: ttl, Writes: 2})
			time.Sleep(ttl / 2)
			killed, kids, survived := kill9(t, e, a, v.alone, ttl)
			a.Wait()
			b.Wait()
			f := e.Collect(v.label, ttl, 2)
			f.Recover = e.Res.Entered(b.Holder) - killed
			if !v.alone {
				f.ChildrenKilled = len(kids)
			}
			f.Note("b entered %v after the kill; b exit %d", f.Recover, b.Exit)
			ok := b.Exit == 0 && f.Recover > 0 && f.Recover <= ttl+2*time.Second && f.Fenced.AcceptedStale == 0
			switch {
			case unguarded:
				f.Note("without the guard the child survived the SIGKILL of lockctl (%d of %d alive half a TTL later) and went on writing outside any lease: %d writes after b came, refused by the fence", survived, len(kids), f.Fenced.StaleAttempts)
				f.Verdict = verdictOf(survived > 0 && f.Fenced.StaleAttempts > 0, "fails as it must: the child outlives lockctl and writes outside any lease; only the fence refuses it")
			case v.alone:
				f.Note("lockctl's guard killed the child's group when lockctl died: %d of %d children alive half a TTL later, %d writes after b came", survived, len(kids), f.Fenced.StaleAttempts)
				ok = ok && survived == 0 && f.Fenced.StaleAttempts == 0
				f.Verdict = verdictOf(ok, "recovery within TTL + one retry; the child died with lockctl, no write outside the lease")
			default:
				f.Verdict = verdictOf(ok, "recovery within TTL + one retry")
			}
			chaos.Publish(f)
			t.Logf("b: %s\nfigures: %+v", b, f)
			if b.Exit != 0 {
				t.Errorf("b exit %d: %s", b.Exit, b)
			}
			if f.Recover <= 0 || f.Recover > ttl+2*time.Second {
				t.Errorf("recovered after %v, want within TTL %v + one retry", f.Recover, ttl)
			}
			if f.Fenced.AcceptedStale != 0 {
				t.Errorf("the fenced store accepted %d stale writes", f.Fenced.AcceptedStale)
			}
			switch {
			case unguarded && (survived == 0 || f.Fenced.StaleAttempts == 0):
				t.Errorf("--on-lost ignore: the child did not outlive lockctl (%d alive, %d late writes): the scenario has no teeth", survived, f.Fenced.StaleAttempts)
			case !unguarded && v.alone && survived > 0:
				t.Errorf("%d of lockctl's children outlived it by half a TTL: the guard did not kill them", survived)
			case !unguarded && v.alone && f.Fenced.StaleAttempts > 0:
				t.Errorf("the orphaned child wrote %d times after b came", f.Fenced.StaleAttempts)
			}
		})
	}
	t.Run("3.kill9-unprotected", func(t *testing.T) {
		e := chaos.NewEnv(t, "3.kill9-everything", lockctlBin)
		c := client(t, srv.Addr, time.Second)
		ctx := context.Background()
		key := "lock:kill9-unprotected-" + itoa(int(time.Now().UnixNano()%1e6))
		// A holder that took a lock without expiry and then died.
		c.SetNX(ctx, key, "dead-holder", 0)
		start := time.Now()
		var got bool
		for time.Since(start) < 3*ttl {
			if ok, _ := c.SetNX(ctx, key, "b", ttl).Result(); ok {
				got = true
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
		f := e.Collect("unprotected: SET NX without expiry", ttl, 2)
		f.Attempted, f.Busy = 1, 1
		f.Note("the next holder waited %v and got the lock: %v", time.Since(start).Round(time.Millisecond), got)
		f.Verdict = verdictOf(!got, "never recovers: the dead holder's key has no TTL")
		chaos.Publish(f)
		if got {
			t.Error(errors.New("a lock without expiry was taken over"))
		}
	})
}

// signal sends sig to a's lockctl; a signal that cannot be sent is a fault
// that was not injected, so the scenario proves nothing.
func signal(t *testing.T, a *chaos.Proc, sig syscall.Signal) {
	t.Helper()
	if err := a.Signal(sig); err != nil {
		t.Errorf("%s to %s: %v", sig, a.Holder, err)
	}
}
