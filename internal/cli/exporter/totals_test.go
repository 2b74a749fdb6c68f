package exporter

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/events"
)

// Bucket bounds are inclusive upper bounds (le), as Prometheus defines them.
func TestHistogramBuckets(t *testing.T) {
	tot := newTotals()
	for _, d := range []time.Duration{0, time.Millisecond, 2 * time.Millisecond, time.Second, time.Hour} {
		tot.add(events.Entry{Event: events.Event{Kind: events.Acquired, Name: "a", Duration: d}}, 10)
	}
	got := tot.Names["a"].Wait.cumulative(waitBuckets)
	want := map[float64]uint64{0.001: 2, 0.005: 3, 0.01: 3, 0.5: 3, 1: 4, 1800: 4}
	for le, n := range want {
		if got[le] != n {
			t.Errorf("bucket le=%v = %d, want %d", le, got[le], n)
		}
	}
	if w := tot.Names["a"].Wait; w.Count != 5 || w.Sum < 3601 || w.Sum > 3601.01 {
		t.Errorf("count %d sum %v", w.Count, w.Sum)
	}
	// A release of unknown hold time counts as a release, not as a hold.
	tot.add(events.Entry{Event: events.Event{Kind: events.Released, Name: "a"}}, 10)
	tot.add(events.Entry{Event: events.Event{Kind: events.Released, Name: "a", Duration: 2 * time.Second}}, 10)
	if n := tot.Names["a"]; n.Counts[events.Released] != 2 || n.Hold.Count != 1 {
		t.Errorf("released %d, holds %d", n.Counts[events.Released], n.Hold.Count)
	}
}

// The stored totals round-trip exactly (they are what a restart resumes from).
func TestTotalsRoundTrip(t *testing.T) {
	tot := newTotals()
	tot.LastID = "1700000000000-3"
	tot.add(events.Entry{Event: events.Event{Kind: events.Acquired, Name: "a", Duration: 3 * time.Second}}, 1)
	tot.add(events.Entry{Event: events.Event{Kind: events.NotOwner, Name: "b"}}, 1)
	tot.add(events.Entry{Event: events.Event{Kind: events.RateLimited, Name: "k"}}, 1)
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

// Names past the bound are summed under _other, first come first served;
// a name keeps its series, and the bound holds, across a stored round trip
// (an exporter restart); label sets never grow past bound+1.
func TestNamesBounded(t *testing.T) {
	tot := newTotals()
	for i := 0; i < 1000; i++ {
		tot.add(events.Entry{Event: events.Event{Kind: events.Acquired, Name: fmt.Sprintf("job-%d", i)}}, 3)
		tot.add(events.Entry{Event: events.Event{Kind: events.RateLimited, Name: fmt.Sprintf("key-%d", i)}}, 3)
	}
	raw, _ := json.Marshal(tot)
	back := newTotals()
	if err := json.Unmarshal(raw, back); err != nil {
		t.Fatal(err)
	}
	back.migrate()
	back.add(events.Entry{Event: events.Event{Kind: events.Acquired, Name: "new"}}, 3)
	back.add(events.Entry{Event: events.Event{Kind: events.Acquired, Name: "job-1"}}, 3)
	if len(back.Names) != 4 || len(back.Keys) != 4 {
		t.Fatalf("names %d keys %d, want 4 each (3 + _other)", len(back.Names), len(back.Keys))
	}
	if back.Names["job-1"].Counts[events.Acquired] != 2 || back.Names[Other].Counts[events.Acquired] != 998 {
		t.Errorf("job-1 %d, _other %d", back.Names["job-1"].Counts[events.Acquired], back.Names[Other].Counts[events.Acquired])
	}
	if back.Keys["key-0"] != 1 || back.Keys[Other] != 997 {
		t.Errorf("keys %v", back.Keys)
	}
}

// The totals of an exporter that kept no names move under _other: no
// counter falls back across the upgrade.
func TestTotalsMigrate(t *testing.T) {
	back := newTotals()
	if err := json.Unmarshal([]byte(`{"last_id":"1-1","counts":{"acquired":7,"rate_limited":2},"wait":{"counts":[1,2],"sum":3,"count":3},"hold":{"counts":[],"sum":0,"count":0}}`), back); err != nil {
		t.Fatal(err)
	}
	back.migrate()
	if o := back.Names[Other]; o == nil || o.Counts[events.Acquired] != 7 || o.Wait.Count != 3 || back.Keys[Other] != 2 || back.Counts != nil {
		t.Fatalf("migrated %+v", back)
	}
}
