package child_test

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli/support/child"
)

// bound is a generous limit on how long anything here may take on a noisy
// machine; no test measures speed.
const bound = 20 * time.Second

func start(t *testing.T, spec child.Spec) *child.Child {
	t.Helper()
	c, err := child.Start(spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = c.Kill()
		<-c.Done()
	})
	return c
}

func waitDone(t *testing.T, c *child.Child) child.Status {
	t.Helper()
	select {
	case <-c.Done():
		return c.Wait()
	case <-time.After(bound):
		t.Fatalf("process group %d still alive after %v", c.Pid(), bound)
	}
	panic("unreachable")
}

// waitFile waits for a script to write path (its way of saying "ready")
// and returns the content.
func waitFile(t *testing.T, path string) string {
	t.Helper()
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		if b, err := os.ReadFile(path); err == nil && strings.HasSuffix(string(b), "\n") {
			return strings.TrimSpace(string(b))
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s never written", path)
	return ""
}

func alive(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || err == syscall.EPERM
}

func TestExitStatusPassesThrough(t *testing.T) {
	// (The exit status lockctl makes of them: cmd's TestChildStatusExitsLikeAShell.)
	for _, tc := range []struct {
		script string
		code   int
		sig    syscall.Signal
	}{
		{"exit 0", 0, 0},
		{"exit 3", 3, 0},
		{"kill -9 $$", -1, syscall.SIGKILL},
		{"kill -USR1 $$", -1, syscall.SIGUSR1},
	} {
		t.Run(tc.script, func(t *testing.T) {
			c := start(t, child.Spec{Argv: []string{"sh", "-c", tc.script}})
			st := waitDone(t, c)
			if st.Code != tc.code || st.Signal != tc.sig {
				t.Errorf("status %+v, want code %d signal %v", st, tc.code, tc.sig)
			}
		})
	}
}

func TestStartErrorsMapLikeAShell(t *testing.T) {
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain")
	if err := os.WriteFile(plain, []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	badInterp := filepath.Join(dir, "bad-interp")
	if err := os.WriteFile(badInterp, []byte("#!/nonexistent/interpreter\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	// (The exit status lockctl makes of them, 127 and 126: cmd's
	// TestStartErrorsExitLikeAShell.)
	for _, tc := range []struct {
		name string
		argv []string
		kind error
	}{
		{"missing in PATH", []string{"lockctl-test-no-such-command"}, child.ErrNotFound},
		{"missing path", []string{filepath.Join(dir, "nope")}, child.ErrNotFound},
		{"not executable", []string{plain}, child.ErrNotExecutable},
		{"directory", []string{dir + "/"}, child.ErrNotExecutable},
		{"bad interpreter", []string{badInterp}, child.ErrNotExecutable},
		{"empty", nil, child.ErrNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := child.Start(child.Spec{Argv: tc.argv})
			if err == nil {
				c.Wait()
				t.Fatalf("started %q", tc.argv)
			}
			var se *child.StartError
			if !errors.Is(err, tc.kind) || !errors.As(err, &se) {
				t.Fatalf("err = %v, want a *child.StartError, %v", err, tc.kind)
			}
		})
	}
}

func TestScriptRunsThroughSHELL(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "marker")
	wrapper := filepath.Join(dir, "myshell")
	script := "#!/bin/sh\necho \"$@\" > " + marker + "\nexec /bin/sh \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("SHELL", wrapper)
	c := start(t, child.Spec{Script: "exit 5"})
	if st := waitDone(t, c); st != (child.Status{Code: 5}) {
		t.Fatalf("status %v, want exit status 5", st)
	}
	if got, _ := os.ReadFile(marker); string(got) != "-c exit 5\n" {
		t.Fatalf("$SHELL got args %q, want \"-c exit 5\"", got)
	}

	t.Setenv("SHELL", "")
	out := filepath.Join(dir, "out")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c = start(t, child.Spec{Script: `echo "$0"`, Stdout: f})
	waitDone(t, c)
	if got, _ := os.ReadFile(out); string(got) != "/bin/sh\n" {
		t.Fatalf("without $SHELL the script ran under %q, want /bin/sh", got)
	}
}

func TestEnvAndStdioPassThrough(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "in")
	if err := os.WriteFile(in, []byte("from stdin\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdin, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	outPath := filepath.Join(dir, "out")
	stdout, err := os.Create(outPath)
	if err != nil {
		t.Fatal(err)
	}
	defer stdout.Close()
	// The child must get lockctl's own descriptors, not pipes: it sees the
	// very file as its fd 0 and fd 1.
	c := start(t, child.Spec{
		Script: `cat; echo "$FOO $HOME_SEEN"; readlink /proc/self/fd/0 /proc/self/fd/1`,
		Env:    []string{"FOO=bar", "HOME_SEEN=yes"},
		Stdin:  stdin, Stdout: stdout,
	})
	if st := waitDone(t, c); st != (child.Status{}) {
		t.Fatalf("status %v", st)
	}
	got, _ := os.ReadFile(outPath)
	want := "from stdin\nbar yes\n" + in + "\n" + outPath + "\n"
	if string(got) != want {
		t.Fatalf("child wrote %q, want %q", got, want)
	}
}

func TestSignalReachesGrandchild(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	c := start(t, child.Spec{Argv: []string{"sh", "-c", "sleep 60 & echo $! > " + pidfile + "; wait"}})
	grandchild, _ := strconv.Atoi(waitFile(t, pidfile))
	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	st := waitDone(t, c)
	if st.Signal != syscall.SIGTERM {
		t.Errorf("status %v, want killed by SIGTERM", st)
	}
	if alive(grandchild) {
		t.Errorf("grandchild %d survived the group's SIGTERM", grandchild)
	}
	if err := c.Signal(syscall.SIGTERM); !errors.Is(err, os.ErrProcessDone) {
		t.Errorf("signal after Done: %v, want os.ErrProcessDone", err)
	}
}

// The leader dies of SIGTERM but a grandchild ignores it: the child is not
// gone until the grandchild is, and Kill reaches it.
func TestDoneWaitsForTheWholeGroup(t *testing.T) {
	pidfile := filepath.Join(t.TempDir(), "pid")
	c := start(t, child.Spec{Argv: []string{"sh", "-c",
		`trap "" TERM; sleep 60 & pid=$!; trap - TERM; echo $pid > ` + pidfile + `; wait`}})
	grandchild, _ := strconv.Atoi(waitFile(t, pidfile))
	if err := c.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.Exited():
	case <-time.After(bound):
		t.Fatal("leader did not exit on SIGTERM")
	}
	select {
	case <-c.Done():
		t.Fatal("Done closed while a member of the group runs")
	case <-time.After(300 * time.Millisecond):
	}
	if !alive(grandchild) {
		t.Fatal("the TERM-ignoring grandchild died: the test proves nothing")
	}
	if err := c.Kill(); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, c); st.Signal != syscall.SIGTERM {
		t.Errorf("status %v, want the leader's SIGTERM", st)
	}
	if alive(grandchild) {
		t.Errorf("grandchild %d alive after Done", grandchild)
	}
}

func TestTerminateEscalatesToKill(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	c := start(t, child.Spec{Argv: []string{"sh", "-c", `trap "" TERM; echo > ` + ready + `; sleep 60`}})
	waitFile(t, ready)
	grace := 300 * time.Millisecond
	begin := time.Now()
	if err := c.Terminate(grace); err != nil {
		t.Fatal(err)
	}
	st := waitDone(t, c)
	if st.Signal != syscall.SIGKILL {
		t.Errorf("status %v, want killed by SIGKILL", st)
	}
	if waited := time.Since(begin); waited < grace {
		t.Errorf("SIGKILL came %v after SIGTERM, before the %v grace", waited, grace)
	}
}

func TestTerminateEndsCooperativeChildWithSIGTERM(t *testing.T) {
	ready := filepath.Join(t.TempDir(), "ready")
	c := start(t, child.Spec{Argv: []string{"sh", "-c", `echo > ` + ready + `; sleep 60 & wait`}})
	waitFile(t, ready)
	if err := c.Terminate(bound); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, c); st.Signal != syscall.SIGTERM {
		t.Errorf("status %v, want killed by SIGTERM", st)
	}
}

