package chaos_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/chaos"
)

// brokenPipe returns the write end of a fifo whose only reader is closed
// before anyone writes: every write to it fails with EPIPE (and raises
// SIGPIPE) at once, without a race.
func brokenPipe(t *testing.T) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "broken.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	r, err := syscall.Open(path, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	w, err := syscall.Open(path, syscall.O_WRONLY|syscall.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Close(r); err != nil {
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(w), path)
	t.Cleanup(func() { f.Close() })
	return f
}

// exitStatus is a finished command's status, 128+n for death by signal n.
func exitStatus(err error) int {
	if ee, ok := err.(*exec.ExitError); ok {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
	}
	return exitOf(err)
}

// TestBrokenStderrOutage: a `lockctl run --ttl 1s --report-file F` holder
// whose stderr is a pipe whose reader has gone meets a 3s stall of
// redis-server (SIGSTOP), so its renewal warnings go to the broken pipe.
// lockctl must live through them: stop its command when the lease is lost,
// write the report (lost: true) and exit 76, so that a second holder's
// fenced writes start only after the first holder's command stopped. The
// unprotected variant is a holder that does the same without handling
// SIGPIPE (a Go program with a plain SET NX PX lock, GET + PEXPIRE renewal,
// its warning to the broken stderr): it dies of SIGPIPE at its first
// warning and its command works on outside any lease; only the fence
// refuses its writes.
func TestBrokenStderrOutage(t *testing.T) {
	full(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ttl, stall := time.Second, 3*time.Second
	type variant struct {
		sub, label, bin string
		naive, old      bool
	}
	vs := []variant{
		{"lockctl", "lockctl run, stderr a broken pipe", lockctlBin, false, false},
		{"unprotected", "unprotected: a SET NX PX holder (GET + PEXPIRE renewal) with default SIGPIPE, stderr a broken pipe", lockctlBin, true, false},
	}
	if old := os.Getenv("LOCKCTL_CHAOS_BIN_OLD"); old != "" {
		vs = append(vs, variant{"earlier-build", "earlier build (LOCKCTL_CHAOS_BIN_OLD) run, stderr a broken pipe", old, false, true})
	}
	for _, v := range vs {
		t.Run(v.sub, func(t *testing.T) {
			srv := startRedis(t)
			e := chaos.NewEnv(t, "15.broken-stderr-outage", v.bin)
			name := "brokenerr"
			spec := func(flags []string, work time.Duration, writes int) chaos.ProcSpec {
				s := chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: ttl, Flags: flags, Work: work, Writes: writes}
				if v.naive {
					s.Bin, s.Env = self, []string{naiveEnv + "=1"}
				}
				return s
			}
			report := filepath.Join(t.TempDir(), "a.json")
			as := spec([]string{"-n", "--ttl", ttl.String(), "--report-file", report}, 4*stall, 40)
			as.Stderr = brokenPipe(t)
			a := e.Spawn(0, as)
			if !e.WaitEntered(a.Holder, 10*time.Second) {
				t.Fatalf("holder a never started: %s", a)
			}
			kids := a.Commands()
			t.Cleanup(func() {
				for _, k := range kids {
					_ = syscall.Kill(-k, syscall.SIGKILL) // teardown: it may be gone already
				}
			})
			if err := srv.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
			stopped := e.Rec.Now()
			time.Sleep(stall)
			if err := srv.Signal(syscall.SIGCONT); err != nil {
				t.Fatal(err)
			}
			resumed := e.Rec.Now()
			b := e.Spawn(1, spec([]string{"-w", "20s", "--ttl", (4 * ttl).String()}, ttl, 4))
			b.Wait()
			alive := chaos.Alive(kids)
			a.Wait()
			f := e.Collect(v.label, ttl, 2)
			f.Detect = []time.Duration{a.End - stopped}
			aLeft, bIn := e.Res.LeftAt(a.Holder), e.Res.Entered(b.Holder)
			f.Recover = bIn - resumed
			var rep struct {
				Lost        bool    `json:"lost"`
				Exit        int     `json:"exit"`
				ChildSignal *string `json:"child_signal"`
			}
			rb, rerr := os.ReadFile(report)
			if rerr == nil {
				rerr = json.Unmarshal(rb, &rep)
			}
			sig := "none"
			if rep.ChildSignal != nil {
				sig = *rep.ChildSignal
			}
			if alive == 0 && rep.ChildSignal != nil {
				f.ChildrenKilled = 1 // the command, as the report says
			}
			aLast := e.Res.LastAct(a.Holder)
			f.Note("redis-server stopped for %v from %v; a exit %d, %v after the stall began; report: %v (lost %v, exit %d, child signal %s); a's command last wrote at %v, b entered at %v (exit %d); %d of a's commands alive after b finished",
				stall, stopped, a.Exit, a.End-stopped, map[bool]string{true: "written", false: "none"}[rerr == nil], rep.Lost, rep.Exit, sig, aLast, bIn, b.Exit, alive)
			if v.naive {
				bites := a.Exit == 128+int(syscall.SIGPIPE) && alive > 0 && f.Fenced.StaleAttempts > 0 && f.Fenced.AcceptedStale == 0
				f.Note("the unfenced store counts a holder's stay until its process exits, so the orphaned command's work after the SIGPIPE is not an overlap there; the fenced store saw its %d writes after b came and refused %d", f.Fenced.StaleAttempts, f.Fenced.Rejected)
				f.Verdict = verdictOf(bites, "fails as it must: the holder dies of SIGPIPE (141) at its renewal warning, no report; its command writes on outside any lease and only the fence refuses it")
				chaos.Publish(f)
				t.Logf("a: %s\nb: %s\nfigures: %+v", a, b, f)
				if !bites {
					t.Errorf("the unprotected holder did not fail as it must: exit %d (want 141), %d commands alive, %d writes after b came (%d accepted): the scenario has no teeth", a.Exit, alive, f.Fenced.StaleAttempts, f.Fenced.AcceptedStale)
				}
				return
			}
			ok := a.Exit == 76 && rerr == nil && rep.Lost && rep.Exit == 76 && rep.ChildSignal != nil && alive == 0 &&
				b.Exit == 0 && aLeft >= 0 && bIn >= aLeft && aLast < bIn && f.Unfenced.Overlaps == 0 && f.Fenced.AcceptedStale == 0 && f.Fenced.StaleAttempts == 0
			fail := earlierBuild(t, v.old, f, ok, "lockctl lives through the broken stderr: command signalled, report written (lost), exit 76; b's writes only after a's command stopped, no stale write",
				a.Exit == 128+int(syscall.SIGPIPE) && rerr != nil, "killed by SIGPIPE (141) at its renewal warning, no report")
			chaos.Publish(f)
			t.Logf("a: %s\nb: %s\nreport: %s\nfigures: %+v", a, b, rb, f)
			if a.Exit != 76 {
				fail("a exit %d, want 76 (141 is death by SIGPIPE at the warning): %s", a.Exit, a)
			}
			if rerr != nil || !rep.Lost || rep.Exit != 76 {
				fail("report %s: %v, lost %v, exit %d; want lost, 76", report, rerr, rep.Lost, rep.Exit)
			}
			if rep.ChildSignal == nil {
				fail("the report says a's command was not signalled: %s", rb)
			}
			if alive != 0 {
				fail("%d of a's commands outlived it", alive)
			}
			if b.Exit != 0 {
				fail("b exit %d: %s", b.Exit, b)
			}
			if aLeft < 0 || bIn < aLeft || aLast >= bIn {
				fail("b entered at %v, a's command stopped at %v and last wrote at %v: b came in first", bIn, aLeft, aLast)
			}
			if f.Unfenced.Overlaps != 0 || f.Fenced.AcceptedStale != 0 || f.Fenced.StaleAttempts != 0 {
				fail("overlaps %d, writes after b came %d (accepted %d); want none", f.Unfenced.Overlaps, f.Fenced.StaleAttempts, f.Fenced.AcceptedStale)
			}
		})
	}
}

