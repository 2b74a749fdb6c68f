package runner

import (
	"context"
	"sync"

	"github.com/lockctl/lockctl/pkg/events"
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

	mu      sync.Mutex
	holding bool
	held    []events.Event
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
func (g *EventGate) hold() {
	if g == nil {
		return
	}
	g.mu.Lock()
	g.holding = true
	g.mu.Unlock()
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
	g.holding, g.held = false, nil
	return held
}
