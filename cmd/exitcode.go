package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"syscall"

	"github.com/lockctl/lockctl/internal/child"
	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/lockctl/lockctl/pkg/once"
	"github.com/redis/go-redis/v9"
)

// Exit codes of the contract. ExitCode is the only place that picks one.
const (
	ExitOK          = 0
	ExitFound       = 1
	ExitUsage       = 64
	ExitNotOwner    = 65
	ExitUnavailable = 69
	ExitInternal    = 70
	ExitNotAcquired = 75
	ExitLost        = 76
	ExitMaxRuntime  = 124
	ExitNoExec      = 126
	ExitNotFound    = 127
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

// UnavailableError: Redis could not be used (connect, auth, ACL, TLS,
// READONLY, CLUSTERDOWN, timeout).
type UnavailableError struct {
	Err   error
	Hints []string
}

func (e *UnavailableError) Error() string { return e.Err.Error() }
func (e *UnavailableError) Unwrap() error { return e.Err }

// ExitError carries an exact exit status: a child's, a `-E N` conflict code,
// `--test` finding the lock held. Silent errors print nothing.
type ExitError struct {
	Code   int
	Err    error // may be nil
	Silent bool
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}
func (e *ExitError) Unwrap() error { return e.Err }

// SignalError: interrupted by a signal while waiting (no child started).
type SignalError struct{ Signal syscall.Signal }

func (e *SignalError) Error() string { return "interrupted by " + child.SignalName(e.Signal) }

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
	if err == nil {
		return ExitOK
	}
	var (
		exit  *ExitError
		sig   *SignalError
		usage *UsageError
		unav  *UnavailableError
	)
	switch {
	case errors.As(err, &exit):
		return exit.Code
	case errors.As(err, &sig):
		return 128 + int(sig.Signal)
	case errors.As(err, &usage), errors.Is(err, lock.ErrInvalid),
		errors.Is(err, limit.ErrInvalid), errors.Is(err, limit.ErrNeverAllowed),
		errors.Is(err, once.ErrInvalid):
		return ExitUsage
	case errors.As(err, &unav):
		return ExitUnavailable
	case errors.Is(err, lock.ErrNotObtained), errors.Is(err, limit.ErrLimited),
		errors.Is(err, once.ErrInProgress):
		return ExitNotAcquired
	case errors.Is(err, lock.ErrNotOwner), errors.Is(err, lock.ErrNotHeld),
		errors.Is(err, lock.ErrStaleFence), errors.Is(err, lock.ErrWrongType),
		errors.Is(err, limit.ErrWrongType), errors.Is(err, once.ErrWrongType),
		errors.Is(err, once.ErrFingerprint), errors.Is(err, once.ErrNotOwner):
		return ExitNotOwner
	case isRedisUnavailable(err):
		return ExitUnavailable
	}
	return ExitInternal
}

// isRedisUnavailable recognises failures to reach or use the server.
func isRedisUnavailable(err error) bool {
	var (
		netErr net.Error
		opErr  *net.OpError
		rerr   redis.Error
	)
	if errors.Is(err, lock.ErrNoQuorum) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, redis.ErrClosed) ||
		errors.As(err, &netErr) || errors.As(err, &opErr) {
		return true
	}
	if errors.As(err, &rerr) {
		msg := rerr.Error()
		// An unauthenticated client sending a command of more than a few
		// arguments (a lock script) gets a protocol error, not NOAUTH.
		for _, p := range []string{"NOAUTH", "WRONGPASS", "NOPERM", "READONLY", "CLUSTERDOWN", "LOADING", "MASTERDOWN", "TRYAGAIN", "ERR AUTH", "ERR invalid password", "ERR Client sent AUTH", "ERR Protocol error: unauthenticated"} {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
	}
	return strings.Contains(err.Error(), "tls:") || strings.Contains(err.Error(), "x509:")
}

func hintsOf(err error) []string {
	var hints []string
	for e := err; e != nil; e = errors.Unwrap(e) {
		switch h := e.(type) {
		case *HintError:
			hints = append(hints, h.Hints...)
		case *UsageError:
			hints = append(hints, h.Hints...)
		case *UnavailableError:
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
