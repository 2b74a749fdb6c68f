package runner_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli/runner"
	"github.com/lockctl/lockctl/internal/cli/support/child"
	"github.com/lockctl/lockctl/internal/lib/watchdog"
	"github.com/lockctl/lockctl/pkg/lock"
)

const bound = 20 * time.Second

// TestMain lets the test binary double as a small lockctl-like program for
// the SIGSTOP test, which must stop a whole process.
func TestMain(m *testing.M) {
	if os.Getenv("LOCKCTL_RUNNER_HELPER") == "1" {
		os.Exit(helperMain())
	}
	os.Exit(m.Run())
}

type fakeLease struct {
	lost   chan error
	margin time.Duration
	lapsed atomic.Bool // the deadline passed, whether or not lost was sent
}

func newLease(margin time.Duration) *fakeLease {
	return &fakeLease{lost: make(chan error, 1), margin: margin}
}
func (l *fakeLease) Lost() <-chan error    { return l.lost }
func (l *fakeLease) Renewals() int64       { return 42 }
func (l *fakeLease) Margin() time.Duration { return l.margin }
func (l *fakeLease) Held() bool            { return !l.lapsed.Load() }

type outcome struct {
	res runner.Result
	at  time.Time
}

// supervise starts script in its own group and supervises it in the
// background; the script writes its first line to $READY when it is set up.
func supervise(t *testing.T, ctx context.Context, script string, cfg *runner.Config) (*child.Child, <-chan outcome) {
	t.Helper()
	ready := filepath.Join(t.TempDir(), "ready")
	c, err := child.Start(child.Spec{Script: script, Shell: "/bin/sh", Env: []string{"READY=" + ready}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Kill()
		<-c.Done()
	})
	ch := make(chan outcome, 1)
	go func() {
		r := runner.Supervise(ctx, c, cfg)
		ch <- outcome{r, time.Now()}
	}()
	deadline := time.Now().Add(bound)
	for {
		if b, err := os.ReadFile(ready); err == nil && strings.HasSuffix(string(b), "\n") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child never got ready")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return c, ch
}

func result(t *testing.T, ch <-chan outcome) outcome {
	t.Helper()
	select {
	case o := <-ch:
		return o
	case <-time.After(bound):
		t.Fatalf("Supervise still running after %v", bound)
	}
	panic("unreachable")
}

func groupGone(t *testing.T, c *child.Child) {
	t.Helper()
	if err := syscall.Kill(-c.Pid(), 0); err != syscall.ESRCH {
		t.Errorf("process group %d still there after Supervise returned (kill: %v)", c.Pid(), err)
	}
}

var lostErr = &lock.LostError{Name: "deploy", Expired: true}

func TestLostTerminatesGroupAndExits76(t *testing.T) {
	lease := newLease(time.Minute)
	c, ch := supervise(t, context.Background(), `sleep 60 & echo > "$READY"; wait`, &runner.Config{Lease: lease})
	lease.lost <- lostErr
	o := result(t, ch)
	if !o.res.Lost || !errors.Is(o.res.LostErr, lock.ErrLost) || o.res.End != runner.Lost {
		t.Errorf("result %+v, want lost with exit 76", o.res)
	}
	if o.res.Status.Signal != syscall.SIGTERM {
		t.Errorf("child %v, want killed by SIGTERM", o.res.Status)
	}
	if o.res.Renewals != 42 {
		t.Errorf("Renewals = %d, want the lease's 42", o.res.Renewals)
	}
	groupGone(t, c)
}

// Lost even though the child then exits 0: its work was not protected to
// the end.
func TestLostWinsOverCleanExit(t *testing.T) {
	lease := newLease(time.Minute)
	_, ch := supervise(t, context.Background(), `trap "exit 0" TERM; echo > "$READY"; while :; do sleep 0.05; done`, &runner.Config{Lease: lease})
	lease.lost <- lostErr
	o := result(t, ch)
	if o.res.Status != (child.Status{}) || o.res.End != runner.Lost {
		t.Errorf("child %v, end %v; want child 0 and lost (exit 76)", o.res.Status, o.res.End)
	}
}

// The lease's deadline passed before the group ended, but its watcher had
// not delivered the loss yet: still 76, never the child's 0.
func TestLapsedAtEndWithoutLossDeliveredExits76(t *testing.T) {
	lease := newLease(time.Minute)
	_, ch := supervise(t, context.Background(), `echo > "$READY"; sleep 1`, &runner.Config{Lease: lease})
	lease.lapsed.Store(true)
	o := result(t, ch)
	if o.res.Status != (child.Status{}) || !o.res.Lost || o.res.End != runner.Lost {
		t.Errorf("child %v, lost %v, end %v; want child 0, lost and exit 76", o.res.Status, o.res.Lost, o.res.End)
	}
}

func TestLostKillSendsSIGKILL(t *testing.T) {
	lease := newLease(time.Minute)
	_, ch := supervise(t, context.Background(), `echo > "$READY"; sleep 60`, &runner.Config{Lease: lease, OnLost: runner.OnLostKill})
	lease.lost <- lostErr
	o := result(t, ch)
	if o.res.Status.Signal != syscall.SIGKILL || o.res.End != runner.Lost {
		t.Errorf("result %+v, want SIGKILL and 76", o.res)
	}
}

// The grace after a loss is cut to fit the lease margin: a TERM-ignoring
// child is killed long before the 5s kill-after.
func TestLostGraceCappedByMargin(t *testing.T) {
	lease := newLease(300 * time.Millisecond) // grace 200ms
	_, ch := supervise(t, context.Background(), `trap "" TERM; echo > "$READY"; sleep 60`, &runner.Config{Lease: lease, KillAfter: time.Minute})
	sent := time.Now()
	lease.lost <- lostErr
	o := result(t, ch)
	if o.res.Status.Signal != syscall.SIGKILL || o.res.End != runner.Lost {
		t.Errorf("result %+v, want SIGKILL and 76", o.res)
	}
	if took := o.at.Sub(sent); took > 30*time.Second {
		t.Errorf("killed %v after the loss: the one-minute kill-after was not capped", took)
	}
}

func TestLostIgnoreLetsChildFinish(t *testing.T) {
	lease := newLease(time.Minute)
	dir := t.TempDir()
	goFile := filepath.Join(dir, "go")
	c, ch := supervise(t, context.Background(), `echo > "$READY"; while [ ! -e `+goFile+` ]; do sleep 0.05; done; exit 4`,
		&runner.Config{Lease: lease, OnLost: runner.OnLostIgnore})
	lease.lost <- lostErr
	select {
	case o := <-ch:
		t.Fatalf("Supervise returned %+v: the child was stopped despite ignore", o.res)
	case <-time.After(300 * time.Millisecond):
	}
	if err := syscall.Kill(c.Pid(), 0); err != nil {
		t.Fatalf("child gone after the loss with ignore: %v", err)
	}
	if err := os.WriteFile(goFile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	o := result(t, ch)
	if !o.res.Lost || o.res.End != runner.Exited || o.res.Status != (child.Status{Code: 4}) {
		t.Errorf("result %+v, want lost recorded and the child's exit 4", o.res)
	}
}

func TestMaxRuntimeExits124(t *testing.T) {
	c, ch := supervise(t, context.Background(), `sleep 60 & echo > "$READY"; wait`, &runner.Config{MaxRuntime: 200 * time.Millisecond})
	o := result(t, ch)
	if !o.res.TimedOut || o.res.Lost || o.res.End != runner.TimedOut || o.res.Status.Signal != syscall.SIGTERM {
		t.Errorf("result %+v, want timed out, exit 124, child SIGTERMed", o.res)
	}
	groupGone(t, c)
}

// The limit leaves the shell ample time to set its trap before SIGTERM.
func TestMaxRuntimeEscalatesToKill(t *testing.T) {
	_, ch := supervise(t, context.Background(), `trap "" TERM; echo > "$READY"; sleep 60`,
		&runner.Config{MaxRuntime: time.Second, KillAfter: 200 * time.Millisecond})
	o := result(t, ch)
	if o.res.Status.Signal != syscall.SIGKILL || o.res.End != runner.TimedOut {
		t.Errorf("result %+v, want SIGKILL and 124", o.res)
	}
}

func TestSignalsForwardedToGroup(t *testing.T) {
	sigs := make(chan os.Signal, 1)
	dir := t.TempDir()
	got := filepath.Join(dir, "got")
	// The grandchild reports the signal; the leader exits 7 once it has.
	// The grandchild says it is ready only once its trap is set.
	script := `trap ":" USR1
(trap "echo USR1 > ` + got + `; exit 0" USR1; echo > "$READY"; while :; do sleep 0.05; done) &
wait
while [ ! -e ` + got + ` ]; do sleep 0.05; done
exit 7`
	_, ch := supervise(t, context.Background(), script, &runner.Config{Signals: sigs})
	sigs <- syscall.SIGUSR1
	o := result(t, ch)
	if o.res.End != runner.Exited || o.res.Status != (child.Status{Code: 7}) || o.res.Lost || o.res.TimedOut {
		t.Errorf("result %+v, want the child's exit 7", o.res)
	}
	if b, _ := os.ReadFile(got); string(b) != "USR1\n" {
		t.Errorf("grandchild got %q", b)
	}
}

func TestExitCodePassesThrough(t *testing.T) {
	for _, tc := range []struct {
		script string
		status child.Status
	}{{"exit 0", child.Status{}}, {"exit 3", child.Status{Code: 3}}, {"kill -9 $$", child.Status{Code: -1, Signal: syscall.SIGKILL}}} {
		t.Run(tc.script, func(t *testing.T) {
			_, ch := supervise(t, context.Background(), `echo > "$READY"; `+tc.script, &runner.Config{Lease: newLease(time.Minute)})
			o := result(t, ch)
			if o.res.End != runner.Exited || o.res.Status != tc.status || o.res.Lost || o.res.TimedOut {
				t.Errorf("result %+v, want the child's %v", o.res, tc.status)
			}
		})
	}
}

// A background job that stays in the group keeps Supervise waiting after
// the leader exits, and a loss then still reaches it.
func TestWaitsForGroupAfterLeaderExits(t *testing.T) {
	lease := newLease(time.Minute)
	c, ch := supervise(t, context.Background(), `sleep 60 & echo > "$READY"; exit 0`, &runner.Config{Lease: lease})
	select {
	case <-c.Exited():
	case <-time.After(bound):
		t.Fatal("leader did not exit")
	}
	select {
	case o := <-ch:
		t.Fatalf("Supervise returned %+v while the background sleep runs", o.res)
	case <-time.After(300 * time.Millisecond):
	}
	lease.lost <- lostErr
	o := result(t, ch)
	if o.res.End != runner.Lost || o.res.Status != (child.Status{}) {
		t.Errorf("result %+v, want 76 with the leader's 0", o.res)
	}
	groupGone(t, c)
}

func TestCancelTerminates(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	_, ch := supervise(t, ctx, `echo > "$READY"; sleep 60`, nil)
	cancel()
	o := result(t, ch)
	if o.res.Status.Signal != syscall.SIGTERM || o.res.End != runner.Exited {
		t.Errorf("result %+v, want the child's SIGTERM (143)", o.res)
	}
}

func TestParseOnLost(t *testing.T) {
	for s, want := range map[string]runner.OnLost{"term": runner.OnLostTerm, "kill": runner.OnLostKill, "ignore": runner.OnLostIgnore} {
		if got, err := runner.ParseOnLost(s); err != nil || got != want || got.String() != s {
			t.Errorf("ParseOnLost(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := runner.ParseOnLost("stop"); !errors.Is(err, runner.ErrBadOnLost) {
		t.Errorf("ParseOnLost(stop) err = %v", err)
	}
}

func TestLossGrace(t *testing.T) {
	for _, tc := range []struct{ killAfter, margin, want time.Duration }{
		{5 * time.Second, 7500 * time.Millisecond, 5 * time.Second},
		{5 * time.Second, 3 * time.Second, 2 * time.Second},
		{time.Second, 3 * time.Second, time.Second},
		{5 * time.Second, 0, 5 * time.Second},
	} {
		if got := runner.LossGrace(tc.killAfter, tc.margin); got != tc.want {
			t.Errorf("LossGrace(%v, %v) = %v, want %v", tc.killAfter, tc.margin, got, tc.want)
		}
	}
}

// helperMain holds a 1s lease through a watchdog whose renewals always
// succeed at once, runs `sleep 60` under Supervise and reports the result.
// Only the local deadline can make it lose the lease.
func helperMain() int {
	sigs, stop := child.Notify()
	defer stop()
	renew := renewFunc(func(_ context.Context, _, _ string, ttl time.Duration) (time.Duration, error) { return ttl, nil })
	w, err := watchdog.Start(context.Background(), renew, "deploy", "tok", time.Second, time.Time{}, nil)
	if err != nil {
		fmt.Println("error", err)
		return 70
	}
	defer w.Stop()
	c, err := child.Start(child.Spec{Argv: []string{"sleep", "60"}})
	if err != nil {
		fmt.Println("error", err)
		return 70
	}
	fmt.Println("pgid", c.Pid())
	res := runner.Supervise(context.Background(), c, &runner.Config{Signals: sigs, Lease: w})
	exit := res.Status.Code
	if res.End == runner.Lost {
		exit = exitLost
	}
	fmt.Println("result", exit, res.Lost, res.Renewals, res.Status.Signal == syscall.SIGTERM)
	return exit
}

// exitLost is what lockctl exits with for a run whose lease was lost.
const exitLost = 76

type renewFunc func(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error)

func (f renewFunc) Renew(ctx context.Context, name, token string, ttl time.Duration) (time.Duration, error) {
	return f(ctx, name, token, ttl)
}

// lockctl stopped (SIGSTOP) for longer than the TTL, then continued: it
// must notice the loss at once, terminate the child and exit 76, although
// every renewal it now sends succeeds.
func TestStoppedLongerThanTTLExits76(t *testing.T) {
	helper := exec.Command(os.Args[0], "-test.run=^$")
	helper.Env = append(os.Environ(), "LOCKCTL_RUNNER_HELPER=1")
	helper.Stderr = os.Stderr
	out, err := helper.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	// Cleanup: the helper may have exited already.
	defer func() { _ = helper.Process.Kill() }()
	lines := bufio.NewScanner(out)
	if !lines.Scan() {
		t.Fatal("helper said nothing")
	}
	var pgid int
	if _, err := fmt.Sscanf(lines.Text(), "pgid %d", &pgid); err != nil {
		t.Fatalf("helper: %q", lines.Text())
	}
	// Cleanup: the group may be gone already.
	defer func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) }()
	time.Sleep(700 * time.Millisecond) // a couple of renewals
	if err := helper.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if err := syscall.Kill(-pgid, 0); err != nil {
		t.Fatalf("the child died while lockctl was stopped: %v", err)
	}
	if err := helper.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	var last string
	go func() {
		for lines.Scan() {
			last = lines.Text()
		}
		exited <- helper.Wait()
	}()
	select {
	case err = <-exited:
	case <-time.After(bound):
		t.Fatal("helper still running after SIGCONT")
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitLost {
		t.Fatalf("helper ended with %v (%s), want exit 76", err, last)
	}
	var exit, renewals int
	var lost, termed bool
	if _, err := fmt.Sscanf(last, "result %d %t %d %t", &exit, &lost, &renewals, &termed); err != nil || !lost || !termed || renewals == 0 {
		t.Errorf("helper result %q: want lost, child SIGTERMed, renewals before the stop", last)
	}
	if err := syscall.Kill(-pgid, 0); err != syscall.ESRCH {
		t.Errorf("child group still there: %v", err)
	}
}
