package chaos_test

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/chaos"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"
)

// holdAndFault runs the shape most server-side scenarios share: holder a
// takes the lock with a long critical section, fault() is applied, holder b
// waits for the lock (on the URL bURL, which may differ after a failover),
// and both are recorded.
func holdAndFault(t *testing.T, e *chaos.Env, aURL string, aFlags []string, bURL func() string, ttl time.Duration, fault func()) (a, b *chaos.Proc, faultAt time.Duration) {
	t.Helper()
	lname := "srv-" + strconv.Itoa(int(time.Now().UnixNano()%1e6))
	a = e.Spawn(0, chaos.ProcSpec{Global: []string{"--url", aURL, "--timeout", "500ms"}, Name: lname, TTL: ttl,
		Flags: append([]string{"-n", "--ttl", ttl.String()}, aFlags...), Work: 5 * ttl, Writes: 20})
	if !e.WaitEntered(a.Holder, 10*time.Second) {
		t.Fatalf("holder a never started: %s", a)
	}
	time.Sleep(ttl / 2)
	faultAt = e.Rec.Now()
	fault()
	b = e.Spawn(1, chaos.ProcSpec{Global: []string{"--url", bURL(), "--timeout", "500ms"}, Name: lname, TTL: ttl,
		Flags: []string{"-w", "20s", "--ttl", ttl.String()}, Work: ttl / 2, Writes: 2})
	a.Wait()
	b.Wait()
	return a, b, faultAt
}

// TestServerStalls: the server stops answering for 2x TTL (SIGSTOP of
// redis-server, DEBUG SLEEP, CLIENT PAUSE). The holder must give up by its
// local deadline (exit 76, child killed) and nothing may overlap: the next
// holder only gets the lock from the server after the stall.
func TestServerStalls(t *testing.T) {
	ttl := time.Second
	stalls := []struct {
		name  string
		full  bool
		stall func(s *redistest.Server, d time.Duration)
	}{
		{"7.sigstop-redis", false, func(s *redistest.Server, d time.Duration) {
			if err := s.Signal(syscall.SIGSTOP); err != nil {
				t.Errorf("SIGSTOP to redis-server: %v", err)
			}
			time.Sleep(d)
			if err := s.Signal(syscall.SIGCONT); err != nil {
				t.Errorf("SIGCONT to redis-server: %v", err)
			}
		}},
		{"7.debug-sleep", true, func(s *redistest.Server, d time.Duration) {
			if _, err := s.Do("DEBUG", "SLEEP", strconv.FormatFloat(d.Seconds(), 'f', 1, 64)); err != nil {
				t.Errorf("DEBUG SLEEP: %v", err)
			}
		}},
		{"7.client-pause", true, func(s *redistest.Server, d time.Duration) {
			if _, err := s.Do("CLIENT", "PAUSE", strconv.Itoa(int(d.Milliseconds())), "ALL"); err != nil {
				t.Errorf("CLIENT PAUSE: %v", err)
			}
			time.Sleep(d)
		}},
	}
	for _, st := range stalls {
		for _, ignore := range []bool{false, true} {
			label := "lockctl"
			var aFlags []string
			if ignore {
				label, aFlags = "unprotected: --on-lost ignore", []string{"--on-lost", "ignore"}
			}
			t.Run(st.name+"/"+label, func(t *testing.T) {
				if st.full {
					full(t)
				}
				srv := startRedis(t, "--enable-debug-command", "yes")
				e := chaos.NewEnv(t, st.name, lockctlBin)
				var stallEnd time.Duration
				a, b, faultAt := holdAndFault(t, e, srv.URL, aFlags, func() string { return srv.URL }, ttl, func() {
					st.stall(srv, 2*ttl)
					stallEnd = e.Rec.Now()
				})
				f := e.Collect(label, ttl, 2)
				f.Detect = []time.Duration{a.End - faultAt}
				if a.Exit == 76 && !ignore {
					f.ChildrenKilled = 1
				}
				f.Recover = e.Res.Entered(b.Holder) - stallEnd
				verdict := f.Check(e)
				f.Note("a exit %d %v after the stall began; b exit %d, entered %v after the stall ended", a.Exit, a.End-faultAt, b.Exit, f.Recover)
				t.Logf("a: %s\nb: %s", a, b)
				if ignore {
					f.Verdict = verdictOf(f.Unfenced.Overlaps > 0 && verdict == "illegal", "fails as it must: the child works on after the lease, overlaps, not linearizable")
					chaos.Publish(f)
					if f.Unfenced.Overlaps == 0 || verdict != "illegal" {
						t.Errorf("--on-lost ignore did not fail: overlaps %d, porcupine %s", f.Unfenced.Overlaps, verdict)
					}
					return
				}
				ok := a.Exit == 76 && b.Exit == 0 && f.Unfenced.Overlaps == 0 && f.Fenced.AcceptedStale == 0 && verdict == "ok"
				f.Verdict = verdictOf(ok, "holder gave up by its local deadline; no overlap; linearizable")
				chaos.Publish(f)
				if a.Exit != 76 {
					t.Errorf("a exit %d, want 76", a.Exit)
				}
				if b.Exit != 0 {
					t.Errorf("b exit %d, want 0: %s", b.Exit, b)
				}
				if f.Unfenced.Overlaps != 0 || f.Fenced.AcceptedStale != 0 || verdict != "ok" {
					t.Errorf("overlaps %d, accepted stale %d, porcupine %s", f.Unfenced.Overlaps, f.Fenced.AcceptedStale, verdict)
				}
			})
		}
	}
}

