package identity

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// A fake proc filesystem: which pids run, and since when.
func fakeProc(t *testing.T, procs map[int]int64, zombies ...int) string {
	t.Helper()
	root := t.TempDir()
	write := func(dir, state string, start int64) {
		if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		// comm with spaces and a ')' of its own, as a process may name itself.
		stat := dir + " (evil) name) " + state + " 1 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 " + strconv.FormatInt(start, 10) + " 1000 10 18446744073709551615\n"
		if err := os.WriteFile(filepath.Join(root, dir, "stat"), []byte(stat), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("self", "R", 1)
	for pid, start := range procs {
		write(strconv.Itoa(pid), "S", start)
	}
	for _, pid := range zombies {
		write(strconv.Itoa(pid), "Z", 5)
	}
	return root
}

func TestCheckProcess(t *testing.T) {
	root := fakeProc(t, map[int]int64{4242: 987654}, 4244)
	for _, c := range []struct {
		pid   int
		start int64
		want  Process
	}{
		{4242, 987654, ProcessAlive},
		{4242, 0, ProcessAlive},       // no start time recorded: the pid runs, that is all
		{4242, 123456, ProcessReused}, // another process has the pid now
		{4243, 987654, ProcessGone},   // nobody has it
		{4243, 0, ProcessGone},        //
		{4244, 5, ProcessGone},        // a zombie: dead, not yet reaped
		{0, 987654, ProcessUnknown},   // no pid (a custom owner)
		{-1, 987654, ProcessUnknown},  //
	} {
		if got := checkProcess(root, c.pid, c.start); got != c.want {
			t.Errorf("checkProcess(pid %d, start %d) = %q, want %q", c.pid, c.start, got, c.want)
		}
	}
	if got, dead := startTime(root, 4242); got != 987654 || dead {
		t.Errorf("startTime = %d %v, want 987654, alive", got, dead)
	}
	// Without a proc filesystem nothing can be told, not even "gone".
	if got := checkProcess(t.TempDir(), 4242, 987654); got != ProcessUnknown {
		t.Errorf("checkProcess without /proc = %q", got)
	}
}

// On this host's real /proc: this process is alive and itself, a recorded
// start time that differs means its pid was reused, and a killed child is
// gone, reaped or not.
func TestCheckProcessReal(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Fatalf("no /proc on this host: %v", err)
	}
	self := PIDStart()
	if self <= 0 {
		t.Fatalf("PIDStart() = %d", self)
	}
	if got := CheckProcess(os.Getpid(), self); got != ProcessAlive {
		t.Errorf("this process: %q", got)
	}
	if got := CheckProcess(os.Getpid(), self+1); got != ProcessReused {
		t.Errorf("this pid with another start time: %q", got)
	}
	c := exec.Command("sleep", "60")
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	start := StartTime(c.Process.Pid)
	if got := CheckProcess(c.Process.Pid, start); got != ProcessAlive || start <= 0 {
		t.Errorf("a running child: %q (start %d)", got, start)
	}
	if err := c.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Killed, not yet reaped: a zombie, dead all the same.
	for i := 0; i < 200 && CheckProcess(c.Process.Pid, start) == ProcessAlive; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	if got := CheckProcess(c.Process.Pid, start); got != ProcessGone {
		t.Errorf("a killed child, unreaped: %q", got)
	}
	_ = c.Wait()
	if got := CheckProcess(c.Process.Pid, start); got != ProcessGone {
		t.Errorf("a reaped child: %q", got)
	}
}
