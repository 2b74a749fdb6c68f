package runner

import (
	"context"
	"sync"

	"github.com/lockctl/lockctl/pkg/events"
	"github.com/redis/go-redis/v9"
)

// EventGate is the event sink of a run's Locker: it passes events on to
// its sink, except while Run holds them back. What the final release
// records waits for what it found (a lock gone or taken at the end of the
// command is a lease lost, one event; a release after a loss already
// recorded records nothing), so Run holds the gate across the release and
// then lets the held events through or drops them. One Locker serves the
// whole run: the release needs no second Locker and no extra round trip.
// A nil *EventGate records nothing.
type EventGate struct {
	sink events.Sink

	mu       sync.Mutex
	holding  bool
	dropping bool // holding until drop (holdToDrop)
	held     []events.Event
}

// NewEventGate is a gate in front of sink; nil when sink is nil (events
// off).
func NewEventGate(sink events.Sink) *EventGate {
	if sink == nil {
		return nil
	}
	return &EventGate{sink: sink}
}

// Record passes e on, or keeps it while the gate is held.
func (g *EventGate) Record(ctx context.Context, e events.Event) {
	if g == nil {
		return
	}
	g.mu.Lock()
	if g.holding {
		g.held = append(g.held, e)
		g.mu.Unlock()
		return
	}
	g.mu.Unlock()
	g.sink.Record(ctx, e)
}

// record passes e on whether or not the gate is held: Run's own events.
func (g *EventGate) record(e events.Event) {
	if g != nil {
		g.sink.Record(context.Background(), e)
	}
}

// hold keeps what is recorded from now on, until pass or drop.
func (g *EventGate) hold() { g.holdFor(false) }

// holdToDrop is hold when drop will follow whatever the release finds:
// the release may then not write its event in its own script (Take).
func (g *EventGate) holdToDrop() { g.holdFor(true) }

func (g *EventGate) holdFor(dropping bool) {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.holding, g.dropping = true, dropping
	g.mu.Unlock()
}

// Take lets the release's script write the sink's queued events and its
// own (events.Inline), unless what the release records is to be dropped.
// A release writes its own event there only when it released the lock,
// which is when Run passes the held events on.
func (g *EventGate) Take(c redis.Cmdable) (key string, maxLen int64, queued []events.Event, ok bool) {
	if g == nil {
		return "", 0, nil, false
	}
	in, isInline := g.sink.(events.Inline)
	g.mu.Lock()
	dropping := g.holding && g.dropping
	g.mu.Unlock()
	if !isInline || dropping {
		return "", 0, nil, false
	}
	return in.Take(c)
}

// Taken passes a release script's counts on to the sink (events.Inline).
func (g *EventGate) Taken(written, failed int, unsent []events.Event) {
	if in, ok := g.sink.(events.Inline); ok {
		in.Taken(written, failed, unsent)
	}
}

// pass lets the held events through, in order, and opens the gate.
func (g *EventGate) pass() {
	for _, e := range g.open() {
		g.sink.Record(context.Background(), e)
	}
}

// drop forgets the held events and opens the gate.
func (g *EventGate) drop() { _ = g.open() }

func (g *EventGate) open() []events.Event {
	if g == nil {
		return nil
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	held := g.held
	g.holding, g.dropping, g.held = false, false, nil
	return held
}