// TestRestart: Redis is killed and restarted on the same port, without
// persistence and with AOF appendfsync always. Without persistence the lock
// is lost (the holder finds out at its next renewal, exit 76) and a new
// holder gets in; the fences it gets must still be greater than every fence
// issued before, so the fenced store neither refuses the new holder nor
// takes the old one's writes. With AOF always the lock survives: the holder
// keeps it and nobody else gets in while it runs.
func TestRestart(t *testing.T) {
	ttl := 2 * time.Second
	for _, v := range []struct {
		name string
		args []string
	}{
		{"4.restart-no-persistence", nil},
		{"4.restart-aof-always", []string{"--appendonly", "yes", "--appendfsync", "always"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			srv := startRedis(t, v.args...)
			e := chaos.NewEnv(t, v.name, lockctlBin)
			// Earlier holders leave the fence counter well above 1, as in
			// any lock that has been used for a while.
			for i := 0; i < 3; i++ {
				p := e.Spawn(10+i, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: "restart", TTL: ttl,
					Flags: []string{"-n", "--ttl", ttl.String()}, Work: 20 * time.Millisecond, Writes: 1})
				p.Wait()
			}
			lname := "restart"
			a := e.Spawn(0, chaos.ProcSpec{Global: []string{"--url", srv.URL, "--timeout", "500ms"}, Name: lname, TTL: ttl,
				Flags: []string{"-n", "--ttl", ttl.String()}, Work: 3 * ttl, Writes: 12})
			if !e.WaitEntered(a.Holder, 10*time.Second) {
				t.Fatalf("holder a never started: %s", a)
			}
			faultAt := e.Rec.Now()
			srv.Kill()
			if err := srv.Restart(); err != nil {
				t.Fatal(err)
			}
			back := e.Rec.Now()
			b := e.Spawn(1, chaos.ProcSpec{Global: []string{"--url", srv.URL, "--timeout", "500ms"}, Name: lname, TTL: ttl,
				Flags: []string{"-w", "30s", "--ttl", ttl.String()}, Work: ttl / 2, Writes: 2})
			a.Wait()
			b.Wait()
			f := e.Collect("lockctl", ttl, 5)
			f.Detect = []time.Duration{a.End - faultAt}
			if a.Exit == 76 {
				f.ChildrenKilled = 1
			}
			f.Recover = e.Res.Entered(b.Holder) - back
			verdict := f.Check(e)
			f.Note("a exit %d; b exit %d, entered %v after the restart", a.Exit, b.Exit, f.Recover)
			fs := f.Fenced
			if fs.Regressions > 0 || fs.RejectedFresh > 0 {
				f.Note("the fence counter restarted below the fences issued before the restart: the new holder was refused (%d) and the old one's later writes accepted (%d stale)", fs.RejectedFresh, fs.AcceptedStale)
			}
			var ok bool
			if v.args == nil {
				ok = a.Exit == 76 && fs.Regressions == 0 && fs.RejectedFresh == 0 && fs.AcceptedStale == 0
				f.Verdict = verdictOf(ok, "lock lost and detected (exit 76); fences after the restart greater than before; no stale write")
			} else {
				ok = (a.Exit == 0 || (a.Exit == 76 && back-faultAt >= ttl/4)) && f.Unfenced.Overlaps == 0 && fs.AcceptedStale == 0 && verdict == "ok"
				f.Verdict = verdictOf(ok, "lock kept across the restart (or, when the restart outlasts the renewal slack, lost safely); no overlap; linearizable")
			}
			f.Note("the restart took %v", (back - faultAt).Round(time.Millisecond))
			chaos.Publish(f)
			t.Logf("a: %s\nb: %s\nfenced %+v", a, b, fs)
			if fs.AcceptedStale != 0 {
				t.Errorf("accepted stale writes: %d", fs.AcceptedStale)
			}
			if fs.Regressions != 0 || fs.RejectedFresh != 0 || fs.Duplicates != 0 {
				t.Errorf("fences went backwards after the restart: regressions %d, newest holder refused %d, duplicates %d", fs.Regressions, fs.RejectedFresh, fs.Duplicates)
			}
			if v.args == nil {
				if a.Exit != 76 {
					t.Errorf("a exit %d, want 76 (the restart dropped its lock)", a.Exit)
				}
			} else {
				// A restart slower than the renewal slack (a loaded machine
				// replaying the AOF) may cost the lease; losing it is safe.
				quick := back-faultAt < ttl/4
				if (quick && a.Exit != 0) || (a.Exit != 0 && a.Exit != 76) || f.Unfenced.Overlaps != 0 || verdict != "ok" {
					t.Errorf("AOF always: restart took %v, a exit %d, overlaps %d, porcupine %s; want the lock kept", back-faultAt, a.Exit, f.Unfenced.Overlaps, verdict)
				}
			}
		})
	}
}

