package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/lockctl/lockctl/pkg/once"
	"github.com/spf13/pflag"
)

// resolveEvents applies the config key `events: false` (the positive
// spelling of --no-events), below the flag and LOCKCTL_NO_EVENTS.
func (f *Factory) resolveEvents(flags *pflag.FlagSet) error {
	v := f.Viper
	if fl := flags.Lookup("no-events"); fl == nil || fl.Changed || f.Getenv("LOCKCTL_NO_EVENTS") != "" || !v.IsSet("events") {
		return nil
	}
	on, err := parseBool(configString(v.Get("events")))
	if err != nil {
		return &UsageError{Err: fmt.Errorf("events (from %s): %v", f.settingOrigin("events"), err)}
	}
	f.G.NoEvents = !on
	return nil
}

// eventsKey is the stream key: LOCKCTL_EVENTS_KEY, else config
// `events-key`, else lockctl:events. resolve has refused one that is a key
// of lockctl's own (checkEventsKey).
func (f *Factory) eventsKey() string {
	k, _ := f.eventsKeySource()
	return k
}

// eventsKeySource is eventsKey and where it came from, for messages.
func (f *Factory) eventsKeySource() (key, from string) {
	if k := f.Getenv("LOCKCTL_EVENTS_KEY"); k != "" {
		return k, "LOCKCTL_EVENTS_KEY"
	}
	if k := f.Viper.GetString("events-key"); k != "" {
		return k, "events-key"
	}
	return events.DefaultKey, ""
}

// checkEventsKey refuses an events key that names a key of lockctl's own:
// a lock under the prefix in force, an auxiliary key of a lock, the audit
// stream, the exporter's stored totals, a once or limit key. Every command
// checks it before it runs (the exporter and top read the stream, every
// other command may write it): an XADD there would turn a lock into a
// stream without a TTL, which its next holder cannot take.
func (f *Factory) checkEventsKey() error {
	key, from := f.eventsKeySource()
	if from == "" {
		return nil
	}
	var what string
	switch {
	case f.G.Prefix != "" && strings.HasPrefix(key, f.G.Prefix):
		what = fmt.Sprintf("a lock key (under the prefix %q)", f.G.Prefix)
	case lockwire.InAuxSpace(key):
		what = "an auxiliary key of a lock"
	case key == inspect.AuditKey:
		what = "the audit stream"
	case key == events.DefaultKey+":exporter":
		what = "the exporter's stored totals"
	case strings.HasPrefix(key, once.DefaultPrefix) || strings.HasPrefix(key, limit.DefaultPrefix):
		what = "a once or limit key"
	default:
		return nil
	}
	return &UsageError{Err: fmt.Errorf("%s=%s: %s, not a key the event stream may use", from, key, what),
		Hints: []string{fmt.Sprintf("give the event stream a key of its own, outside the lock prefix and lockctl's keys (the default is %s)", events.DefaultKey)}}
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
		f.events = events.NewRecorder(c, &events.Options{Key: f.eventsKey(), Timeout: min(f.G.Timeout, events.DefaultTimeout), Delay: f.eventsDelay})
	})
	return f.events
}

// eventSink is Events as pkg/lock takes it (Options.Events), which records
// acquisitions, releases and the watchdog's renewals itself: a nil
// interface, not a nil *Recorder, when events are off, so that the Locker
// skips recording altogether.
func (f *Factory) eventSink() events.Sink {
	if r := f.Events(); r != nil {
		return r
	}
	return nil
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

// recordReleaseRefused records a `lockctl release` that Resume refused:
// not_owner or not_held, as pkg/lock records the release's own refusals.
func (f *Factory) recordReleaseRefused(ctx context.Context, name string, err error) {
	switch {
	case errors.Is(err, lock.ErrNotOwner):
		f.record(ctx, events.NotOwner, name, 0)
	case errors.Is(err, lock.ErrNotHeld):
		f.record(ctx, events.NotHeld, name, 0)
	}
}

// recordRenewFailed records a refused `lockctl renew` (pkg/lock records
// only the watchdog's renewals).
func (f *Factory) recordRenewFailed(ctx context.Context, name string, err error) {
	if errors.Is(err, lock.ErrNotOwner) || errors.Is(err, lock.ErrNotHeld) {
		f.record(ctx, events.RenewFailed, name, 0)
	}
}
