package scripttest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/creack/pty"
	"github.com/rogpeppe/go-internal/testscript"
)

// A ptyProc is `lockctl top` (or any full-screen program) on a pseudo-terminal.
type ptyProc struct {
	cmd        *exec.Cmd
	ptmx, tty  *os.File
	sttyBefore string

	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
}

var (
	ptysMu sync.Mutex
	ptys   = map[*testscript.TestScript]*ptyProc{}
)

func sttyState(ts *testscript.TestScript, tty *os.File) string {
	c := exec.Command("stty", "-g")
	c.Stdin = tty
	out, err := c.Output()
	ts.Check(err)
	return strings.TrimSpace(string(out))
}

// pty-start [-cols N] [-rows N] PROG ARGS...: run PROG (from the script's
// PATH) on a fresh pseudo-terminal (120 columns and 24 rows unless -cols and
// -rows), its stdin, stdout and stderr, as the session leader; its screen is
// read by pty-expect. The terminal's stty state is recorded for pty-wait.
func cmdPtyStart(ts *testscript.TestScript, neg bool, args []string) {
	cols, rows := 120, 24
	for len(args) > 2 && (args[0] == "-cols" || args[0] == "-rows") {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		if args[0] == "-cols" {
			cols = n
		} else {
			rows = n
		}
		args = args[2:]
	}
	if neg || len(args) < 1 {
		ts.Fatalf("usage: pty-start [-cols N] [-rows N] PROG ARGS...")
	}
	ptmx, tty, err := pty.Open()
	ts.Check(err)
	ts.Check(pty.Setsize(ptmx, &pty.Winsize{Rows: uint16(rows), Cols: uint16(cols)}))
	p := &ptyProc{ptmx: ptmx, tty: tty, done: make(chan struct{})}
	p.sttyBefore = sttyState(ts, tty)
	path, err := exec.LookPath(args[0])
	if err != nil {
		// The script's PATH, not the test process's.
		for _, dir := range strings.Split(ts.Getenv("PATH"), ":") {
			if _, serr := os.Stat(dir + "/" + args[0]); serr == nil {
				path, err = dir+"/"+args[0], nil
				break
			}
		}
	}
	ts.Check(err)
	p.cmd = exec.Command(path, args[1:]...)
	p.cmd.Dir = ts.Getenv("WORK")
	env := os.Environ()
	for _, k := range []string{"PATH", "HOME", "LOCKCTL_URL", "XDG_CONFIG_HOME", "NO_COLOR", "REDIS_URL", "TERM", "LOCKCTL_NO_EVENTS"} {
		env = append(env, k+"="+ts.Getenv(k))
	}
	p.cmd.Env = env
	p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = tty, tty, tty
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true}
	ts.Check(p.cmd.Start())
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := ptmx.Read(b)
			p.mu.Lock()
			p.out.Write(b[:n])
			p.mu.Unlock()
			if err != nil {
				close(p.done)
				return
			}
		}
	}()
	ptysMu.Lock()
	ptys[ts] = p
	ptysMu.Unlock()
	ts.Defer(func() {
		// The script is over: the process may have exited, and its status
		// was checked (or not wanted) by the script.
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
		_ = ptmx.Close()
		_ = tty.Close()
		ptysMu.Lock()
		delete(ptys, ts)
		ptysMu.Unlock()
	})
}

func ptyOf(ts *testscript.TestScript) *ptyProc {
	ptysMu.Lock()
	defer ptysMu.Unlock()
	p := ptys[ts]
	if p == nil {
		ts.Fatalf("no pty-start")
	}
	return p
}

const clearScreen = "\x1b[H\x1b[2J"

var refreshRE = regexp.MustCompile(`refresh #(\d+)`)

// frames returns the complete screens drawn so far (each starts with a
// clear; the last is complete once the next one has begun).
func (p *ptyProc) frames() []string {
	p.mu.Lock()
	s := p.out.String()
	p.mu.Unlock()
	parts := strings.Split(s, clearScreen)
	if len(parts) < 2 {
		return nil
	}
	return parts[1 : len(parts)-1]
}

