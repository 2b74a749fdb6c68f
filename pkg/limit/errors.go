package limit

import (
	"errors"
	"fmt"
	"math"
	"time"
)

var (
	// ErrInvalid is the error of a call given an unusable rate, burst,
	// cost, key or algorithm.
	ErrInvalid = errors.New("limit: invalid argument")
	// ErrNeverAllowed is the error of a cost that exceeds the burst, so no
	// amount of waiting would admit it (*CostError).
	ErrNeverAllowed = errors.New("limit: cost can never be allowed")
	// ErrLimited is the error of a call refused for now (*LimitedError,
	// from Result.Err).
	ErrLimited = errors.New("limit: rate limited")
	// ErrWrongType is the error of a call on a key that holds a value this
	// algorithm did not write (another Redis type, or another algorithm's
	// state).
	ErrWrongType = errors.New("limit: key holds another kind of value")
)

// CostError is a cost larger than the burst, Refused before any round trip
// rather than retried forever.
type CostError struct {
	Cost  int64
	Burst int64
}

// Error says the cost and the burst.
func (e *CostError) Error() string {
	return fmt.Sprintf("limit: cost %d can never be allowed: burst is %d", e.Cost, e.Burst)
}

// Is makes a *CostError match ErrNeverAllowed.
func (e *CostError) Is(target error) bool { return target == ErrNeverAllowed }

// LimitedError carries the refused decision, so callers that turn a refusal
// into an error (exit 75 in the CLI) keep retry-after and friends.
type LimitedError struct {
	Result Result
}

func (e *LimitedError) Error() string {
	return fmt.Sprintf("limit: %s rate limited: retry after %s", e.Result.Key, e.Result.RetryAfter)
}

// Is makes a *LimitedError match ErrLimited.
func (e *LimitedError) Is(target error) bool { return target == ErrLimited }

// WrongTypeError names the key that holds something else.
type WrongTypeError struct {
	Key string
	Msg string // the server's message
}

func (e *WrongTypeError) Error() string {
	return fmt.Sprintf("limit: %s holds a value this algorithm does not use: %s", e.Key, e.Msg)
}

// Is makes a *WrongTypeError match ErrWrongType.
func (e *WrongTypeError) Is(target error) bool { return target == ErrWrongType }

// ceilMS rounds a microsecond count up to whole milliseconds, so a caller
// that sleeps for it, or prints it in ms, never comes back early.
func ceilMS(us int64) time.Duration {
	if us <= 0 {
		return 0
	}
	// A key someone else wrote can put its times centuries ahead: saturate
	// (at half the range, so that a caller's deadline arithmetic stays in
	// range too) rather than overflow into a negative duration.
	const most = math.MaxInt64 / 2 / int64(time.Millisecond)
	return time.Duration(min(us/1000+min(us%1000, 1), most)) * time.Millisecond
}
