package cmd

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"syscall"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/cli/runner"
	"github.com/lockctl/lockctl/internal/cli/support/child"
	"github.com/lockctl/lockctl/internal/lib/watchdog"
	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/lockctl/lockctl/pkg/once"
)

// Exit codes of the contract. ExitCode is the only place that picks one.
const (
	ExitOK          = 0
	ExitFound       = 1
	ExitUsage       = 64
	ExitNotOwner    = 65
	ExitUnavailable = 69
	ExitInternal    = 70
	// ExitIOErr (EX_IOERR of sysexits.h) is lockctl's own output failing:
	// a stdout closed, full or gone, so that nobody got a lock's token.
	ExitIOErr       = 74
	ExitNotAcquired = 75
	ExitLost        = 76
	// ExitUnknown is an addition to the contract's table: `once
	// --at-most-once` refusing a KEY whose claimant died without recording
	// an outcome, until `once resolve` settles it. 75 would invite a retry
	// loop, and the outcome of a command is no "not acquired".
	ExitUnknown    = 77
	ExitMaxRuntime = 124
	ExitNoExec     = 126
	ExitNotFound   = 127
)

// UsageError is a bad flag, argument, duration, URL or config file.
type UsageError struct {
	Err   error
	Hints []string
}

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

func usageErrorf(format string, args ...any) error {
	return &UsageError{Err: fmt.Errorf(format, args...)}
}

// ExitError carries an exact exit status: a child's, a `-E N` conflict code,
// `--test` finding the lock held. Silent errors print nothing.
type ExitError struct {
	Code   int
	Err    error // may be nil
	Silent bool
	// Died is the signal the child died of, when Code is 128 + it.
	Died syscall.Signal
	// Terminal: the child's group had the terminal and got Died from it
	// rather than from lockctl, so lockctl's own group (a calling shell's)
	// did not (see dieOf).
	Terminal bool
	// Summary words a silent end for --log-format json, whose last line
	// carries the exit status even when text mode prints nothing (the
	// command spoke for itself): "the lease was lost while the command
	// ran". Empty: Err's text, or "exit status N".
	Summary string
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}
func (e *ExitError) Unwrap() error { return e.Err }

// SignalError is an interruption by a signal while waiting (no child
// started).
type SignalError struct{ Signal syscall.Signal }

func (e *SignalError) Error() string { return "interrupted by " + child.SignalName(e.Signal) }

// signalExit is the status of death by sig, as a shell reports it: 128+N.
func signalExit(sig syscall.Signal) int { return 128 + int(sig) }

// statusExit is a child's status as a shell reports it: its exit code, or
// 128+N for death by signal N.
func statusExit(st child.Status) int {
	if st.Signal != 0 {
		return signalExit(st.Signal)
	}
	return st.Code
}

// superviseExit is the exit status of a supervised command's end: 76 when
// the lease was lost under it, 124 when it ran past --max-runtime, else
// its own status.
func superviseExit(res runner.Result) int {
	switch res.End {
	case runner.Lost:
		return ExitLost
	case runner.TimedOut:
		return ExitMaxRuntime
	}
	return statusExit(res.Status)
}

// childExit is the error a supervised command's end returns: nil for exit
// 0, else its exit status, silently (the command spoke for itself), with
// the signal it died of for dieOf. held names what the command ran under
// ("the lock deploy", "the claim on once:k"), for the words of a loss.
func childExit(res runner.Result, held string) error {
	code := superviseExit(res)
	if code == 0 {
		return nil
	}
	e := &ExitError{Code: code, Silent: true, Summary: endSummary(res, held)}
	if s := res.Status.Signal; s != 0 && code == statusExit(res.Status) {
		e.Died = s
		e.Terminal = res.Foreground && res.GroupReceived && !slices.Contains(res.Forwarded, s)
	}
	return e
}

