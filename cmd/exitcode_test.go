package cmd

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/cli/runner"
	"github.com/lockctl/lockctl/internal/cli/support/child"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
)

// A panic in a command is a lockctl bug: exit 70 with a message that says
// so, not a Go stack dump and exit 2. The stack is for -v.
func TestPanicIsABug(t *testing.T) {
	withPanic := func(f *Factory) *cobra.Command {
		root := NewRootCmd(f)
		root.AddCommand(&cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error {
			var m map[string]int
			m["x"]++ //nolint:staticcheck // a nil map on purpose: the kind of slip a bug is
			return nil
		}})
		return root
	}
	for _, verbose := range []bool{false, true} {
		args := []string{"boom"}
		if verbose {
			args = append(args, "-v")
		}
		io, _, out, errOut := ui.Test()
		code, _, _ := mainArgs(args, io, withPanic)
		stderr := errOut.String()
		if code != ExitInternal {
			t.Fatalf("%v: exit %d, want %d; stderr %q", args, code, ExitInternal, stderr)
		}
		if !strings.Contains(stderr, "lockctl: internal error: panic: assignment to entry in nil map") ||
			!strings.Contains(stderr, "hint: this is a bug in lockctl") {
			t.Errorf("%v: stderr %q, want the panic named as an internal error and a bug", args, stderr)
		}
		if hasStack := strings.Contains(stderr, "goroutine "); hasStack != verbose {
			t.Errorf("%v: stack trace shown: %v, want %v; stderr %q", args, hasStack, verbose, stderr)
		}
		if out.Len() != 0 {
			t.Errorf("%v: stdout %q, want nothing", args, out.String())
		}
	}
}

// Every error reply of the server is an environment condition: one of the
// contract's classes, "Redis refused" (69) when unrecognised, never 70.
func TestClassifyReply(t *testing.T) {
	for _, tc := range []struct {
		reply string
		want  fault
		code  int
	}{
		{"OOM command not allowed when used memory > 'maxmemory'.", faultOOM, ExitUnavailable},
		{"NOREPLICAS Not enough good replicas to write.", faultNoReplicas, ExitUnavailable},
		{"ERR DB index is out of range", faultDBIndex, ExitUnavailable},
		{"ERR This instance has cluster support disabled", faultNotCluster, ExitUnavailable},
		{"ERR unknown command 'sentinel', with args beginning with: 'get-master-addr-by-name' 'm' ", faultNotSentinel, ExitUnavailable},
		{"MOVED 3999 127.0.0.1:7001", faultMoved, ExitUnavailable},
		{"CLUSTERDOWN The cluster is down", faultClusterDown, ExitUnavailable},
		{"READONLY You can't write against a read only replica.", faultReadOnly, ExitUnavailable},
		{"LOADING Redis is loading the dataset in memory", faultLoading, ExitUnavailable},
		{"NOAUTH Authentication required.", faultAuth, ExitUnavailable},
		{"NOPERM this user has no permissions to run the 'evalsha' command", faultNoPerm, ExitUnavailable},
		// The ACL refusing a command inside a script: Redis 7.0, 6.x, 7.2+.
		{"ERR The user executing the script can't publish to the channel mentioned in the command script: 5a7b5f5325ee2a32e95a10439d3324457a01e960, on @user_script:1.", faultNoPerm, ExitUnavailable},
		{"ERR The user executing the script can't run this command or subcommand script: b46e1e09098444d5e4112fed87908b415ed3a2cf, on @user_script:1.", faultNoPerm, ExitUnavailable},
		{"ERR Error running script (call to f_b46e1e09098444d5e4112fed87908b415ed3a2cf): @user_script:1: @user_script: 1: The user executing the script can't run this command or subcommand", faultNoPerm, ExitUnavailable},
		{"NOPERM User u has no permissions to run the 'xadd' command script: b46e1e09098444d5e4112fed87908b415ed3a2cf, on @user_script:1.", faultNoPerm, ExitUnavailable},
		{"ERR Error running script (call to f_b46e1e): @user_script:1: No permissions to access a channel", faultNoPerm, ExitUnavailable},
		{"BUSY Redis is busy running a script.", faultBusy, ExitUnavailable},
		{"WRONGTYPE Operation against a key holding the wrong kind of value", faultWrongType, ExitNotOwner},
		{"ERR some reply no version of lockctl has seen", faultRefused, ExitUnavailable},
	} {
		f := classifyReply(tc.reply)
		if f != tc.want || f.code() != tc.code {
			t.Errorf("%q: fault %d (exit %d), want %d (exit %d)", tc.reply, f, f.code(), tc.want, tc.code)
		}
		if len(f.hints(server{Mode: "url", Addr: "127.0.0.1:6379"})) == 0 {
			t.Errorf("%q: no hint", tc.reply)
		}
	}
}

