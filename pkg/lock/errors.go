package lock

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

// The sentinel errors of this package, matched with errors.Is; the error
// types below carry the details, found with errors.As (the package doc's
// "Errors" section has the table). Each message starts with "lock: ".
// Some are shared with the packages that read lock keys (ErrNotHeld,
// ErrNotOwner, ErrWrongType, ErrInvalid, ErrUnavailable): the same values,
// not copies, so errors.Is matches them whichever package returned them.
var (
	// ErrNotObtained is the error of an Acquire that did not get the lock:
	// it is held by someone else (non-blocking acquire), or the wait
	// deadline passed, or the grant's reply came after its local deadline.
	// Errors carrying the holder are *HeldError values; a late grant is a
	// *LateError.
	ErrNotObtained = errors.New("lock: not obtained")
	// ErrNotHeld is the error of a renew or release that found no lock at
	// all (expired or never taken), or a renewal whose reply came after
	// the lease's local deadline (*LateError).
	// Message: "lock: not held".
	ErrNotHeld = lockwire.ErrNotHeld
	// ErrNotOwner is the error of a renew or release of a lock that
	// another token holds (*HeldError).
	// Message: "lock: held by another owner".
	ErrNotOwner = lockwire.ErrNotOwner
	// ErrWrongType is the error of a call whose key at the lock's name is
	// not a lock, or one of whose auxiliary keys holds what someone else
	// wrote (*DataError).
	// Message: "lock: key is not a lock".
	ErrWrongType = lockwire.ErrWrongType
	// ErrStaleFence is the error of a fence check that refused a fence not
	// newer than the highest seen (*StaleFenceError).
	ErrStaleFence = errors.New("lock: stale fence")
	// ErrInvalid is the error of a call given an unusable argument (empty
	// name, ttl < 1ms, ...), or of a semaphore or shared acquire whose
	// limit differs from the live holders' (*DataError with Err
	// ErrInvalid): the caller's configuration disagrees, which waiting
	// does not fix.
	// Message: "lock: invalid argument".
	ErrInvalid = lockwire.ErrInvalid
	// ErrUnavailable is the error of a call that Redis could not carry out
	// safely, although it may have answered: fewer replicas than
	// Options.WaitReplicas acknowledged a lock write (*ReplicationError),
	// too few Redlock nodes answered (*QuorumError), or replies come too
	// slowly for any grant to count (*LateError with Slow set). Waiting at
	// the same speed or with the same nodes does not help.
	// Message: "lock: Redis unavailable".
	ErrUnavailable = lockwire.ErrUnavailable
	// ErrNotWoken is the warning of a release that freed the lock while the
	// server refused the message that wakes its waiters (an ACL without PUBLISH, or without the channel:
	// Redis 7 gives new users no channels unless granted, e.g. &lockctl:*).
	// The release stands: waiters find the lock free at their next poll or
	// when the holder's TTL would have run out. Errors are *WakeError values;
	// a caller reports them as a warning, never as a failed release.
	ErrNotWoken = errors.New("lock: released, but waiters were not woken")
	// ErrLost is the error of a lease's watchdog (Lease.Watch) that gave it up, either because
	// a renewal was refused or because its local deadline passed without a
	// successful renewal (*LostError).
	ErrLost = errors.New("lock: lost")
)

// Holder describes whoever holds a lock, as far as its stored value tells.
type Holder struct {
	Key        string
	Token      string // lockctl token, or the raw value of a foreign string lock
	Fence      int64  // 0 when unknown (foreign lock)
	Owner      string // user@host:pid, the raw value of a foreign string lock, or uuid:threadId for Redisson
	Note       string
	AcquiredAt time.Time     // zero when unknown
	TTL        time.Duration // remaining; -1 when the key has no TTL
	Format     Format        // FormatLockctl, FormatString (foreign SET NX) or FormatRedisson (hash lock); "" when no value is described
	Reason     Reason        // why the name is taken when not (only) by the lock key's holder; "" for a plain holder
	Reentry    int64         // hold count: 1 for a lock held once, n for a lease re-entered to n holds (lockctl's or Redisson's); 0 when no holder is described
	RWMode     string        // a Redisson read-write lock's hold: RedissonRead or RedissonWrite; "" otherwise
	LeaseTTL   time.Duration // the TTL a lockctl lease was taken with; 0 when unknown
	JobURL     string        // the acquirer's AcquireOptions.JobURL, if any
	// RenewedAt is the server's time of the holder's last renewal (its
	// acquisition's until the first); zero when unknown (foreign locks
	// record none).
	RenewedAt time.Time
	// RenewEvery is the holder's renewal period as it recorded it
	// (AcquireOptions.RenewEvery); 0 for a lease renewed by hand, or
	// unknown.
	RenewEvery time.Duration
	// PIDStart is the start time of the owner's process
	// (AcquireOptions.OwnerStart); 0 when unknown.
	PIDStart int64

	// Shared: a holder in shared mode (AcquireOptions.Shared).
	Shared bool

	// Semaphore refusals (Reason ReasonSemaphore) describe the holder whose slot
	// frees first; Holders is how many hold a slot and Limit their bound.
	// Refusals by shared holders (ReasonShared) are alike, without Limit.
	Holders, Limit int64
	// Queue is, for a FIFO waiter, how many waiters are ahead of it. Reason
	// is ReasonQueue when the lock itself is free but earlier waiters go first.
	// ReasonWriters refuses a shared acquire because Queue exclusive
	// acquirers wait (they go first); Holders shared holders hold it now.
	Queue int64

	arrival int64 // a FIFO waiter's own arrival in the queue (server µs)
}

