// Package leasetime holds the lease-validity rule (Deadline) with its
// defaults, and the clocks that schedule waits and renewals, for pkg/lock,
// pkg/once and cmd: a lease's time is computed in one place.
package leasetime

import "time"

// Deadline is the lease-validity rule, and the only place it is
// computed: a lease written (acquired, re-confirmed or renewed) by a call
// sent at sent, for ttl, counts as held on this host while the local clock
// is before sent + ttl - margin. A margin of 0 means DefaultMargin(ttl).
//
// Counting from the send time is what makes the rule safe whatever the
// reply's delay: the server applied the write at or after sent, so its copy
// of the lease outlives the deadline by at least the margin. A reply that
// arrives after the deadline proves nothing (the link or the server was
// slow, or this process was stopped, while the lease may have run out on
// the server and someone else taken the lock), so that lease is not held.
// pkg/lock's Acquire, renewals, Watchdog and Lease.Deadline, and pkg/once's
// claims, all go through here.
func Deadline(sent time.Time, ttl, margin time.Duration) time.Time {
	if margin <= 0 {
		margin = DefaultMargin(ttl)
	}
	return sent.Add(ttl - margin)
}

// DefaultMargin is ttl/4, at least 100ms, at most ttl/2.
//
// At the local deadline the server still holds the lease for at least the
// margin (the deadline counts from a renewal's send time, which is no later
// than the moment the server applied it). That remainder absorbs clock-rate
// differences between this host and the server (well under 1%) and the time
// the holder needs to stop its work after the loss: a quarter of the TTL
// fits the default 5s SIGTERM-to-SIGKILL grace of a 30s lease, and leaves
// four renewals (DefaultRenewEvery) plus fast retries before the deadline
// at 3ttl/4.
func DefaultMargin(ttl time.Duration) time.Duration {
	m := ttl / 4
	if m < 100*time.Millisecond {
		m = 100 * time.Millisecond
	}
	if m > ttl/2 {
		m = ttl / 2
	}
	return m
}

// DefaultRenewEvery is ttl/6, the renewal period when none is set.
//
// A lease rides through a stretch in which its key cannot be written (a
// failover, a stalled master) if a renewal gets through before the local
// deadline. At the worst phase the stretch starts just before a renewal is
// due, a period after the last successful one, so the longest stretch
// survived is ttl - margin - period: with the default margin (ttl/4) and
// ttl/6 that is 7ttl/12, about 58% of the TTL (ttl/3 would leave 5ttl/12,
// 42%). Renewing twice as often costs one small script call per period.
func DefaultRenewEvery(ttl time.Duration) time.Duration { return ttl / 6 }

// RideThrough is the longest time the lease's key may stay unwritable (a
// failover, a stalled master) that a Watchdog with this ttl, period and
// margin survives at the worst phase of its renewal cycle: ttl - margin -
// every, less the round trip of the renewal that gets through. 0 for
// every or margin means the default.
func RideThrough(ttl, every, margin time.Duration) time.Duration {
	if margin <= 0 {
		margin = DefaultMargin(ttl)
	}
	if every <= 0 {
		every = DefaultRenewEvery(ttl)
	}
	return max(Deadline(time.Time{}, ttl, margin).Sub(time.Time{})-every, 0)
}

// Clock gives a waiter or a watchdog its schedules (deadlines, polling timers). Lease
// expiry itself belongs to the server and never to this clock.
type Clock interface {
	// Now must carry a monotonic reading (as time.Now does), so that wall
	// clock steps cannot stretch or cut a wait.
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a waiter uses. An alias of the
// interface literal, as lock.Timer is, so that any lock.Clock is a Clock.
type Timer = interface {
	C() <-chan time.Time
	Stop() bool
}

// Real is the real, monotonic clock: a nil lock.Options.Clock or
// lock.WatchdogOptions.Clock.
func Real() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                 { return time.Now() }
func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.t.C }
func (t systemTimer) Stop() bool          { return t.t.Stop() }