// go-redis's nil reply reaching the top is lockctl's own slip, not the
// server's: 70.
func TestNilReplyIsABug(t *testing.T) {
	if code := ExitCode(fmt.Errorf("lock: get x: %w", redis.Nil)); code != ExitInternal {
		t.Fatalf("exit %d, want %d", code, ExitInternal)
	}
}

// A connection the Sentinel client closed under a call (it drops its
// connections to a demoted master on +switch-master) is a failover under
// way, not a missing Sentinel: 69, with a hint that says so.
func TestClosedConnectionIsAFailoverNotAMissingSentinel(t *testing.T) {
	err := fmt.Errorf("lock: acquire lock:sf: %w", &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed})
	f := classifyRedis(err)
	if f != faultClosed || ExitCode(err) != ExitUnavailable {
		t.Fatalf("fault %d, exit %d; want faultClosed, %d", f, ExitCode(err), ExitUnavailable)
	}
	hints := strings.Join(f.hints(server{Mode: "sentinel", Addr: "127.0.0.1:26379"}), "\n")
	if strings.Contains(hints, "redis-sentinel running") || !strings.Contains(hints, "failover") {
		t.Errorf("sentinel hints %q: want the failover explained, not a missing Sentinel", hints)
	}
}

// dieOf: lockctl ends by SIGINT or SIGQUIT only when its exit code says
// that signal ended the child or the wait; by its whole group only when the
// child's group took it from the terminal.
func TestDieOf(t *testing.T) {
	for _, tc := range []struct {
		err   error
		sig   syscall.Signal
		group bool
	}{
		{&ExitError{Code: 130, Died: syscall.SIGINT}, syscall.SIGINT, false},
		{&ExitError{Code: 130, Died: syscall.SIGINT, Terminal: true}, syscall.SIGINT, true},
		{&ExitError{Code: 131, Died: syscall.SIGQUIT, Terminal: true}, syscall.SIGQUIT, true},
		{&ExitError{Code: 143, Died: syscall.SIGTERM}, 0, false},      // an exit status for supervisors
		{&ExitError{Code: 76, Died: syscall.SIGINT}, 0, false},        // lost: 76 says more
		{&ExitError{Code: 130}, 0, false},                             // the child exited 130 by itself
		{&SignalError{Signal: syscall.SIGINT}, syscall.SIGINT, false}, // an interrupted wait
		{&SignalError{Signal: syscall.SIGQUIT}, syscall.SIGQUIT, false},
		{&SignalError{Signal: syscall.SIGHUP}, 0, false},
		{nil, 0, false},
	} {
		sig, group := dieOf(tc.err, ExitCode(tc.err))
		if sig != tc.sig || group != tc.group {
			t.Errorf("dieOf(%#v) = %v, %v; want %v, %v", tc.err, sig, group, tc.sig, tc.group)
		}
	}
}