// HeldError reports the current holder. Err is ErrNotObtained when Acquire
// returns it and ErrNotOwner when Resume, Refresh or Release do; the error
// matches Err with errors.Is:
//
//	err := &lock.HeldError{Err: lock.ErrNotOwner, Holder: h}
//	errors.Is(err, lock.ErrNotOwner) // true
type HeldError struct {
	Err    error
	Holder Holder
}

// newHeldError builds a HeldError of the given kind (ErrNotObtained or ErrNotOwner).
func newHeldError(kind error, h Holder) *HeldError { return &HeldError{Err: kind, Holder: h} }

func (e *HeldError) Error() string { return "lock: " + e.detail() }

func (e *HeldError) detail() string {
	if e.Holder.Reason == ReasonQueue {
		// FIFO: nobody holds the lock, but earlier waiters go first.
		return fmt.Sprintf("%s is free, but %d earlier waiter(s) go first", e.Holder.Key, e.Holder.Queue)
	}
	if e.Holder.Reason == ReasonWriters {
		if e.Holder.Holders > 0 {
			return fmt.Sprintf("%s is held shared by %d holder(s), but %d exclusive waiter(s) go first", e.Holder.Key, e.Holder.Holders, e.Holder.Queue)
		}
		return fmt.Sprintf("%s is free, but %d exclusive waiter(s) go first", e.Holder.Key, e.Holder.Queue)
	}
	msg := fmt.Sprintf("%s held by %s", e.Holder.Key, e.Holder.Owner)
	if e.Holder.RWMode != "" {
		msg = fmt.Sprintf("%s held as a Redisson %s lock by %s", e.Holder.Key, e.Holder.RWMode, e.Holder.Owner)
	}
	if e.Holder.Reason == ReasonShared {
		msg = fmt.Sprintf("%s held shared by %d holder(s), first to expire %s", e.Holder.Key, e.Holder.Holders, e.Holder.Owner)
	}
	if e.Holder.TTL >= 0 {
		msg += fmt.Sprintf(" (ttl %s)", e.Holder.TTL.Round(time.Millisecond))
	} else {
		msg += " (no ttl: never expires)"
	}
	return msg
}

// Unwrap returns Err: ErrNotObtained or ErrNotOwner.
func (e *HeldError) Unwrap() error { return e.Err }

// StaleFenceError reports that Check was given a fence lower than Highest,
// or equal to it from another holder than the one that presented it first.
type StaleFenceError struct {
	Resource string
	Fence    int64
	Highest  int64
}

func (e *StaleFenceError) Error() string {
	if e.Fence == e.Highest {
		return fmt.Sprintf("lock: fence %d for %s is stale: another holder already wrote with fence %d", e.Fence, e.Resource, e.Highest)
	}
	return fmt.Sprintf("lock: fence %d for %s is stale: %d is newer", e.Fence, e.Resource, e.Highest)
}

// Is makes a *StaleFenceError match ErrStaleFence.
func (e *StaleFenceError) Is(target error) bool { return target == ErrStaleFence }

// ReplicationError reports that WAIT after a lock write counted fewer
// replicas than Want.
// After Acquire the lock has been released again (best effort) and is not
// held; after Renew the master holds the renewed lease, but the renewal
// does not count (a watchdog's or Lease's deadline stays where the last
// acknowledged write put it): the master may be one a failover replaced.
type ReplicationError struct {
	Key   string
	Want  int
	Acked int
}

func (e *ReplicationError) Error() string {
	return fmt.Sprintf("lock: %s: %d of %d replicas acknowledged the lock write", e.Key, e.Acked, e.Want)
}

// Is makes a *ReplicationError match ErrUnavailable.
func (e *ReplicationError) Is(target error) bool {
	return target == ErrUnavailable || target == lockwire.ErrNotReplicated
}

// WakeError reports that Key was released, but its wake-up was refused
// with Reason (the server's words): publishing it on Channel, or, when
// Command is set, Command, which picks the waiter to wake. Then every
// process's first waiter was woken instead, unless Channel (the release
// channel) was refused too.
type WakeError struct {
	Key     string
	Channel string
	Reason  string
	Command string
}

func (e *WakeError) Error() string {
	if e.Command != "" {
		return fmt.Sprintf("lock: %s released, but the server refused %s, which picks the waiter to wake: %s", e.Key, e.Command, e.Reason)
	}
	return fmt.Sprintf("lock: %s released, but the server refused the wake-up on %s: %s", e.Key, e.Channel, e.Reason)
}

// Is makes a *WakeError match ErrNotWoken.
func (e *WakeError) Is(target error) bool { return target == ErrNotWoken }
