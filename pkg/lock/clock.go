package lock

import "time"

// Clock is the time source of a Locker's waits (deadlines, polling timers)
// and of a watchdog's schedule (Options.Clock, WatchdogOptions.Clock), so
// that tests can drive them; nil means the real clock. The expiry of a
// lease belongs to the server and never to this clock.
type Clock interface {
	// Now must carry a monotonic reading, as time.Now's does, so that a
	// step of the wall clock cannot stretch or cut a wait or a lease.
	Now() time.Time
	// NewTimer starts a timer that fires once, after d.
	NewTimer(d time.Duration) Timer
}

// Timer is the part of a *time.Timer a Clock's timers need: C delivers
// the time when the timer fires, Stop stops it and reports whether it had
// not fired yet.
type Timer = interface {
	C() <-chan time.Time
	Stop() bool
}