// A link slower than the lease is Redis unusable for that lease (69), not
// a lock held elsewhere: -E does not replace it, and the hint carries the
// figures measured.
func TestSlowLinkExit(t *testing.T) {
	slow := &lock.LateError{Key: "lock:a", Op: "acquire", Took: 2500 * time.Millisecond, TTL: 2 * time.Second, Slow: true}
	w := &waitFlags{conflictExit: 0}
	err := w.notAcquired(w.explainBusy("a", fmt.Errorf("wrapped: %w", slow)))
	if code := ExitCode(err); code != ExitUnavailable {
		t.Fatalf("exit %d, want %d", code, ExitUnavailable)
	}
	hints := hintsOf(err)
	if len(hints) != 1 || !strings.Contains(hints[0], "replies took 2.5s, longer than the 2s lease can allow (it counts for 1.5s after a call is sent: ttl - margin 500ms): raise --ttl") ||
		!strings.Contains(hints[0], "--ttl 8s") {
		t.Errorf("hints %q", hints)
	}
}

// A command's end is lockctl's exit status as a shell reports it: its exit
// code, 128+N for death by signal N; 76 over it when the lease was lost
// under it, 124 when it ran past --max-runtime.
func TestChildStatusExitsLikeAShell(t *testing.T) {
	for _, tc := range []struct {
		script string
		exit   int
	}{
		{"exit 0", 0},
		{"exit 3", 3},
		{"kill -9 $$", 137},
		{"kill -USR1 $$", 128 + int(syscall.SIGUSR1)},
	} {
		t.Run(tc.script, func(t *testing.T) {
			c, err := child.Start(child.Spec{Argv: []string{"sh", "-c", tc.script}})
			if err != nil {
				t.Fatal(err)
			}
			res := runner.Result{Status: c.Wait()}
			if got := superviseExit(res); got != tc.exit {
				t.Errorf("status %v: exit %d, want %d", res.Status, got, tc.exit)
			}
			if got := ExitCode(childExit(res, "")); got != tc.exit {
				t.Errorf("status %v: childExit's exit %d, want %d", res.Status, got, tc.exit)
			}
			res.End = runner.Lost
			if got := superviseExit(res); got != ExitLost {
				t.Errorf("status %v, lost: exit %d, want 76", res.Status, got)
			}
			res.End = runner.TimedOut
			if got := superviseExit(res); got != ExitMaxRuntime {
				t.Errorf("status %v, timed out: exit %d, want 124", res.Status, got)
			}
		})
	}
	for sig, want := range map[syscall.Signal]int{syscall.SIGINT: 130, syscall.SIGHUP: 129, syscall.SIGTERM: 143} {
		if got := ExitCode(&SignalError{Signal: sig}); got != want {
			t.Errorf("interrupted by %v: exit %d, want %d", sig, got, want)
		}
	}
}

// A command that cannot be run exits as a shell says: 127 not found, 126
// found but not executable. (Which start failure is which, directories and
// bad interpreters included, is internal/cli/support/child's TestStartErrorsMapLikeAShell.)
func TestStartErrorsExitLikeAShell(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "plain")
	if err := os.WriteFile(plain, []byte("echo hi\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		argv []string
		exit int
	}{
		{"missing in PATH", []string{"lockctl-test-no-such-command"}, ExitNotFound},
		{"not executable", []string{plain}, ExitNoExec},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runner.Exec(context.Background(), child.Spec{Argv: tc.argv}, runner.Config{})
			if err == nil {
				t.Fatalf("started %q", tc.argv)
			}
			if got := ExitCode(err); got != tc.exit {
				t.Fatalf("err = %v: exit %d, want %d", err, got, tc.exit)
			}
		})
	}
	if got := ExitCode(fmt.Errorf("%w: fork: resource temporarily unavailable", runner.ErrNotStarted)); got != ExitNoExec {
		t.Errorf("a refused fork: exit %d, want 126", got)
	}
	if got := ExitCode(fmt.Errorf("%w; it was not started", runner.ErrLapsed)); got != ExitLost {
		t.Errorf("a lease lapsed before the start: exit %d, want 76", got)
	}
}
