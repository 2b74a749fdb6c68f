package inspect

import (
	"time"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/pkg/lock"
)

// StalePeriods is how many of its renewal periods a holder may go without
// a renewal before it counts as not renewing. A live holder renews once a
// period (its watchdog retries faster after a failure), so two periods
// without one mean it was killed, is stopped or frozen, or cannot reach
// Redis: its lease runs out at its TTL with nobody behind it.
const StalePeriods = 2

// notRenewing is the one staleness rule: a holder with a renewal period
// (every > 0) whose last renewal is more than StalePeriods periods old
// (age, on the server's clock). A lease renewed by hand (every 0) has no
// period to miss and never counts as not renewing.
func notRenewing(age, every time.Duration) bool {
	return every > 0 && age > StalePeriods*every
}

// Renewal is what a holder's stored value says of its renewals.
type Renewal struct {
	// Recorded: the value records its last renewal (lockctl's own
	// holders). Foreign locks (another client's SET NX string, Redisson)
	// record none, and then nothing below is known.
	Recorded bool
	// At is the server's time of the last renewal (the acquisition's
	// until the first); Age how long ago that is on the server's clock.
	At  time.Time
	Age time.Duration
	// Every is the holder's renewal period; 0 for a lease renewed by hand
	// (lockctl lock, then lockctl renew), which has none.
	Every time.Duration
	// Stale: the holder has gone more than StalePeriods periods
	// (Every) without a renewal: see StalePeriods.
	Stale bool
}

// renewalOf reads h's renewal record at now (the server's time).
func renewalOf(h lock.Holder, now time.Time) Renewal {
	if h.RenewedAt.IsZero() {
		return Renewal{}
	}
	r := Renewal{Recorded: true, At: h.RenewedAt, Age: max(now.Sub(h.RenewedAt), 0), Every: h.RenewEvery}
	r.Stale = notRenewing(r.Age, r.Every)
	return r
}

// Process is what this host can tell of the process a holder's owner
// names (Lock.Process).
type Process string

// States of a holder's process.
const (
	// ProcessUnknown: it cannot be told: the owner is on another host, has
	// no pid (a custom owner, a foreign lock), or this host has no /proc.
	ProcessUnknown Process = ""
	// ProcessAlive: the pid runs, and is the process that took the lock
	// (when its start time was recorded).
	ProcessAlive Process = "alive"
	// ProcessGone: no process has the pid: the holder is dead.
	ProcessGone Process = "gone"
	// ProcessReused: the pid runs, but another process has it now (its
	// start time differs from the one recorded): the holder is dead.
	ProcessReused Process = "reused"
)

// checkProcess is holder l's process, when its host is this one.
func checkProcess(l Lock) Process {
	if l.PID <= 0 || l.Host == "" || l.Host != identity.Host() {
		return ProcessUnknown
	}
	return Process(identity.CheckProcess(l.PID, l.PIDStart))
}
