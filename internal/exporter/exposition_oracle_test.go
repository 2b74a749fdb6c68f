package exporter

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/events"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// client_golang is the oracle of the exposition: the exporter served its
// output until the exporter wrote the format itself (to keep its packages'
// initialisers out of every lockctl start), and these tests hold the two
// to the same bytes. It is linked into the tests only.

// oracleText is what client_golang's registry and expfmt's text encoder
// write for the metrics collect sends, and how many of them the registry
// refused.
func oracleText(t *testing.T, descs []*prometheus.Desc, collect func(ch chan<- prometheus.Metric)) (string, int) {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(oracleCollector{descs, collect})
	mfs, err := reg.Gather()
	// One error comes alone, more as a MultiError.
	refused := 0
	var multi prometheus.MultiError
	switch {
	case errors.As(err, &multi):
		refused = len(multi)
	case err != nil:
		refused = 1
	}
	var b bytes.Buffer
	enc := expfmt.NewEncoder(&b, expfmt.FmtText)
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String(), refused
}

type oracleCollector struct {
	descs   []*prometheus.Desc
	collect func(ch chan<- prometheus.Metric)
}

func (c oracleCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

func (c oracleCollector) Collect(ch chan<- prometheus.Metric) { c.collect(ch) }

func constMetric(d *prometheus.Desc, vt prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, vt, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

func constHistogram(d *prometheus.Desc, count uint64, sum float64, buckets map[float64]uint64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstHistogram(d, count, sum, buckets, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// Strings that test the escaping and the ordering: quotes, backslashes,
// newlines (and their escaped spelling), non-ASCII, U+FFFD, bytes that
// are not UTF-8, the empty string.
var oracleStrings = []string{"", "a", "b", "_other", "deploy", `q"uote`, `back\slash`, "new\nline", `lit\n`, `\"`, "\\\n\"",
	"日本語", "\uFFFD", "bad\ufffd", "é", "e\u0301", "tab\tsp ace", "\x00nul", "{}=,", "bad\xff", "\xc3", "🔒"}

func oracleString(r *rand.Rand) string {
	var b strings.Builder
	for range 1 + r.IntN(3) {
		b.WriteString(oracleStrings[r.IntN(len(oracleStrings))])
	}
	return b.String()
}

// oracleFloat draws values that test the notation: both zeros, the
// switches to exponent notation, extremes, NaN and the infinities.
func oracleFloat(r *rand.Rand) float64 {
	pool := []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 0.001, 1e-4, 1e-5, 999999, 1e6, 1234567, 1e20, 1e21, 1e22,
		123456789012345678, math.MaxFloat64, -math.MaxFloat64, 5e-324, math.SmallestNonzeroFloat64 * 3, float64(math.MaxUint64),
		math.NaN(), math.Inf(1), math.Inf(-1), 1.0 / 3, 86400, 3601.123456789}
	switch r.IntN(3) {
	case 0:
		return pool[r.IntN(len(pool))]
	case 1:
		return r.NormFloat64() * math.Pow(10, float64(r.IntN(40)-20))
	default:
		return float64(r.IntN(100000)) / 1000
	}
}

func oracleUint(r *rand.Rand) uint64 {
	switch r.IntN(4) {
	case 0:
		return []uint64{0, 1, 999999, 1000000, 1 << 53, 1<<53 + 1, math.MaxUint64}[r.IntN(7)]
	case 1:
		return r.Uint64()
	default:
		return uint64(r.IntN(5000))
	}
}

func oracleBuckets(r *rand.Rand) map[float64]uint64 {
	m := map[float64]uint64{}
	for range r.IntN(40) {
		le := oracleFloat(r)
		if math.IsNaN(le) {
			continue
		}
		m[le] = oracleUint(r)
	}
	return m
}

// Random families (help with quotes, backslashes, newlines and non-ASCII;
// 0 to 3 labels) and random series, invalid ones among them (label values
// not UTF-8, label sets repeated): the exposition writes what client_golang
// writes, byte for byte, and refuses the same number of series.
func TestExpositionAsClientGolang(t *testing.T) {
	r := rand.New(rand.NewPCG(32, 4))
	labelNames := []string{"a", "b", "key", "name", "result", "x_1", "zone"} // sorted, as a family's are
	kinds := []string{kindGauge, kindCounter, kindHistogram}
	for round := range 400 {
		var fams []*family
		var descs []*prometheus.Desc
		for i := range 1 + r.IntN(5) {
			var labels []string
			for _, l := range labelNames {
				if r.IntN(4) == 0 {
					labels = append(labels, l)
				}
			}
			name := []string{"lockctl_", "a", "Z", "_", ":x_"}[r.IntN(5)] + string(rune('a'+r.IntN(26))) + "_" + string(rune('0'+i)) + "z"
			f := &family{name, oracleString(r), kinds[r.IntN(3)], labels}
			fams = append(fams, f)
			descs = append(descs, prometheus.NewDesc(f.name, f.help, f.labels, nil))
		}
		x := newExposition()
		var metrics []prometheus.Metric
		for range r.IntN(60) {
			i := r.IntN(len(fams))
			f, d := fams[i], descs[i]
			values := make([]string, len(f.labels))
			for j := range values {
				values[j] = oracleString(r)
			}
			switch f.kind {
			case kindGauge:
				v := oracleFloat(r)
				x.gauge(f, v, values...)
				metrics = append(metrics, constMetric(d, prometheus.GaugeValue, v, values...))
			case kindCounter:
				v := oracleUint(r)
				x.counter(f, v, values...)
				metrics = append(metrics, constMetric(d, prometheus.CounterValue, float64(v), values...))
			default:
				count, sum, buckets := oracleUint(r), oracleFloat(r), oracleBuckets(r)
				x.histogram(f, count, sum, buckets, values...)
				metrics = append(metrics, constHistogram(d, count, sum, buckets, values...))
			}
		}
		want, refused := oracleText(t, descs, func(ch chan<- prometheus.Metric) {
			for _, m := range metrics {
				ch <- m
			}
		})
		var got bytes.Buffer
		if err := x.writeTo(&got, nil); err != nil {
			t.Fatal(err)
		}
		if got.String() != want {
			t.Fatalf("round %d: differs from client_golang:\n%s", round, diffLines(got.String(), want))
		}
		if len(x.errs) != refused {
			t.Fatalf("round %d: %d series refused, client_golang refused %d: %v", round, len(x.errs), refused, x.errs)
		}
	}
}

// The exporter's metrics as it built them with client_golang (the
// descriptions and the collector it had, verbatim): for random scans and
// totals, /metrics is byte for byte what it served before.
func TestExporterAsClientGolang(t *testing.T) {
	var (
		descUp           = prometheus.NewDesc("lockctl_up", "1 when Redis answered the last PING (at start and before each scan) and, on a Cluster, the last scan reached every master.", nil, nil)
		descScanComplete = prometheus.NewDesc("lockctl_scan_complete", "1 when the last scan ended and read every key; 0 before the first scan ends and after a scan that failed or missed part of a Cluster (the scan gauges are then absent).", nil, nil)
		descHeld         = prometheus.NewDesc("lockctl_locks_held", "Held locks under the prefix (semaphore slots and shared holders count once per holder).", nil, nil)
		descLockHeld     = prometheus.NewDesc("lockctl_lock_held_seconds", "Age of the current holder (_other: the oldest).", []string{"name"}, nil)
		descLockTTL      = prometheus.NewDesc("lockctl_lock_ttl_seconds", "Remaining TTL (_other: the longest).", []string{"name"}, nil)
		descLockWaiters  = prometheus.NewDesc("lockctl_lock_waiters", "Waiters (FIFO queue and announced waiters).", []string{"name"}, nil)
		descLockRenewed  = prometheus.NewDesc("lockctl_lock_last_renewal_age_seconds", "Time since the holder last renewed its lease, server time; lockctl's own holders only (several holders, _other: the most overdue).", []string{"name"}, nil)
		descLockPeriod   = prometheus.NewDesc("lockctl_lock_renew_period_seconds", "Renewal period of the holder that lockctl_lock_last_renewal_age_seconds describes; absent for a lease renewed by hand.", []string{"name"}, nil)
		descOrphans      = prometheus.NewDesc("lockctl_orphans", "Lock-pattern keys with no TTL.", nil, nil)
		descWait         = prometheus.NewDesc("lockctl_acquire_wait_seconds", "Wait before acquiring (events).", []string{"name"}, nil)
		descHold         = prometheus.NewDesc("lockctl_hold_seconds", "Time between acquire and release (events).", []string{"name"}, nil)
		descAcq          = prometheus.NewDesc("lockctl_acquisitions_total", "Acquire outcomes.", []string{"name", "result"}, nil)
		descRel          = prometheus.NewDesc("lockctl_releases_total", "Release outcomes; not_owner is a stale release that lockctl refused.", []string{"name", "result"}, nil)
		descRenewFailed  = prometheus.NewDesc("lockctl_renewals_failed_total", "Renewals that failed.", []string{"name"}, nil)
		descLost         = prometheus.NewDesc("lockctl_leases_lost_total", "Leases lost while held (run exit 76).", []string{"name"}, nil)
		descForce        = prometheus.NewDesc("lockctl_force_releases_total", "Force-releases.", []string{"name"}, nil)
		descRateLimited  = prometheus.NewDesc("lockctl_rate_limited_total", "limit refusals.", []string{"key"}, nil)
		descScanDuration = prometheus.NewDesc("lockctl_scan_duration_seconds", "Duration of the last scan.", nil, nil)
		descChannels     = prometheus.NewDesc("lockctl_pubsub_channels", "lockctl release channels with at least one subscriber (PUBSUB CHANNELS).", nil, nil)
		descSubscribers  = prometheus.NewDesc("lockctl_pubsub_subscribers", "Subscriptions to lockctl release channels (PUBSUB NUMSUB): waiting processes.", nil, nil)
		descClients      = prometheus.NewDesc("lockctl_redis_connected_clients", "Clients connected to the Redis server (INFO clients).", nil, nil)
	)
	descs := []*prometheus.Desc{descUp, descHeld, descLockHeld, descLockTTL, descLockWaiters, descLockRenewed, descLockPeriod, descOrphans,
		descWait, descHold, descAcq, descRel, descRenewFailed, descLost, descForce, descRateLimited, descScanDuration,
		descScanComplete, descChannels, descSubscribers, descClients}
	collect := func(e *Exporter, ch chan<- prometheus.Metric) {
		e.mu.Lock()
		s := e.scan
		t := e.totals.clone()
		reachable := e.reachable && !e.partial
		e.mu.Unlock()
		gauge := func(d *prometheus.Desc, v float64, labels ...string) {
			ch <- constMetric(d, prometheus.GaugeValue, v, labels...)
		}
		counter := func(d *prometheus.Desc, v uint64, labels ...string) {
			ch <- constMetric(d, prometheus.CounterValue, float64(v), labels...)
		}
		bit := func(b bool) float64 {
			if b {
				return 1
			}
			return 0
		}
		gauge(descUp, bit(reachable))
		gauge(descScanComplete, bit(s.ok))
		gauge(descScanDuration, s.duration.Seconds())
		if s.ok {
			gauge(descHeld, float64(s.held))
			gauge(descOrphans, float64(s.orphans))
			for _, l := range s.locks {
				if l.heldKnown {
					gauge(descLockHeld, l.held, l.name)
				}
				if l.ttlKnown {
					gauge(descLockTTL, l.ttl, l.name)
				}
				gauge(descLockWaiters, l.waiters, l.name)
				if l.renewKnown {
					gauge(descLockRenewed, l.renewAge, l.name)
					if l.renewEvery > 0 {
						gauge(descLockPeriod, l.renewEvery, l.name)
					}
				}
			}
			if s.pubsub {
				gauge(descChannels, float64(s.channels))
				gauge(descSubscribers, float64(s.subscribers))
				gauge(descClients, float64(s.clients))
			}
		}
		names := make([]string, 0, len(t.Names))
		for n := range t.Names {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, name := range names {
			n := t.Names[name]
			ch <- constHistogram(descWait, n.Wait.Count, n.Wait.Sum, n.Wait.cumulative(waitBuckets), name)
			ch <- constHistogram(descHold, n.Hold.Count, n.Hold.Sum, n.Hold.cumulative(holdBuckets), name)
			counter(descAcq, n.Counts[events.Acquired], name, "acquired")
			counter(descAcq, n.Counts[events.Busy], name, "busy")
			counter(descAcq, n.Counts[events.Timeout], name, "timeout")
			counter(descRel, n.Counts[events.Released], name, "released")
			counter(descRel, n.Counts[events.NotHeld], name, "not_held")
			counter(descRel, n.Counts[events.NotOwner], name, "not_owner")
			counter(descRenewFailed, n.Counts[events.RenewFailed], name)
			counter(descLost, n.Counts[events.LeaseLost], name)
			counter(descForce, n.Counts[events.ForceRelease], name)
		}
		for key, v := range t.Keys {
			counter(descRateLimited, v, key)
		}
	}

	r := rand.New(rand.NewPCG(32, 5))
	kinds := []string{events.Acquired, events.Busy, events.Timeout, events.Released, events.NotHeld, events.NotOwner,
		events.RenewFailed, events.LeaseLost, events.ForceRelease}
	randomHistogram := func(bounds []float64) histogram {
		h := histogram{Sum: oracleFloat(r), Count: oracleUint(r)}
		// Stored totals may carry fewer or more counts than bounds.
		h.Counts = make([]uint64, []int{0, len(bounds) + 1, len(bounds) - 3, len(bounds) + 4}[r.IntN(4)])
		for i := range h.Counts {
			h.Counts[i] = uint64(r.IntN(1000))
			if r.IntN(20) == 0 {
				h.Counts[i] = oracleUint(r)
			}
		}
		return h
	}
	for round := range 300 {
		e := New(Config{})
		e.reachable, e.partial = r.IntN(4) > 0, r.IntN(4) == 0
		s := scanResult{ok: r.IntN(4) > 0, held: r.IntN(100000), orphans: r.IntN(3), duration: time.Duration(r.Int64N(int64(time.Minute))),
			pubsub: r.IntN(2) == 0, channels: r.Int64N(1000), subscribers: r.Int64N(10000), clients: r.Int64N(1 << 40)}
		for range r.IntN(20) {
			// Names repeat and may not be UTF-8 here, which Scan never
			// lets through: both refuse such series alike.
			s.locks = append(s.locks, lockGauge{name: oracleString(r), held: oracleFloat(r), ttl: oracleFloat(r), waiters: float64(r.IntN(50)),
				heldKnown: r.IntN(5) > 0, ttlKnown: r.IntN(5) > 0,
				renewAge: oracleFloat(r), renewEvery: float64(r.IntN(3)) * oracleFloat(r), renewKnown: r.IntN(4) > 0})
		}
		e.scan = s
		for range r.IntN(12) {
			n := e.totals.entry(labelValue(oracleString(r)))
			for _, k := range kinds {
				if r.IntN(3) > 0 {
					n.Counts[k] = oracleUint(r)
				}
			}
			n.Wait, n.Hold = randomHistogram(waitBuckets), randomHistogram(holdBuckets)
		}
		for range r.IntN(8) {
			e.totals.Keys[labelValue(oracleString(r))] = oracleUint(r)
		}
		want, refused := oracleText(t, descs, func(ch chan<- prometheus.Metric) { collect(e, ch) })
		x := e.collect()
		var got bytes.Buffer
		if err := x.writeTo(&got, nil); err != nil {
			t.Fatal(err)
		}
		if got.String() != want {
			t.Fatalf("round %d: differs from client_golang:\n%s", round, diffLines(got.String(), want))
		}
		if len(x.errs) != refused {
			t.Fatalf("round %d: %d series refused, client_golang refused %d: %v", round, len(x.errs), refused, x.errs)
		}
		if round == 0 && !strings.Contains(want, "lockctl_up ") {
			t.Fatalf("the oracle wrote nothing:\n%s", want)
		}
	}
}

// diffLines shows the first line where got and want differ, with context.
func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		if i >= len(g) || i >= len(w) || g[i] != w[i] {
			lo := max(0, i-3)
			return "got:\n" + strings.Join(g[lo:min(len(g), i+3)], "\n") + "\nwant:\n" + strings.Join(w[lo:min(len(w), i+3)], "\n")
		}
	}
	return "(equal)"
}