// earlierBuild sets f's verdict: for this tree's build, whether ok (what
// must hold); it returns t.Errorf, for the assertions that name what
// failed. For an earlier build (LOCKCTL_CHAOS_BIN_OLD, one from before the
// fix, to compare), whether it fails as the fix says the code did
// (oldFails, oldWhat); one that does not is an error, since it shows
// nothing; the assertions are then only logged.
func earlierBuild(t *testing.T, old bool, f *chaos.Figures, ok bool, what string, oldFails bool, oldWhat string) func(string, ...any) {
	t.Helper()
	if !old {
		f.Verdict = verdictOf(ok, what)
		return t.Errorf
	}
	f.Note("the earlier build is %s", filepath.Base(os.Getenv("LOCKCTL_CHAOS_BIN_OLD")))
	f.Verdict = verdictOf(!ok && oldFails, "fails as it must, as before the fix: "+oldWhat)
	if ok || !oldFails {
		t.Errorf("the earlier build does not fail as before the fix (%s): the comparison shows nothing", oldWhat)
	}
	return func(format string, args ...any) { t.Logf("earlier build: "+format, args...) }
}

// lockQueue is how many FIFO waiters inspect lock shows for name, and the
// owner of its holder ("" when it is free).
func lockQueue(t *testing.T, url, name string) (queue int, owner string) {
	t.Helper()
	out, err := exec.Command(lockctlBin, "--url", url, "inspect", "lock", name, "-o", "json").Output()
	if err != nil && len(out) == 0 {
		return 0, ""
	}
	var d struct {
		Lock *struct {
			Owner string `json:"owner"`
		} `json:"lock"`
		Queue []json.RawMessage `json:"queue"`
	}
	if err := json.Unmarshal(out, &d); err != nil {
		t.Errorf("inspect lock %s -o json: %v: %s", name, err, out)
	}
	if d.Lock != nil {
		owner = d.Lock.Owner
	}
	return len(d.Queue), owner
}

