package chaos_test

import (
	"context"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/chaos"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

// TestRedlock: five independent masters. With one and with two killed, a
// lockctl run holder still acquires and renews through 3x TTL; with three
// killed, acquisition is refused. A node whose key is deleted behind the
// holder's back, and a node that is paused, change nothing while a majority
// holds. Every step keeps the fenced store clean and the history
// linearizable.
func TestRedlock(t *testing.T) {
	ttl := time.Second
	type step struct {
		name  string
		full  bool
		fault func(nodes []*redistest.Server, key string)
		// want is lockctl run's exit status.
		want int
	}
	kill := func(n int) func([]*redistest.Server, string) {
		return func(nodes []*redistest.Server, _ string) {
			for _, s := range nodes[:n] {
				s.Kill()
			}
		}
	}
	steps := []step{
		{"10.redlock-one-killed", true, kill(1), 0},
		{"10.redlock-two-killed", false, kill(2), 0},
		{"10.redlock-key-deleted", true, func(nodes []*redistest.Server, key string) {
			time.Sleep(200 * time.Millisecond)
			if _, err := nodes[0].Do("DEL", key); err != nil {
				t.Errorf("DEL %s: %v", key, err)
			}
		}, 0},
		{"10.redlock-node-paused", true, func(nodes []*redistest.Server, _ string) {
			if err := nodes[0].Signal(syscall.SIGSTOP); err != nil {
				t.Errorf("SIGSTOP to node 0: %v", err)
			}
		}, 0},
	}
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			if st.full {
				full(t)
			}
			var nodes []*redistest.Server
			var urls []string
			for i := 0; i < 5; i++ {
				s := startRedis(t)
				nodes = append(nodes, s)
				urls = append(urls, s.URL)
			}
			e := chaos.NewEnv(t, st.name, lockctlBin)
			global := []string{"--redlock", strings.Join(urls, ","), "--timeout", "300ms"}
			a := e.Spawn(0, chaos.ProcSpec{Global: global, Name: "rl", TTL: ttl,
				Flags: []string{"-n", "--ttl", ttl.String()}, Work: 3 * ttl, Writes: 6})
			if !e.WaitEntered(a.Holder, 10*time.Second) {
				t.Fatalf("holder a never started: %s", a)
			}
			st.fault(nodes, "lock:rl")
			b := e.Spawn(1, chaos.ProcSpec{Global: global, Name: "rl", TTL: ttl,
				Flags: []string{"-w", "20s", "--ttl", ttl.String()}, Work: ttl / 2, Writes: 2})
			a.Wait()
			b.Wait()
			f := e.Collect("lockctl --redlock (5 masters)", ttl, 2)
			verdict := f.Check(e)
			f.Note("a exit %d, b exit %d", a.Exit, b.Exit)
			ok := a.Exit == st.want && b.Exit == 0 && f.Unfenced.Overlaps == 0 && f.Fenced.AcceptedStale == 0 && verdict == "ok"
			f.Verdict = verdictOf(ok, "held and renewed on a majority; no overlap; linearizable")
			chaos.Publish(f)
			t.Logf("a: %s\nb: %s", a, b)
			if a.Exit != st.want || b.Exit != 0 {
				t.Errorf("a exit %d (want %d), b exit %d (want 0)", a.Exit, st.want, b.Exit)
			}
			if f.Unfenced.Overlaps != 0 || f.Fenced.AcceptedStale != 0 || verdict != "ok" {
				t.Errorf("overlaps %d, accepted stale %d, porcupine %s", f.Unfenced.Overlaps, f.Fenced.AcceptedStale, verdict)
			}
		})
	}
	// The unprotected variant: the same lock on one of those masters alone,
	// which is then restarted without persistence. Its holder works on
	// until its deadline while a second holder already got the lock.
	t.Run("10.single-master-restarted", func(t *testing.T) {
		s := startRedis(t)
		e := chaos.NewEnv(t, "10.redlock-two-killed", lockctlBin)
		global := []string{"--url", s.URL, "--timeout", "300ms"}
		// a renews every 700ms and writes every 100ms; the master is
		// restarted just after a renewal, so that b gets in well before a's
		// next renewal finds the lock gone, while a still writes: the loss
		// shows whatever the machine's load.
		a := e.Spawn(0, chaos.ProcSpec{Global: global, Name: "rl", TTL: ttl,
			Flags: []string{"-n", "--ttl", ttl.String(), "--renew-every", "700ms"}, Work: 3 * ttl, Writes: 30})
		if !e.WaitEntered(a.Holder, 10*time.Second) {
			t.Fatalf("holder a never started: %s", a)
		}
		rc := client(t, s.Addr, time.Second)
		renewed := time.Now().Add(5 * time.Second)
		for rc.PTTL(context.Background(), "lock:rl").Val() < ttl*19/20 && time.Now().Before(renewed) {
			time.Sleep(2 * time.Millisecond)
		}
		_ = rc.Close()
		s.Kill()
		if err := s.Restart(); err != nil {
			t.Fatal(err)
		}
		b := e.Spawn(1, chaos.ProcSpec{Global: global, Name: "rl", TTL: ttl,
			Flags: []string{"-w", "20s", "--ttl", ttl.String()}, Work: ttl / 2, Writes: 2})
		a.Wait()
		b.Wait()
		f := e.Collect("unprotected: one master, restarted", ttl, 2)
		verdict := f.Check(e)
		f.Note("a exit %d, b exit %d", a.Exit, b.Exit)
		f.Verdict = verdictOf(f.Unfenced.Overlaps > 0 && verdict == "illegal", "fails as it must: the restart hands the lock to b while a works")
		chaos.Publish(f)
		if f.Unfenced.Overlaps == 0 || verdict != "illegal" {
			t.Errorf("a single restarted master did not fail: overlaps %d, porcupine %s", f.Unfenced.Overlaps, verdict)
		}
	})
	t.Run("10.redlock-three-killed", func(t *testing.T) {
		var urls []string
		var nodes []*redistest.Server
		for i := 0; i < 5; i++ {
			s := startRedis(t)
			nodes = append(nodes, s)
			urls = append(urls, s.URL)
		}
		e := chaos.NewEnv(t, "10.redlock-three-killed", lockctlBin)
		for _, s := range nodes[:3] {
			s.Kill()
		}
		start := time.Now()
		out, err := exec.Command(lockctlBin, "lock", "rl", "--redlock", strings.Join(urls, ","), "--timeout", "300ms", "-n").CombinedOutput()
		code := exitOf(err)
		f := e.Collect("lockctl --redlock (5 masters)", ttl, 1)
		f.Attempted, f.Errors = 1, 1
		f.Note("lockctl lock exit %d after %v: %s", code, time.Since(start).Round(time.Millisecond), firstLine(string(out)))
		f.Verdict = verdictOf(code == 69, "refused without a majority (69)")
		chaos.Publish(f)
		if code != 69 {
			t.Errorf("lock with 3 of 5 masters dead: exit %d, want 69\n%s", code, out)
		}
	})
}