// TestNoevictionFullMemory: with maxmemory reached under noeviction, a
// lock attempt is refused by the server: a clear 69, never 75 or 70. The
// server is filled so that it stays full once the filling connections are
// gone (their buffers count towards maxmemory until then), which fill
// checks; an exit 0 would still be honest only if the lock was really
// written, and is accepted then, with a note.
func TestNoevictionFullMemory(t *testing.T) {
	srv := startRedis(t, "--maxmemory", "2mb", "--maxmemory-policy", "noeviction")
	e := chaos.NewEnv(t, "8.noeviction-full", lockctlBin)
	conns := fill(t, srv)
	start := time.Now()
	cmd := exec.Command(lockctlBin, "lock", "full", "--url", srv.URL, "-n")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := exitOf(cmd.Run())
	f := e.Collect("lockctl", 30*time.Second, 1)
	f.Attempted, f.Errors = 1, 1
	f.Note("server filled by %d connection(s), until a fresh one's first small write was refused (OOM)", conns)
	f.Note("lockctl lock exit %d after %v: %s", code, time.Since(start).Round(time.Millisecond), firstLine(stderr.String()))
	ok := code == 69
	if code == 0 {
		// Honest only if the server really holds the lock it printed.
		token := strings.TrimSpace(stdout.String())
		v, err := client(t, srv.Addr, 5*time.Second).Get(t.Context(), "lock:full").Result()
		ok = err == nil && token != "" && strings.Contains(v, token)
		f.Note("exit 0: the lock key holds the printed token: %v (memory freed after the fill)", ok)
		if ok {
			f.Attempted, f.Errors = 1, 0
		}
	}
	f.Verdict = verdictOf(ok, "a clear 69 (Redis refused: OOM), or exit 0 with the lock really written")
	chaos.Publish(f)
	if !ok {
		t.Errorf("lock on a full noeviction server: exit %d, want 69 (or 0 with the lock written)\nstdout %s\nstderr %s", code, stdout.String(), stderr.String())
	}
}

// fill writes until the server refuses with OOM, and makes sure it stays
// full: a connection's buffers count towards maxmemory while it lives, and
// servers free them at different times (Valkey 8 as soon as the client
// stops writing), so a fill by one connection with big values leaves room
// once that connection is gone. Each size of value is written on a fresh
// connection, closed when the server refuses it; then fresh connections
// write small values until one's very first write is refused: the server
// is full for a newcomer such as lockctl. It returns the connections used.
func fill(t *testing.T, s *redistest.Server) int {
	t.Helper()
	ctx := t.Context()
	n, conns := 0, 0
	// fillWith writes values of size on a fresh connection until the
	// server refuses one, and closes it; it returns how many it took.
	fillWith := func(size int) int {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, MaxRetries: -1, PoolSize: 1,
			DialTimeout: 5 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
		defer func() {
			_ = c.Close() // what was measured is the count; the close only frees memory
			// The server frees a closed connection in its own time.
			time.Sleep(100 * time.Millisecond)
		}()
		conns++
		val := make([]byte, size)
		for took := 0; ; took++ {
			err := c.Set(ctx, "fill:"+strconv.Itoa(n), val, 0).Err()
			if err != nil && strings.HasPrefix(err.Error(), "OOM") {
				return took
			}
			if err != nil {
				t.Fatalf("filling the server: %v", err)
			}
			n++
		}
	}
	for _, size := range []int{64 << 10, 4 << 10, 256} {
		fillWith(size)
	}
	for range 50 {
		// About the size of a lock's value.
		if fillWith(256) == 0 {
			return conns
		}
	}
	t.Fatal("a fresh connection still has room after 50 rounds of filling")
	return 0
}

