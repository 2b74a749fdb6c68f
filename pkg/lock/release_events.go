package lock

import (
	"errors"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/redis/go-redis/v9"
)

// releaseEvents is what a release's script writes to the event stream
// itself when the Locker's sink lets it (events.Inline): the events queued
// before the release, then the release's own 'released'. The release then
// costs no write of its own after it. Only the release of a plain lock on
// one server or a Sentinel-managed master does so: on a Cluster the stream
// lies in another slot than the lock.
type releaseEvents struct {
	sink events.Inline
	name string        // the lock's name, for 'released'
	held time.Duration // the hold, for 'released'

	// Set by the backend's release.
	queued   []events.Event // taken from the sink
	sent     bool           // the script ran with them
	released bool           // it wrote (or tried to write) 'released'
	written  int
}

// releaseEventsFor is the release's events for a sink that takes them, nil
// when it does not (then the release records as every other operation).
func (l *Locker) releaseEventsFor(name string, held time.Duration) *releaseEvents {
	in, ok := l.events.(events.Inline)
	if !ok {
		return nil
	}
	return &releaseEvents{sink: in, name: name, held: held}
}

// args takes the sink's queued events for a release on c: the stream key
// for the script's KEYS and the arguments after its own (release.lua's
// record). ok is false when the sink does not take them there.
func (e *releaseEvents) args(c redis.UniversalClient) (stream string, args []any, ok bool) {
	if e == nil {
		return "", nil, false
	}
	if _, cluster := c.(*redis.ClusterClient); cluster {
		return "", nil, false
	}
	stream, maxLen, queued, ok := e.sink.Take(c)
	if !ok {
		return "", nil, false
	}
	e.queued = queued
	args = make([]any, 0, 3+3*len(queued))
	args = append(args, strconv.FormatInt(maxLen, 10), ms3(e.held), e.name)
	for _, q := range queued {
		args = append(args, q.Kind, q.Name, ms3(q.Duration))
	}
	return stream, args, true
}

// ms3 is a duration as the stream stores it (events.Fields): milliseconds
// with three decimals, "" for none.
func ms3(d time.Duration) string {
	if d <= 0 {
		return ""
	}
	f := events.Fields(events.Event{Duration: d})
	return f[len(f)-1]
}

// ran reads a release script's {written, reply} and returns the reply.
func (e *releaseEvents) ran(v any) (any, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return nil, errors.New("lock: release with events: unexpected reply")
	}
	n, ok := a[0].(int64)
	if !ok {
		return nil, errors.New("lock: release with events: unexpected reply")
	}
	e.sent, e.written = true, int(n)
	if r, ok := a[1].([]any); ok && len(r) > 0 {
		if c, _ := r[0].(int64); c == lockwire.ReleaseReleased || c == lockwire.ReleaseNotWoken {
			e.released = true
		}
	}
	return a[1], nil
}

// settle tells the sink what the script wrote, and gives back what it
// never sent.
func (e *releaseEvents) settle() {
	if e == nil || e.sink == nil {
		return
	}
	if !e.sent {
		if len(e.queued) > 0 {
			e.sink.Taken(0, 0, e.queued)
		}
		return
	}
	tried := len(e.queued)
	if e.released {
		tried++
	}
	e.sink.Taken(e.written, tried-e.written, nil)
}

// recordedRelease: the script wrote the release's own event.
func (e *releaseEvents) recordedRelease() bool { return e != nil && e.released }
