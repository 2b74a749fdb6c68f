package exporter

import (
	"sort"

	"github.com/lockctl/lockctl/pkg/events"
)

// Bucket bounds (seconds) of the two histograms: waits run from
// milliseconds (a free lock) to the length of a job; holds from a quick
// critical section to a nightly backup.
var (
	waitBuckets = []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 1800}
	holdBuckets = []float64{0.01, 0.1, 1, 5, 10, 30, 60, 300, 900, 1800, 3600, 7200, 21600, 86400}
)

// histogram is a cumulative-on-output histogram: Counts[i] counts
// observations in (bound[i-1], bound[i]], the last one past every bound.
type histogram struct {
	Counts []uint64 `json:"counts"`
	Sum    float64  `json:"sum"`
	Count  uint64   `json:"count"`
}

func (h *histogram) observe(bounds []float64, v float64) {
	if len(h.Counts) != len(bounds)+1 {
		h.Counts = make([]uint64, len(bounds)+1)
	}
	i := sort.SearchFloat64s(bounds, v) // first bound >= v
	h.Counts[i]++
	h.Sum += v
	h.Count++
}

// cumulative returns the bucket map client_golang wants.
func (h *histogram) cumulative(bounds []float64) map[float64]uint64 {
	m := make(map[float64]uint64, len(bounds))
	var acc uint64
	for i, b := range bounds {
		if i < len(h.Counts) {
			acc += h.Counts[i]
		}
		m[b] = acc
	}
	return m
}

// Totals are the counters and histograms built from the event stream,
// with the ID of the last entry counted: what the exporter persists to
// resume after a restart without counting an entry twice.
type Totals struct {
	LastID string            `json:"last_id"`
	Counts map[string]uint64 `json:"counts"` // by event kind
	Wait   histogram         `json:"wait"`
	Hold   histogram         `json:"hold"`
	// Missed counts entries the stream's cap trimmed before they were read
	// (at least one; the exact number is unknowable).
	Missed uint64 `json:"missed"`
}

func newTotals() *Totals { return &Totals{Counts: map[string]uint64{}} }

func (t *Totals) add(e events.Entry) {
	t.Counts[e.Kind]++
	switch {
	case e.Kind == events.Acquired:
		t.Wait.observe(waitBuckets, e.Duration.Seconds())
	case e.Kind == events.Released && e.Duration > 0:
		t.Hold.observe(holdBuckets, e.Duration.Seconds())
	}
}

func (t *Totals) clone() *Totals {
	c := *t
	c.Counts = make(map[string]uint64, len(t.Counts))
	for k, v := range t.Counts {
		c.Counts[k] = v
	}
	c.Wait.Counts = append([]uint64(nil), t.Wait.Counts...)
	c.Hold.Counts = append([]uint64(nil), t.Hold.Counts...)
	return &c
}