func refreshOf(frame string) int {
	m := refreshRE.FindStringSubmatch(frame)
	if m == nil {
		return -1
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// pty-expect [-refreshes N] REGEXP: within N (default 2) screen refreshes
// after the latest one complete now, a screen matches REGEXP (with !: a
// screen does not match it). Time is not bounded tightly: a loaded machine
// only makes the refreshes slower.
func cmdPtyExpect(ts *testscript.TestScript, neg bool, args []string) {
	within := 2
	if len(args) == 3 && args[0] == "-refreshes" {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		within, args = n, args[2:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: pty-expect [-refreshes N] REGEXP")
	}
	re := regexp.MustCompile(args[0])
	p := ptyOf(ts)
	// The base is the screen being drawn now, complete or not: its scan is
	// over, so the second refresh after it surely scanned after this point.
	base := 0
	p.mu.Lock()
	if i := strings.LastIndex(p.out.String(), clearScreen); i >= 0 {
		base = refreshOf(p.out.String()[i:])
	}
	p.mu.Unlock()
	if fs := p.frames(); base < 0 && len(fs) > 0 {
		// Its title has not arrived yet: the last complete screen's.
		base = refreshOf(fs[len(fs)-1])
	}
	base = max(base, 0)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		for _, f := range p.frames() {
			n := refreshOf(f)
			if n <= base {
				continue
			}
			if re.MatchString(f) != neg {
				return
			}
			if n > base+within {
				ts.Fatalf("no screen within %d refreshes after #%d %s %q; the last:\n%s", within, base, map[bool]string{false: "matched", true: "stopped matching"}[neg], args[0], f)
			}
		}
		select {
		case <-p.done:
			ts.Fatalf("the program ended before a screen matched %q", args[0])
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			ts.Fatalf("pty-expect %q: no refresh for 2 minutes", args[0])
		}
	}
}

// pty-shows REGEXP: wait (up to 2 minutes) until the program's output so
// far matches REGEXP: a prompt of a program that draws no refreshing screen.
func cmdPtyShows(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pty-shows REGEXP")
	}
	re := regexp.MustCompile(args[0])
	p := ptyOf(ts)
	deadline := time.Now().Add(2 * time.Minute)
	for {
		p.mu.Lock()
		out := p.out.String()
		p.mu.Unlock()
		if re.MatchString(out) {
			return
		}
		select {
		case <-p.done:
			ts.Fatalf("the program ended before its output matched %q:\n%s", args[0], out)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			ts.Fatalf("pty-shows %q: not within 2 minutes; output:\n%s", args[0], out)
		}
	}
}

// pty-send TEXT: type TEXT (Go-quoted escapes allowed, e.g. "\x03" for ^C).
func cmdPtySend(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: pty-send TEXT")
	}
	s, err := strconv.Unquote(`"` + args[0] + `"`)
	ts.Check(err)
	_, err = ptyOf(ts).ptmx.Write([]byte(s))
	ts.Check(err)
}

// pty-wait: wait for the program to exit 0, then check it left the
// terminal as it found it: the same stty state, the alternate screen left
// and the cursor shown. Its whole output becomes stdout.
//
// pty-wait -code N: wait for it to exit N (a signal S counts as 128+S).
func cmdPtyWait(ts *testscript.TestScript, neg bool, args []string) {
	p := ptyOf(ts)
	want := -1
	if len(args) == 2 && args[0] == "-code" {
		n, err := strconv.Atoi(args[1])
		ts.Check(err)
		want = n
	}
	werr := make(chan error, 1)
	go func() { werr <- p.cmd.Wait() }()
	select {
	case err := <-werr:
		if want >= 0 {
			got := p.cmd.ProcessState.ExitCode()
			if ws, ok := p.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
				got = 128 + int(ws.Signal())
			}
			if got != want {
				ts.Fatalf("exit %d, want %d (%v)", got, want, err)
			}
		} else if neg != (err != nil) {
			ts.Fatalf("exit: %v", err)
		}
	case <-time.After(time.Minute):
		ts.Fatalf("the program did not exit")
	}
	if after := sttyState(ts, p.tty); after != p.sttyBefore {
		ts.Fatalf("terminal state changed:\nbefore %s\nafter  %s", p.sttyBefore, after)
	}
	time.Sleep(100 * time.Millisecond)
	p.mu.Lock()
	out := p.out.String()
	p.mu.Unlock()
	fmt.Fprint(ts.Stdout(), out)
}
