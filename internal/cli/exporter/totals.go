package exporter

import (
	"fmt"
	"math"
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

// Other is the label value under which the names past --max-names are
// summed.
const Other = "_other"

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

func (h *histogram) merge(o histogram) {
	if len(o.Counts) > len(h.Counts) {
		h.Counts = append(h.Counts, make([]uint64, len(o.Counts)-len(h.Counts))...)
	}
	for i, n := range o.Counts {
		h.Counts[i] += n
	}
	h.Sum += o.Sum
	h.Count += o.Count
}

// cumulative returns the count of observations at or below each bound,
// by bound (the buckets of a histogram series).
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

// nameTotals are the counters and histograms of one lock name (or of
// Other).
type nameTotals struct {
	Counts map[string]uint64 `json:"counts"` // by event kind
	Wait   histogram         `json:"wait"`
	Hold   histogram         `json:"hold"`
}

// Totals are the counters and histograms built from the event stream,
// per lock name and per limit key, with the ID of the last entry counted:
// what the exporter persists to resume after a restart without counting an
// entry twice. The names (and keys) with series of their own are chosen
// once, first come, up to the exporter's bound; they are stored with the
// totals, so the bound holds across restarts and a name never moves from
// its own series to Other or back.
type Totals struct {
	LastID string                 `json:"last_id"`
	Names  map[string]*nameTotals `json:"names"`
	// Keys counts rate_limited events per limit KEY (or Other).
	Keys map[string]uint64 `json:"keys"`
	// Missed counts entries the stream's cap trimmed before they were read
	// (at least one; the exact number is unknowable).
	Missed uint64 `json:"missed"`
	// Malformed counts entries skipped as no event of lockctl's
	// (events.ErrMalformed).
	Malformed uint64 `json:"malformed,omitempty"`

	// Counts, Wait and Hold are the totals of an exporter that kept no
	// names; they are read once and moved under Other.
	Counts map[string]uint64 `json:"counts,omitempty"`
	Wait   *histogram        `json:"wait,omitempty"`
	Hold   *histogram        `json:"hold,omitempty"`
}

func newTotals() *Totals {
	return &Totals{Names: map[string]*nameTotals{}, Keys: map[string]uint64{}}
}

// migrate moves the totals of an exporter that kept no names under Other,
// so no counter falls back across the upgrade.
func (t *Totals) migrate() {
	if t.Names == nil {
		t.Names = map[string]*nameTotals{}
	}
	if t.Keys == nil {
		t.Keys = map[string]uint64{}
	}
	if t.Counts == nil && t.Wait == nil && t.Hold == nil {
		return
	}
	o := t.entry(Other)
	for k, n := range t.Counts {
		if k == events.RateLimited {
			t.Keys[Other] += n
			continue
		}
		o.Counts[k] += n
	}
	if t.Wait != nil {
		o.Wait.merge(*t.Wait)
	}
	if t.Hold != nil {
		o.Hold.merge(*t.Hold)
	}
	t.Counts, t.Wait, t.Hold = nil, nil, nil
}

// check says why stored totals cannot be what the exporter wrote (a name
// without totals, a histogram sum that observations, durations of 0 or
// more, cannot make), and fills in counts left out.
func (t *Totals) check() error {
	for name, n := range t.Names {
		if n == nil {
			return fmt.Errorf("name %q: no totals", name)
		}
		if n.Counts == nil {
			n.Counts = map[string]uint64{}
		}
		for _, h := range []struct {
			what string
			h    histogram
		}{{"wait", n.Wait}, {"hold", n.Hold}} {
			if !(h.h.Sum >= 0) || math.IsInf(h.h.Sum, 0) || (h.h.Count == 0 && h.h.Sum != 0) {
				return fmt.Errorf("name %q: %s sum %v of %d observations", name, h.what, h.h.Sum, h.h.Count)
			}
		}
	}
	return nil
}

func (t *Totals) entry(label string) *nameTotals {
	n := t.Names[label]
	if n == nil {
		n = &nameTotals{Counts: map[string]uint64{}}
		t.Names[label] = n
	}
	return n
}

// label returns the label value of a name read from Redis: the name itself
// (made valid UTF-8) when it has, or can still get, a series of its own
// among max; Other otherwise. added reports a newly chosen name.
func label(chosen map[string]bool, name string, max int) (l string, added bool) {
	name = labelValue(name)
	if name == Other {
		return Other, false
	}
	if chosen[name] {
		return name, false
	}
	n := len(chosen)
	if chosen[Other] {
		n--
	}
	if n >= max {
		return Other, false
	}
	chosen[name] = true
	return name, true
}

// nameLabel chooses the label of a lock name (see label) and makes sure it
// has totals.
func (t *Totals) nameLabel(name string, max int) (string, bool) {
	chosen := make(map[string]bool, len(t.Names))
	for n := range t.Names {
		chosen[n] = true
	}
	l, added := label(chosen, name, max)
	t.entry(l)
	return l, added
}

func (t *Totals) keyLabel(key string, max int) string {
	chosen := make(map[string]bool, len(t.Keys))
	for k := range t.Keys {
		chosen[k] = true
	}
	l, _ := label(chosen, key, max)
	if _, ok := t.Keys[l]; !ok {
		t.Keys[l] = 0
	}
	return l
}

func (t *Totals) add(e events.Entry, max int) {
	if e.Kind == events.RateLimited {
		t.Keys[t.keyLabel(e.Name, max)]++
		return
	}
	if e.Kind == events.OnceReplayed || e.Kind == events.OnceResolved {
		// once keys are not lock names: no series of theirs.
		return
	}
	l, _ := t.nameLabel(e.Name, max)
	n := t.Names[l]
	n.Counts[e.Kind]++
	switch {
	case e.Kind == events.Acquired:
		n.Wait.observe(waitBuckets, e.Duration.Seconds())
	case e.Kind == events.Released && e.Duration > 0:
		n.Hold.observe(holdBuckets, e.Duration.Seconds())
	}
}

func (t *Totals) clone() *Totals {
	c := *t
	c.Names = make(map[string]*nameTotals, len(t.Names))
	for k, v := range t.Names {
		n := &nameTotals{Counts: make(map[string]uint64, len(v.Counts)), Wait: v.Wait, Hold: v.Hold}
		for kind, x := range v.Counts {
			n.Counts[kind] = x
		}
		n.Wait.Counts = append([]uint64(nil), v.Wait.Counts...)
		n.Hold.Counts = append([]uint64(nil), v.Hold.Counts...)
		c.Names[k] = n
	}
	c.Keys = make(map[string]uint64, len(t.Keys))
	for k, v := range t.Keys {
		c.Keys[k] = v
	}
	return &c
}
