package exporter

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/events"
)

// Bucket bounds are inclusive upper bounds (le), as Prometheus defines them.
func TestHistogramBuckets(t *testing.T) {
	tot := newTotals()
	for _, d := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, time.Second, time.Hour} {
		tot.add(events.Entry{Event: events.Event{Kind: events.Acquired, Duration: d}})
	}
	got := tot.Wait.cumulative(waitBuckets)
	want := map[float64]uint64{0.001: 2, 0.005: 3, 0.01: 3, 0.5: 3, 1: 4, 1800: 4}
	for le, n := range want {
		if got[le] != n {
			t.Errorf("bucket le=%v = %d, want %d", le, got[le], n)
		}
	}
	if tot.Wait.Count != 5 || tot.Wait.Sum < 3601 || tot.Wait.Sum > 3601.01 {
		t.Errorf("count %d sum %v", tot.Wait.Count, tot.Wait.Sum)
	}
	// A release of unknown hold time counts as a release, not as a hold.
	tot.add(events.Entry{Event: events.Event{Kind: events.Released}})
	tot.add(events.Entry{Event: events.Event{Kind: events.Released, Duration: 2 * time.Second}})
	if tot.Counts[events.Released] != 2 || tot.Hold.Count != 1 {
		t.Errorf("released %d, holds %d", tot.Counts[events.Released], tot.Hold.Count)
	}
}

// The stored totals round-trip exactly (they are what a restart resumes from).
func TestTotalsRoundTrip(t *testing.T) {
	tot := newTotals()
	tot.LastID = "1700000000000-3"
	tot.add(events.Entry{Event: events.Event{Kind: events.Acquired, Duration: 3 * time.Second}})
	tot.add(events.Entry{Event: events.Event{Kind: events.NotOwner}})
	raw, err := json.Marshal(tot)
	if err != nil {
		t.Fatal(err)
	}
	back := newTotals()
	if err := json.Unmarshal(raw, back); err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if string(again) != string(raw) {
		t.Fatalf("round trip:\n%s\n%s", raw, again)
	}
}

func TestIDOrder(t *testing.T) {
	for _, c := range []struct {
		a, b string
		less bool
	}{{"1-0", "1-1", true}, {"1-9", "2-0", true}, {"10-0", "9-5", false}, {"5-5", "5-5", false}} {
		if got := idLess(c.a, c.b); got != c.less {
			t.Errorf("idLess(%s, %s) = %v", c.a, c.b, got)
		}
	}
}
