package runner

import (
	"context"
	"testing"

	"github.com/lockctl/lockctl/pkg/events"
	"github.com/redis/go-redis/v9"
)

// The gate lets a release's script write the queued events and its own
// (events.Inline) while it holds them for pass, never while it holds them
// to drop them: a release after a loss records nothing.
func TestEventGateLetsTheReleaseWriteOnlyWhatPasses(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer c.Close()
	rec := events.NewRecorder(c, nil)
	g := NewEventGate(rec)
	var _ events.Inline = g

	rec.Record(context.Background(), events.Event{Kind: events.Acquired, Name: "a"})
	g.holdToDrop()
	if _, _, q, ok := g.Take(c); ok || q != nil {
		t.Fatalf("Take while holding to drop = %v, %v; want nothing", q, ok)
	}
	g.drop()

	g.hold()
	_, _, q, ok := g.Take(c)
	if !ok || len(q) != 1 || q[0].Kind != events.Acquired {
		t.Fatalf("Take while holding to pass = %v, %v; want the queued acquired event", q, ok)
	}
	g.pass()
	other := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer other.Close()
	if _, _, _, ok := g.Take(other); ok {
		t.Fatal("Take for a client the recorder does not write through")
	}
	if _, _, _, ok := NewEventGate(plain{}).Take(c); ok {
		t.Fatal("Take through a gate whose sink only records")
	}
}

type plain struct{}

func (plain) Record(context.Context, events.Event) {}