// TestLockStdoutLost: a lock held by h has FIFO waiters: `lockctl lock -w`
// processes whose stdout is lost (closed, /dev/full, a pipe whose reader
// has gone), then lockctl run holders whose -w (20s) is shorter than the
// lost ones' --ttl (60s). h releases. Each lost one must give the lock back
// at once and exit 74: right after its exit the lock is not its own, and
// every run holder queued behind it gets the lock (a token nobody got kept
// for its TTL would make them time out). The unprotected variant takes the
// lock with SET NX PX and writes its token to a pipe whose reader has
// gone, with default SIGPIPE, as lock did before: the lock stays held for
// its whole TTL, and a waiter whose -w is shorter times out.
func TestLockStdoutLost(t *testing.T) {
	full(t)
	type variant struct {
		sub, label, bin string
		old             bool
	}
	vs := []variant{{"lockctl", "lockctl lock -w --fifo --ttl 60s, stdout lost (closed, /dev/full, reader gone)", lockctlBin, false}}
	if old := os.Getenv("LOCKCTL_CHAOS_BIN_OLD"); old != "" {
		vs = append(vs, variant{"earlier-build", "earlier build (LOCKCTL_CHAOS_BIN_OLD) lock -w --fifo --ttl 60s, stdout lost", old, true})
	}
	for _, v := range vs {
		t.Run(v.sub, func(t *testing.T) { lockStdoutLost(t, v.label, v.bin, v.old) })
	}
	t.Run("unprotected", func(t *testing.T) {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		srv := startRedis(t)
		e := chaos.NewEnv(t, "15.lock-stdout-lost", lockctlBin)
		name, ttl := "lost-out-naive", 4*time.Second
		n := exec.Command(self, "lock", name, "--url", srv.URL, "--ttl", ttl.String())
		n.Env = append(os.Environ(), naiveEnv+"=1")
		n.Stdout = brokenPipe(t)
		nexit := exitStatus(n.Run())
		exited := e.Rec.Now()
		pttl, _ := srv.Do("PTTL", "lock:"+name)
		short := e.Spawn(0, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: 5 * time.Second,
			Flags: []string{"-w", (ttl / 4).String(), "--ttl", "5s"}, Work: 100 * time.Millisecond, Writes: 1})
		long := e.Spawn(1, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: 5 * time.Second,
			Flags: []string{"-w", "20s", "--ttl", "5s"}, Work: 100 * time.Millisecond, Writes: 1})
		short.Wait()
		long.Wait()
		f := e.Collect("unprotected: SET NX PX 4s, the token to a pipe whose reader has gone (default SIGPIPE)", ttl, 3)
		held, _ := time.ParseDuration(pttl + "ms")
		waited := e.Res.Entered(long.Holder) - exited
		f.Recover = waited
		f.Note("the naive lock exit %d; right after it the key's PTTL was %v; a waiter with -w %v exit %d; one with -w 20s exit %d, in %v after the naive exit", nexit, held, ttl/4, short.Exit, long.Exit, waited)
		bites := nexit == 128+int(syscall.SIGPIPE) && held > ttl/2 && short.Exit == 75 && long.Exit == 0 && waited >= held-100*time.Millisecond
		f.Verdict = verdictOf(bites, "fails as it must: the holder dies of SIGPIPE (141) with the lock held; waiters wait the TTL out")
		chaos.Publish(f)
		t.Logf("short: %s\nlong: %s\nfigures: %+v", short, long, f)
		if !bites {
			t.Errorf("the unprotected variant did not fail as it must: exit %d (want 141), PTTL after %v, short waiter %d (want 75), long waiter %d after %v (want 0, after the TTL)", nexit, held, short.Exit, long.Exit, waited)
		}
	})
}