// A stopped group would never act on SIGTERM; Terminate continues it.
func TestTerminateReachesAStoppedGroup(t *testing.T) {
	c := start(t, child.Spec{Argv: []string{"sleep", "60"}})
	if err := c.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	if err := c.Terminate(bound); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, c); st.Signal != syscall.SIGTERM {
		t.Errorf("status %v, want killed by SIGTERM", st)
	}
}

func TestNotifyCatchesForwardedSignals(t *testing.T) {
	sigs, stop := child.Notify()
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR2); err != nil {
		t.Fatal(err)
	}
	select {
	case s := <-sigs:
		if s != syscall.SIGUSR2 {
			t.Errorf("got %v", s)
		}
	case <-time.After(bound):
		t.Fatal("SIGUSR2 not delivered to the channel")
	}
}

// BenchmarkStartWait is the cost lockctl adds around a trivial command:
// fork/exec in a new group, reap, and the first group-empty check.
func BenchmarkStartWait(b *testing.B) {
	for b.Loop() {
		c, err := child.Start(child.Spec{Argv: []string{"/bin/true"}})
		if err != nil {
			b.Fatal(err)
		}
		if st := c.Wait(); st != (child.Status{}) {
			b.Fatal(st)
		}
	}
}

// A command that leaves nothing behind in its group is found gone at the
// first look: the witness, which lockctl added to the group, is reaped
// before that look, so it never makes `run` sleep a poll interval (20 ms
// on every `lockctl run x -- true`).
func TestWitnessDoesNotDelayTheEnd(t *testing.T) {
	for i := 0; i < 5; i++ {
		c := start(t, child.Spec{Argv: []string{"true"}})
		if !c.HasWitness() {
			t.Fatal("no witness started; the test needs /bin/sh")
		}
		waitDone(t, c)
		if n := c.Polls(); n != 0 {
			t.Fatalf("run %d: the group was polled %d time(s) after its only command exited", i, n)
		}
	}
}

