package lockwire

import "errors"

// The lock package's sentinel errors, defined here so that the watchdog
// engine (internal/lib/watchdog), which pkg/lock imports, classifies renewal
// errors by the same values pkg/lock exports (pkg/lock documents them).
var (
	ErrNotHeld     = errors.New("lock: not held")
	ErrNotOwner    = errors.New("lock: held by another owner")
	ErrWrongType   = errors.New("lock: key is not a lock")
	ErrInvalid     = errors.New("lock: invalid argument")
	ErrUnavailable = errors.New("lock: Redis unavailable")

	// Markers the watchdog engine tells renewal failures apart by:
	// pkg/lock's *ReplicationError and *LateError match them, but
	// pkg/lock does not export them (callers use errors.As on those types).
	ErrNotReplicated = errors.New("lock: not replicated")
	ErrLate          = errors.New("lock: reply after the lease's local deadline")
)
