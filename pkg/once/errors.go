package once

import (
	"errors"
	"fmt"
	"time"
)

var (
	// ErrInProgress is the error of a claim of a KEY another claimant is
	// running now (*InProgressError).
	ErrInProgress = errors.New("once: in progress elsewhere")
	// ErrDone is the error of a claim of a KEY that already ran; its
	// outcome is in the *DoneError.
	ErrDone = errors.New("once: already done")
	// ErrFingerprint is the error of a claim of a KEY claimed with another
	// fingerprint (*FingerprintError).
	ErrFingerprint = errors.New("once: fingerprint mismatch")
	// ErrNotOwner is the error of a claim that now belongs to someone else,
	// who took it over after this one's TTL lapsed (*NotOwnerError).
	ErrNotOwner = errors.New("once: claim held by another owner")
	// ErrLost is the error of a claim whose renewal found no record at all
	// (the claim expired), or none of whose renewals succeeded by its
	// local deadline (the Keeper's Err).
	ErrLost = errors.New("once: claim lost")
	// ErrLate is the error of a claim whose reply arrived after its local
	// deadline (leasetime.Deadline) and could not be re-confirmed in time:
	// the claim was given up and the command must not run.
	ErrLate = errors.New("once: claim reply after its local deadline")
	// ErrUnknown is the error of a claim of a KEY whose at-most-once claim
	// lapsed without a recorded outcome (*UnknownError): the command must
	// not run until someone resolves the KEY (Store.Resolve).
	ErrUnknown = errors.New("once: outcome unknown")
	// ErrNotUnknown is the error of a Resolve of a KEY whose outcome is not
	// unknown (*NotUnknownError): there is nothing to resolve.
	ErrNotUnknown = errors.New("once: outcome not unknown")
	// ErrNotFound is the error of a Get that found no record.
	ErrNotFound = errors.New("once: no record")
	// ErrWrongType is the error of a call on a key that holds something
	// that is not a once record.
	ErrWrongType = errors.New("once: key is not a once record")
	// ErrInvalid is the error of a call given an unusable argument (empty
	// key, TTL under 1ms, ...).
	ErrInvalid = errors.New("once: invalid argument")
)

// InProgressError carries the running claim's record (owner, start).
type InProgressError struct{ Record Record }

func (e *InProgressError) Error() string {
	return fmt.Sprintf("once: %s is in progress: started by %s %s ago", e.Record.Key, e.Record.Owner, since(e.Record.StartedAt))
}

// Is makes an *InProgressError match ErrInProgress.
func (e *InProgressError) Is(target error) bool { return target == ErrInProgress }

// DoneError carries the recorded outcome the caller should replay.
type DoneError struct{ Record Record }

func (e *DoneError) Error() string {
	return fmt.Sprintf("once: %s already ran: exit %d at %s by %s", e.Record.Key, e.Record.ExitCode,
		e.Record.FinishedAt.Format(time.RFC3339), e.Record.Owner)
}

// Is makes a *DoneError match ErrDone.
func (e *DoneError) Is(target error) bool { return target == ErrDone }

// UnknownError carries the record of a claim that lapsed without an outcome.
type UnknownError struct{ Record Record }

func (e *UnknownError) Error() string {
	return fmt.Sprintf("once: %s: outcome unknown: the claim by %s started %s lapsed without a recorded outcome",
		e.Record.Key, e.Record.Owner, e.Record.StartedAt.Format(time.RFC3339))
}

// Is makes an *UnknownError match ErrUnknown.
func (e *UnknownError) Is(target error) bool { return target == ErrUnknown }

// NotUnknownError is the refusal of a Resolve: the record (State "none"
// when there is none) is not unknown. A claim still running also matches
// ErrInProgress.
type NotUnknownError struct{ Record Record }

func (e *NotUnknownError) Error() string {
	switch e.Record.State {
	case "none":
		return fmt.Sprintf("once: %s has no record; nothing to resolve", e.Record.Key)
	case StateRunning:
		return fmt.Sprintf("once: %s is running (claimed by %s, lease alive); nothing to resolve", e.Record.Key, e.Record.Owner)
	}
	return fmt.Sprintf("once: %s is %s, not unknown; nothing to resolve", e.Record.Key, e.Record.State)
}

// Is makes a *NotUnknownError match ErrNotUnknown, and ErrInProgress for a
// running claim.
func (e *NotUnknownError) Is(target error) bool {
	return target == ErrNotUnknown || (target == ErrInProgress && e.Record.State == StateRunning)
}

// FingerprintError is the refusal of a claim whose record was made for
// another request.
type FingerprintError struct {
	Key      string
	Recorded string // the record's fingerprint
	Given    string
	Record   Record
}

func (e *FingerprintError) Error() string {
	return fmt.Sprintf("once: %s was claimed with fingerprint %q, not %q", e.Key, e.Recorded, e.Given)
}

// Is makes a *FingerprintError match ErrFingerprint.
func (e *FingerprintError) Is(target error) bool { return target == ErrFingerprint }

// NotOwnerError carries the record of whoever holds KEY now.
type NotOwnerError struct{ Record Record }

func (e *NotOwnerError) Error() string {
	return fmt.Sprintf("once: %s is now held by %s (%s)", e.Record.Key, e.Record.Owner, e.Record.State)
}

// Is makes a *NotOwnerError match ErrNotOwner.
func (e *NotOwnerError) Is(target error) bool { return target == ErrNotOwner }

// WrongTypeError names the key that is not a once record.
type WrongTypeError struct {
	Key string
	Msg string
}

func (e *WrongTypeError) Error() string {
	return fmt.Sprintf("once: %s is not a once record: %s", e.Key, e.Msg)
}

// Is makes a *WrongTypeError match ErrWrongType.
func (e *WrongTypeError) Is(target error) bool { return target == ErrWrongType }

func since(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return time.Since(t).Round(time.Millisecond)
}