func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' {
			return s[:i]
		}
	}
	return s
}

// TestEviction: a lock is held while memory pressure makes the server evict
// keys (allkeys-lru, volatile-ttl). The eviction of the lock key is a loss
// no client can prevent: the holder must detect it at its next renewal
// (exit 76), and the fenced store must take no stale write. The fence
// counter itself can be evicted under allkeys-lru, and then fences repeat:
// the report says so.
func TestEviction(t *testing.T) {
	ttl := 2 * time.Second
	for _, policy := range []string{"allkeys-lru", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			if policy == "volatile-ttl" {
				full(t)
			}
			srv := startRedis(t, "--maxmemory", "4mb", "--maxmemory-policy", policy, "--maxmemory-samples", "10")
			e := chaos.NewEnv(t, "8.eviction-"+policy, lockctlBin)
			for i := 0; i < 3; i++ {
				e.Spawn(10+i, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: "ev", TTL: ttl,
					Flags: []string{"-n", "--ttl", ttl.String()}, Work: 10 * time.Millisecond, Writes: 1}).Wait()
			}
			a := e.Spawn(0, chaos.ProcSpec{Global: []string{"--url", srv.URL, "--timeout", "500ms"}, Name: "ev", TTL: ttl,
				Flags: []string{"-n", "--ttl", ttl.String()}, Work: 3 * ttl, Writes: 12})
			if !e.WaitEntered(a.Holder, 10*time.Second) {
				t.Fatalf("holder a never started: %s", a)
			}
			faultAt := e.Rec.Now()
			c := client(t, srv.Addr, 5*time.Second)
			val := make([]byte, 16*1024)
			evicted := false
			for i := 0; i < 4000 && !evicted; i++ {
				// Keys with a short TTL compete with the lock under volatile-ttl.
				c.Set(t.Context(), "fill:"+strconv.Itoa(i), val, time.Duration(60+i)*time.Second)
				if i%50 == 0 {
					if n, _ := c.Exists(t.Context(), "lock:ev").Result(); n == 0 {
						evicted = true
					}
				}
			}
			b := e.Spawn(1, chaos.ProcSpec{Global: []string{"--url", srv.URL, "--timeout", "500ms"}, Name: "ev", TTL: ttl,
				Flags: []string{"-w", "20s", "--ttl", ttl.String()}, Work: ttl / 2, Writes: 2})
			a.Wait()
			b.Wait()
			f := e.Collect("lockctl", ttl, 5)
			f.Detect = []time.Duration{a.End - faultAt}
			if a.Exit == 76 {
				f.ChildrenKilled = 1
			}
			fs := f.Fenced
			f.Note("lock key evicted: %v; a exit %d; b exit %d; fenced %+v", evicted, a.Exit, b.Exit, fs)
			if fs.Regressions > 0 {
				f.Note("the fence counter was evicted with the lock, so fences went backwards and the fenced store took %d stale write(s)", fs.AcceptedStale)
			}
			if evicted {
				f.Note("an evicted lock lets a second holder in while the first still works (%d overlaps on the unfenced store): no client can close that; only fencing protects the data", f.Unfenced.Overlaps)
			}
			ok := fs.AcceptedStale == 0 && (!evicted || a.Exit == 76)
			f.Verdict = verdictOf(ok, "eviction detected at the next renewal (76); no stale write accepted")
			chaos.Publish(f)
			t.Logf("a: %s\nb: %s\nfenced %+v", a, b, fs)
			if !evicted {
				t.Skipf("%s did not evict the lock key with this fill; nothing to check", policy)
			}
			if a.Exit != 76 {
				t.Errorf("a exit %d after its lock was evicted, want 76", a.Exit)
			}
			if fs.AcceptedStale != 0 {
				t.Errorf("accepted stale writes: %d", fs.AcceptedStale)
			}
		})
	}
}