// endSummary words a supervised command's end for the closing JSON line
// and a CI annotation; held is what a loss was of ("" for "the lease").
func endSummary(res runner.Result, held string) string {
	status := fmt.Sprintf("exited %d", res.Status.Code)
	if s := res.Status.Signal; s != 0 {
		status = "died of " + child.SignalName(s)
	}
	switch res.End {
	case runner.Lost:
		if held == "" {
			held = "the lease"
		}
		return held + " was lost while the command ran (the command " + status + ")"
	case runner.TimedOut:
		return "the command ran past --max-runtime and was stopped (it " + status + ")"
	}
	return "the command " + status
}

// runError is the error a run ends with, once it acquired the lease (see
// runner.Outcome): the error that stopped it, a bug of lockctl's, or the
// command's end. held names the lock(s) (see childExit).
func runError(out *runner.Outcome, held string) error {
	var bug *watchdog.PanicError
	switch {
	case out.Err != nil:
		return out.Err
	case out.Result.Lost && errors.As(out.Result.LostErr, &bug):
		// The watchdog (or its renewal) panicked: the command was stopped
		// as for a loss, and the status says it was lockctl's fault.
		return &internalError{What: bug.Error(), Stack: bug.Stack}
	}
	return childExit(out.Result, held)
}

// lostError is a run (or once) whose lease did not cover the command's
// end: exit 76.
func lostError(err error) error { return &ExitError{Code: ExitLost, Err: err} }

// HintError attaches next steps to any error.
type HintError struct {
	Err   error
	Hints []string
}

func (e *HintError) Error() string { return e.Err.Error() }
func (e *HintError) Unwrap() error { return e.Err }

func withHint(err error, hints ...string) error { return &HintError{Err: err, Hints: hints} }

// ExitCode maps an error returned by a command to the contract's exit code.
func ExitCode(err error) int {
	code, _ := exitClass(err)
	return code
}

// exitClass is ExitCode with the Redis fault it was decided by, if any
// (for the message's hints).
func exitClass(err error) (int, fault) {
	if err == nil {
		return ExitOK, faultNone
	}
	var (
		exit  *ExitError
		sig   *SignalError
		usage *UsageError
		bug   *internalError
		write *ui.WriteError
	)
	switch {
	case errors.As(err, &bug):
		return ExitInternal, faultNone
	case readerGone(err):
		return signalExit(syscall.SIGPIPE), faultNone
	case errors.As(err, &write):
		// Before the Redis classes: a write error is a syscall error,
		// which would otherwise read as the link to Redis.
		return ExitIOErr, faultNone
	case errors.As(err, &exit):
		return exit.Code, faultNone
	case errors.As(err, &sig):
		return signalExit(sig.Signal), faultNone
	case errors.Is(err, runner.ErrLapsed):
		// The lease lapsed before the command started: it did not run.
		return ExitLost, faultNone
	case errors.Is(err, child.ErrNotFound):
		return ExitNotFound, faultNone
	case errors.Is(err, child.ErrNotExecutable), errors.Is(err, runner.ErrNotStarted):
		// Not executable, or the system refused the fork: 126, as a shell
		// says of a command it could not execute.
		return ExitNoExec, faultNone
	case errors.As(err, &usage), errors.Is(err, lock.ErrInvalid),
		errors.Is(err, limit.ErrInvalid), errors.Is(err, limit.ErrNeverAllowed),
		errors.Is(err, once.ErrInvalid):
		return ExitUsage, faultNone
	case slowLink(err):
		// Before "not obtained": nobody holds the lock, the link is too
		// slow for the lease.
		return ExitUnavailable, faultSlowLink
	case errors.Is(err, once.ErrUnknown):
		return ExitUnknown, faultNone
	case errors.Is(err, lock.ErrNotObtained), errors.Is(err, limit.ErrLimited),
		errors.Is(err, once.ErrInProgress), errors.Is(err, once.ErrLate):
		return ExitNotAcquired, faultNone
	case errors.Is(err, lock.ErrNotOwner), errors.Is(err, lock.ErrNotHeld),
		errors.Is(err, lock.ErrStaleFence), errors.Is(err, lock.ErrWrongType),
		errors.Is(err, limit.ErrWrongType), errors.Is(err, once.ErrWrongType),
		errors.Is(err, once.ErrFingerprint), errors.Is(err, once.ErrNotOwner),
		errors.Is(err, once.ErrNotUnknown):
		return ExitNotOwner, faultNone
	}
	if f := classifyRedis(err); f != faultNone {
		return f.code(), f
	}
	return ExitInternal, faultNone
}

