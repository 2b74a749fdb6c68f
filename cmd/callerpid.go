package cmd

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lib/identity"
)

// callerPID is the process that called lock: its parent, or, when that
// parent is a subshell forked only to run it (`$(lockctl lock ... || echo
// ...)`: the same program with the same arguments as its own parent, gone
// as soon as lockctl returns), the shell the subshell was forked from.
// /proc tells, or, on a system without it (macOS, the BSDs), ps(1); where
// neither can, it is the parent.
func callerPID() int { return callerOf(os.Getppid(), processTable("/proc")) }

// callerOf is callerPID for a lock whose parent is pid, reading procs.
func callerOf(pid int, procs processes) int {
	for range 8 {
		parent, ok := procs.parent(pid)
		if !ok || parent <= 1 || !sameProgram(procs, pid, parent) {
			break
		}
		pid = parent
	}
	return pid
}

// processes tells a process's parent and the program it runs.
type processes interface {
	parent(pid int) (int, bool)
	// program is the executable and command line of pid, equal for a
	// forked subshell and its shell.
	program(pid int) (string, bool)
}

// processTable reads the proc filesystem mounted at root when there is
// one, and asks ps otherwise.
func processTable(root string) processes {
	if _, err := os.Stat(filepath.Join(root, "self", "stat")); err == nil {
		return procfs(root)
	}
	return &psTable{}
}

// sameProgram reports whether a and b run the same executable with the
// same command line, as a forked subshell and its shell do.
func sameProgram(procs processes, a, b int) bool {
	x, okx := procs.program(a)
	y, oky := procs.program(b)
	return okx && oky && x == y
}

// procfs is a proc filesystem (Linux), at the directory it names.
type procfs string

// parent reads pid's parent from /proc/PID/stat.
func (root procfs) parent(pid int) (int, bool) {
	f, ok := identity.StatFields(string(root), pid)
	if !ok || len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

func (root procfs) program(pid int) (string, bool) {
	dir := filepath.Join(string(root), strconv.Itoa(pid))
	exe, err := os.Readlink(filepath.Join(dir, "exe"))
	if err != nil {
		return "", false
	}
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return "", false
	}
	return exe + "\x00" + string(cmdline), true
}

// psTable asks ps(1) (its POSIX options, which macOS and the BSDs have),
// once per process.
type psTable struct {
	seen map[int]psEntry
}

type psEntry struct {
	ppid    int
	program string // comm and args
	ok      bool
}

func (t *psTable) parent(pid int) (int, bool) {
	e := t.entry(pid)
	return e.ppid, e.ok
}

func (t *psTable) program(pid int) (string, bool) {
	e := t.entry(pid)
	return e.program, e.ok
}

func (t *psTable) entry(pid int) psEntry {
	if e, ok := t.seen[pid]; ok {
		return e
	}
	if t.seen == nil {
		t.seen = map[int]psEntry{}
	}
	var e psEntry
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "ps", "-o", "ppid=", "-o", "comm=", "-o", "args=", "-p", strconv.Itoa(pid))
	c.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := c.Output(); err == nil {
		line := strings.TrimSpace(string(out))
		ppid, rest, _ := strings.Cut(line, " ")
		if n, err := strconv.Atoi(ppid); err == nil && !strings.Contains(line, "\n") {
			e = psEntry{ppid: n, program: strings.TrimSpace(rest), ok: true}
		}
	}
	t.seen[pid] = e
	return e
}