// lockStdoutLost is TestLockStdoutLost's lockctl variant with bin as the
// lost tokens' and the waiters' lockctl.
func lockStdoutLost(t *testing.T, label, bin string, old bool) {
	srv := startRedis(t)
	e := chaos.NewEnv(t, "15.lock-stdout-lost", bin)
	name := "lost-out"
	h, err := exec.Command(lockctlBin, "--url", srv.URL, "lock", name, "--ttl", "60s").Output()
	if err != nil {
		t.Fatalf("lock %s: %v", name, err)
	}
	token := strings.TrimSpace(string(h))
	type lost struct {
		mode     string
		cmd      *exec.Cmd
		exit     int
		end      time.Duration
		ownerNow string
		stderr   bytes.Buffer
		done     chan struct{}
	}
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Fatalf("/dev/full: %v", err)
	}
	defer full.Close()
	var ls []*lost
	started, exited := 0, 0
	var mu sync.Mutex
	queued := func(n int) {
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			q, _ := lockQueue(t, srv.URL, name)
			mu.Lock()
			x := exited
			mu.Unlock()
			if q+x >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d waiters queued (%d exited)", q, n, x)
			}
		}
	}
	for _, mode := range []string{"closed", "full", "pipe"} {
		l := &lost{mode: mode, done: make(chan struct{})}
		args := []string{"--url", srv.URL, "lock", name, "-w", "20s", "--fifo", "--ttl", "60s", "--owner", "lost-" + mode}
		switch mode {
		case "closed":
			l.cmd = exec.Command("sh", append([]string{"-c", `exec "$0" "$@" >&-`, bin}, args...)...)
		case "full":
			l.cmd = exec.Command(bin, args...)
			l.cmd.Stdout = full
		case "pipe":
			l.cmd = exec.Command(bin, args...)
			l.cmd.Stdout = brokenPipe(t)
		}
		l.cmd.Stderr = &l.stderr
		if err := l.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			err := l.cmd.Wait()
			l.end = e.Rec.Now()
			// At once: whatever holds the lock now, it must not be
			// the process that just said it lost its token.
			_, l.ownerNow = lockQueue(t, srv.URL, name)
			l.exit = exitStatus(err)
			mu.Lock()
			exited++
			mu.Unlock()
			close(l.done)
		}()
		ls = append(ls, l)
		started++
		queued(started)
	}
	var ws []*chaos.Proc
	for i := 0; i < 3; i++ {
		ws = append(ws, e.Spawn(i, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: name, TTL: 5 * time.Second,
			Flags: []string{"-w", "20s", "--fifo", "--ttl", "5s"}, Work: 200 * time.Millisecond, Writes: 2}))
		started++
		queued(started)
	}
	released := e.Rec.Now()
	if out, err := exec.Command(lockctlBin, "--url", srv.URL, "release", name, "--token", token).CombinedOutput(); err != nil {
		t.Fatalf("release: %v %s", err, out)
	}
	for _, l := range ls {
		<-l.done
	}
	for _, w := range ws {
		w.Wait()
	}
	f := e.Collect(label, 60*time.Second, len(ls)+len(ws)+1)
	lastLost := time.Duration(0)
	ok := true
	var fails []string
	fail := func(format string, args ...any) { fails = append(fails, fmt.Sprintf(format, args...)) }
	for _, l := range ls {
		f.Note("stdout %s: exit %d, %v after h released; then the lock's owner was %q; its first line: %s", l.mode, l.exit, l.end-released, l.ownerNow, strings.SplitN(strings.TrimSpace(l.stderr.String()), "\n", 2)[0])
		if l.exit != 74 || l.ownerNow == "lost-"+l.mode {
			ok = false
			fail("stdout %s: exit %d, owner right after %q; want 74 and the lock given back: %s", l.mode, l.exit, l.ownerNow, l.stderr.String())
		}
		if l.end > lastLost {
			lastLost = l.end
		}
	}
	after := 0
	for _, w := range ws {
		in := e.Res.Entered(w.Holder)
		if in > lastLost {
			after++
		}
		if w.Exit != 0 {
			ok = false
			fail("run holder behind the lost tokens: exit %d (want 0: a lock given back is free before -w 20s ends, a stranded one for 60s is not): %s", w.Exit, w)
		}
	}
	if in := e.Res.Entered(ws[0].Holder); in >= 0 {
		f.Recover = in - released
	}
	f.Note("%d of %d run holders got the lock after the last lost token's exit 74", after, len(ws))
	if after == 0 {
		ok = false
		fail("no run holder waited behind a lost token: the scenario did not bite")
	}
	ok = ok && f.Fenced.AcceptedStale == 0 && f.Unfenced.Overlaps == 0
	stranded, timedOut := 0, 0
	for _, l := range ls {
		if l.exit != 74 {
			stranded++
		}
	}
	for _, w := range ws {
		if w.Exit == 75 {
			timedOut++
		}
	}
	report := earlierBuild(t, old, f, ok, "each lost token given back at once (exit 74, never its owner after); every waiter behind it got the lock within -w 20s < TTL 60s",
		stranded > 0 && timedOut > 0, "a lost token keeps the lock (no exit 74), the waiters behind it time out (75)")
	for _, m := range fails {
		report("%s", m)
	}
	chaos.Publish(f)
	t.Logf("waiters:\n%s\nfigures: %+v", procDetail(ws), f)
}

