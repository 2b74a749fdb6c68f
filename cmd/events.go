package cmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/spf13/pflag"
)

// resolveEvents applies the config key `events: false` (the positive
// spelling of --no-events), below the flag and LOCKCTL_NO_EVENTS.
func (f *Factory) resolveEvents(flags *pflag.FlagSet) error {
	v := f.Viper
	if fl := flags.Lookup("no-events"); fl == nil || fl.Changed || f.Getenv("LOCKCTL_NO_EVENTS") != "" || !v.IsSet("events") {
		return nil
	}
	on, err := strconv.ParseBool(configString(v.Get("events")))
	if err != nil {
		return &UsageError{Err: fmt.Errorf("events=%q (from config file): want true or false", configString(v.Get("events")))}
	}
	f.G.NoEvents = !on
	return nil
}

// eventsKey is the stream key: LOCKCTL_EVENTS_KEY, else config
// `events-key`, else lockctl:events.
func (f *Factory) eventsKey() string {
	if k := f.Getenv("LOCKCTL_EVENTS_KEY"); k != "" {
		return k
	}
	if k := f.Viper.GetString("events-key"); k != "" {
		return k
	}
	return events.DefaultKey
}

// Events returns the recorder of operation events, or nil (which records
// nothing) under --no-events and --redlock: no one Redlock master has the
// whole picture, and writing to all of them would count every event N times.
func (f *Factory) Events() *events.Recorder {
	f.eventsOnce.Do(func() {
		if f.G.NoEvents {
			return
		}
		if redlock, err := f.redlock(); err != nil || redlock {
			return
		}
		c, err := f.Client()
		if err != nil {
			return
		}
		f.events = events.NewRecorder(c, &events.Options{Key: f.eventsKey(), Timeout: min(f.G.Timeout, events.DefaultTimeout)})
	})
	return f.events
}

// record writes one event; it never fails the command.
func (f *Factory) record(ctx context.Context, kind, name string, d time.Duration) {
	r := f.Events()
	if r == nil {
		return
	}
	r.Record(ctx, events.Event{Kind: kind, Name: name, Duration: d})
}

// closeEvents writes the queued events before the client goes: the
// operation is over, this costs at most the recorder's timeout.
func (f *Factory) closeEvents() {
	if f.events == nil {
		return
	}
	f.events.Close()
	if n := f.events.Failed(); n > 0 {
		f.Verbosef("%d event(s) not recorded in %s", n, f.events.Key())
	}
}

// recordAcquire records how an acquisition ended: acquired (with its
// wait), busy (no waiting) or timeout; errors that say nothing about the
// lock (Redis unreachable, interrupted, usage) record nothing.
func (f *Factory) recordAcquire(ctx context.Context, nonblock bool, name string, lease *lock.Lease, err error) {
	switch {
	case err == nil && lease != nil && lease.Holds > 1:
		// A re-entry takes nothing new: its release records nothing either.
	case err == nil && lease != nil:
		f.record(ctx, events.Acquired, name, max(lease.Waited, time.Microsecond))
	case errors.Is(err, lock.ErrNotObtained) && nonblock:
		f.record(ctx, events.Busy, name, 0)
	case errors.Is(err, lock.ErrNotObtained):
		f.record(ctx, events.Timeout, name, 0)
	}
}

// holdStart is when the lease that token holds was acquired, for the hold
// time of `lockctl release` (zero when unknown or events are off: the read
// costs a round trip only when it is used).
func (f *Factory) holdStart(ctx context.Context, l *lock.Locker, name, token string) time.Time {
	if f.Events() == nil {
		return time.Time{}
	}
	h, err := l.Get(ctx, name)
	if err != nil || h.Token != token {
		return time.Time{}
	}
	return h.AcquiredAt
}

// recordRelease records a release by its holder or its refusal.
func (f *Factory) recordRelease(ctx context.Context, name string, since time.Time, left int, err error) {
	switch {
	case err == nil && left == 0:
		var held time.Duration
		if !since.IsZero() {
			held = max(time.Since(since), time.Microsecond)
		}
		f.record(ctx, events.Released, name, held)
	case errors.Is(err, lock.ErrNotOwner):
		f.record(ctx, events.NotOwner, name, 0)
	case errors.Is(err, lock.ErrNotHeld):
		f.record(ctx, events.NotHeld, name, 0)
	}
}

// recordRenewFailed records a refused renewal.
func (f *Factory) recordRenewFailed(ctx context.Context, name string, err error) {
	if errors.Is(err, lock.ErrNotOwner) || errors.Is(err, lock.ErrNotHeld) {
		f.record(ctx, events.RenewFailed, name, 0)
	}
}

// recordRunEnd records how run's hold ended: released, found gone or
// taken over at release, or lost (the renewal that did not succeed in time,
// then the loss).
func (f *Factory) recordRunEnd(ctx context.Context, lease *lock.Lease, lost bool, held time.Duration, relErr error) {
	switch {
	case lost:
		f.record(ctx, events.RenewFailed, lease.Name, 0)
		f.record(ctx, events.LeaseLost, lease.Name, 0)
	case errors.Is(relErr, lock.ErrNotOwner):
		f.record(ctx, events.NotOwner, lease.Name, 0)
	case errors.Is(relErr, lock.ErrNotHeld):
		f.record(ctx, events.NotHeld, lease.Name, 0)
	case relErr != nil:
		// The release did not reach Redis: nothing is known of how it ended.
	case lease.Holds <= 1:
		f.record(ctx, events.Released, lease.Name, max(held, time.Microsecond))
	}
}