// GroupReceived tells a signal that reached the whole group (a terminal's
// ^C) from one a process sent itself: only the first may interrupt the
// shell that started lockctl.
func TestGroupReceived(t *testing.T) {
	dir := t.TempDir()
	up := filepath.Join(dir, "up")
	c := start(t, child.Spec{Argv: []string{"sh", "-c", `kill -INT $$`}})
	if !c.HasWitness() {
		t.Fatal("no witness started; the test needs /bin/sh")
	}
	if st := waitDone(t, c); st.Signal != syscall.SIGINT {
		t.Fatalf("status %+v, want death by SIGINT", st)
	}
	if c.GroupReceived(syscall.SIGINT) {
		t.Error("a child that killed itself: GroupReceived(SIGINT) = true")
	}

	c = start(t, child.Spec{Argv: []string{"sh", "-c", `echo > ` + up + `; exec sleep 30`}})
	for deadline := time.Now().Add(bound); ; time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(up); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("child never started")
		}
	}
	// Leave the witness time to set its traps, then signal the whole
	// group, as a terminal's ^C does.
	time.Sleep(500 * time.Millisecond)
	if err := syscall.Kill(-c.Pid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if st := waitDone(t, c); st.Signal != syscall.SIGINT {
		t.Fatalf("status %+v, want death by SIGINT", st)
	}
	if !c.GroupReceived(syscall.SIGINT) {
		t.Error("a group signalled as a whole: GroupReceived(SIGINT) = false")
	}
}