// TestOnceAtMostOnce: `lockctl once KEY --ttl 1s` and its command are
// killed (kill -9 of both) mid-command; past the claim's TTL, 6 callers
// come at once. With --at-most-once none may run the command (77 each),
// `inspect once --unknown` lists the key, and after `once resolve --retry`
// 6 concurrent callers run it exactly once. The unprotected variant is the
// default, at-least-once: one of the 6 runs the command a second time.
func TestOnceAtMostOnce(t *testing.T) {
	full(t)
	for _, v := range []struct {
		label string
		flags []string
	}{
		{"lockctl once --at-most-once", []string{"--at-most-once"}},
		{"unprotected: lockctl once (at-least-once, the default)", nil},
	} {
		t.Run(map[bool]string{true: "at-most-once", false: "at-least-once"}[len(v.flags) > 0], func(t *testing.T) {
			srv := startRedis(t)
			e := chaos.NewEnv(t, "15.once-at-most-once", lockctlBin)
			dir := t.TempDir()
			runs, pidf := filepath.Join(dir, "runs"), filepath.Join(dir, "pid")
			key, ttl, n := "pay", time.Second, 6
			once := func(extra ...string) *exec.Cmd {
				args := append([]string{"--url", srv.URL, "once", key, "--ttl", ttl.String()}, v.flags...)
				return exec.Command(lockctlBin, append(args, extra...)...)
			}
			a := once("--", "sh", "-c", `echo run >> "$0"; echo $$ > "$1"; exec sleep 30`, runs, pidf)
			a.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
			if err := a.Start(); err != nil {
				t.Fatal(err)
			}
			var child int
			for deadline := time.Now().Add(10 * time.Second); child == 0; time.Sleep(10 * time.Millisecond) {
				b, _ := os.ReadFile(pidf)
				if strings.HasSuffix(string(b), "\n") {
					child, _ = strconv.Atoi(strings.TrimSpace(string(b)))
				}
				if time.Now().After(deadline) {
					t.Fatal("the claimant's command never started")
				}
			}
			// The command runs in the process group of lockctl's helper,
			// which leads it.
			group, err := syscall.Getpgid(child)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = syscall.Kill(-group, syscall.SIGKILL) }) // teardown: gone already
			time.Sleep(300 * time.Millisecond)
			if err := a.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Kill(-group, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				t.Fatalf("kill -9 of the command's group: %v", err)
			}
			aExit := exitStatus(a.Wait())
			killed := time.Now()
			// SIGKILL is delivered asynchronously: give the group a moment
			// (bounded) to be gone before calling the fault not injected.
			gone := false
			for end := time.Now().Add(5 * time.Second); !gone && time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
				gone = chaos.Alive([]int{child}) == 0
			}
			// Past the claim's TTL by the server's clock: its last renewal
			// was before the kill.
			time.Sleep(2*ttl + 500*time.Millisecond)
			crowd := func() map[int]int {
				codes := make([]int, n)
				var wg sync.WaitGroup
				for i := 0; i < n; i++ {
					wg.Add(1)
					go func() {
						defer wg.Done()
						codes[i] = exitStatus(once("--", "sh", "-c", `echo run >> "$0"`, runs).Run())
					}()
				}
				wg.Wait()
				hist := map[int]int{}
				for _, c := range codes {
					hist[c]++
				}
				return hist
			}
			count := func() int {
				b, _ := os.ReadFile(runs)
				return strings.Count(string(b), "run")
			}
			first := crowd()
			afterCrowd := count()
			f := e.Collect(v.label, ttl, n+1)
			f.Attempted, f.ChildrenKilled = n, 1
			f.Succeeded, f.Busy, f.Unknown = first[0], first[75], first[77]
			f.Errors = n - first[0] - first[75] - first[77]
			f.Note("claimant kill -9 (exit %d) with its command (gone: %v) %v after the command started; %v later %d callers at once: exits %v; the command has run %d time(s)",
				aExit, gone, 300*time.Millisecond, time.Since(killed).Round(time.Millisecond), n, first, afterCrowd)
			if len(v.flags) == 0 {
				bites := afterCrowd == 2 && first[0] >= 1
				t.Logf("figures: %+v", f)
				f.Verdict = verdictOf(bites, "fails as it must: after the claim lapses one caller runs the command a second time")
				chaos.Publish(f)
				if !bites {
					t.Errorf("at-least-once: the command ran %d times (exits %v); want a second run: the scenario has no teeth", afterCrowd, first)
				}
				return
			}
			out, _ := exec.Command(lockctlBin, "--url", srv.URL, "inspect", "once", "--unknown").Output()
			listed := false
			for _, line := range strings.Split(string(out), "\n") {
				if strings.HasPrefix(line, key+"\t") {
					listed = true
				}
			}
			resolve := exitStatus(exec.Command(lockctlBin, "--url", srv.URL, "once", "resolve", key, "--retry", "--reason", "chaos: the provider has no charge").Run())
			second := crowd()
			afterRetry := count()
			f.Note("inspect once --unknown lists %s: %v; once resolve --retry exit %d; then %d callers at once: exits %v; the command has run %d time(s)",
				key, listed, resolve, n, second, afterRetry)
			ok := aExit == 137 && gone && first[77] == n && afterCrowd == 1 && listed && resolve == 0 &&
				afterRetry == 2 && second[0]+second[75] == n
			t.Logf("figures: %+v", f)
			f.Verdict = verdictOf(ok, "never runs twice: every caller after the lapse exits 77, inspect once --unknown lists the key, resolve --retry lets exactly one run")
			chaos.Publish(f)
			if aExit != 137 || !gone {
				t.Errorf("claimant exit %d, command gone %v: the fault was not injected", aExit, gone)
			}
			if first[77] != n || afterCrowd != 1 {
				t.Errorf("after the lapse: exits %v, the command ran %d time(s); want 77 from all %d and one run", first, afterCrowd, n)
			}
			if !listed {
				t.Errorf("inspect once --unknown does not list %s: %s", key, out)
			}
			if resolve != 0 || afterRetry != 2 || second[0]+second[75] != n {
				t.Errorf("resolve --retry exit %d, then exits %v and %d run(s) in all; want 0, then exactly one more run", resolve, second, afterRetry)
			}
		})
	}
}