// code is the contract's exit code of a Redis fault: every condition of
// the server or the way to it is 69, except a key of the wrong type (65).
func (f fault) code() int {
	if f == faultWrongType {
		return ExitNotOwner
	}
	return ExitUnavailable
}

// dieOf is the signal lockctl ends by, once it has cleaned up (released,
// written its report and metrics), instead of exiting with code: SIGINT or
// SIGQUIT that ended the child or interrupted a wait, or SIGPIPE when
// stdout's reader went away (readerGone). A shell stops its
// loop or script only for a command that died of one (child.DieOf). group
// says to send it to lockctl's whole process group: the child's group took
// the terminal's ^C alone. Any other signal keeps the exit status 128+N
// that the contract and a supervisor's restart policy go by.
func dieOf(err error, code int) (sig syscall.Signal, group bool) {
	var (
		exit *ExitError
		se   *SignalError
	)
	switch {
	case errors.As(err, &exit):
		sig, group = exit.Died, exit.Terminal
	case errors.As(err, &se):
		sig = se.Signal
	}
	if readerGone(err) {
		sig = syscall.SIGPIPE
	}
	if (sig != syscall.SIGINT && sig != syscall.SIGQUIT && sig != syscall.SIGPIPE) || code != signalExit(sig) {
		return 0, false
	}
	return sig, group
}

// readerGone reports whether err is stdout's reader having gone away (EPIPE)
// while lockctl wrote a listing, a view or a number: lockctl then ends as
// every filter does under `| head`, silently and by SIGPIPE (141), once it
// has cleaned up. A lock whose token was lost so is not: `lock` gave the
// lock back, and says so (74).
func readerGone(err error) bool {
	if !errors.Is(err, syscall.EPIPE) {
		return false
	}
	var (
		write *ui.WriteError
		path  *os.PathError
	)
	if errors.As(err, &write) {
		return !write.Result
	}
	return errors.As(err, &path) && path.Path == os.Stdout.Name()
}

// stdoutFailure makes a failed write to stdout that did not go through
// ui.IOStreams's own writers (a table, a streamed JSON array, `version`)
// the *ui.WriteError it is: lockctl's own output (74, or SIGPIPE for a
// reader gone), never the link to Redis, which a bare syscall error would
// otherwise read as.
func stdoutFailure(err error) error {
	var (
		write *ui.WriteError
		path  *os.PathError
	)
	if err == nil || errors.As(err, &write) || !errors.As(err, &path) || path.Op != "write" || path.Path != os.Stdout.Name() {
		return err
	}
	return &ui.WriteError{Err: err}
}

// internalError is a violated invariant of lockctl's own: a bug, exit 70.
type internalError struct {
	What  string
	Stack []byte
}

func (e *internalError) Error() string { return "internal error: " + e.What }

func hintsOf(err error) []string {
	var hints []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch h := e.(type) {
		case *HintError:
			hints = append(hints, h.Hints...)
		case *UsageError:
			hints = append(hints, h.Hints...)
		}
	}
	return hints
}

// msgError rewords err for people while keeping it for errors.Is/As.
type msgError struct {
	msg string
	err error
}

func (e *msgError) Error() string { return e.msg }
func (e *msgError) Unwrap() error { return e.err }

func reword(err error, format string, args ...any) error {
	return &msgError{msg: fmt.Sprintf(format, args...), err: err}
}
