package lock

import "time"

// Clock gives a waiter its schedules (deadlines, polling timers). Lease
// expiry itself belongs to the server and never to this clock.
type Clock interface {
	// Now must carry a monotonic reading (as time.Now does), so that wall
	// clock steps cannot stretch or cut a wait.
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is the part of *time.Timer a waiter uses.
type Timer interface {
	C() <-chan time.Time
	Stop() bool
}

// realClock is the real, monotonic clock: a nil Options.Clock or
// WatchdogOptions.Clock.
func realClock() Clock { return systemClock{} }

type systemClock struct{}

func (systemClock) Now() time.Time                 { return time.Now() }
func (systemClock) NewTimer(d time.Duration) Timer { return systemTimer{time.NewTimer(d)} }

type systemTimer struct{ t *time.Timer }

func (t systemTimer) C() <-chan time.Time { return t.t.C }
func (t systemTimer) Stop() bool          { return t.t.Stop() }
