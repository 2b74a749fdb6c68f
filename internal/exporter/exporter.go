// Package exporter is `lockctl exporter`: Prometheus series for the locks
// under a prefix. Gauges come from a SCAN (pkg/inspect) at most every scan
// interval; counters and histograms from the event stream (pkg/events),
// read incrementally from the last ID counted. The totals and that ID are
// stored in Redis after every batch (one key, written whole), so a
// restarted exporter resumes where it stopped instead of counting the
// capped stream again.
package exporter

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// Config configures an Exporter.
type Config struct {
	Client    redis.UniversalClient
	Inspector *inspect.Inspector
	// EventsKey is the event stream; "" is events.DefaultKey. StateKey
	// holds the totals; "" is EventsKey + ":exporter".
	EventsKey, StateKey string
	ScanInterval        time.Duration // 0 is 15s
	EventInterval       time.Duration // how often the stream is read; 0 is 1s
	MaxNames            int           // per-lock series for at most this many names; 0 is none
	Timeout             time.Duration // bound on one scan and one read; 0 is 10s
	// Logf reports trouble (Redis unreachable, a stream trimmed past the
	// last ID read); nil discards.
	Logf func(format string, args ...any)
}

// Exporter collects and serves the series.
type Exporter struct {
	cfg Config
	reg *prometheus.Registry

	mu       sync.Mutex
	scan     scanResult
	totals   *Totals
	loaded   bool
	scanErr  error
	eventErr error
}

type lockGauge struct {
	name      string
	held, ttl float64
	waiters   float64
	heldKnown bool
	ttlKnown  bool
}

type scanResult struct {
	ok       bool
	held     int
	orphans  int
	duration time.Duration
	locks    []lockGauge
}

// New returns an Exporter; Run starts its collection.
func New(cfg Config) *Exporter {
	if cfg.EventsKey == "" {
		cfg.EventsKey = events.DefaultKey
	}
	if cfg.StateKey == "" {
		cfg.StateKey = cfg.EventsKey + ":exporter"
	}
	if cfg.ScanInterval <= 0 {
		cfg.ScanInterval = 15 * time.Second
	}
	if cfg.EventInterval <= 0 {
		cfg.EventInterval = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 10 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	e := &Exporter{cfg: cfg, reg: prometheus.NewRegistry(), totals: newTotals()}
	e.reg.MustRegister(collector{e})
	return e
}

// Handler serves /metrics and /healthz.
func (e *Exporter) Handler() http.Handler {
	mux := http.NewServeMux()
	// A series that cannot be encoded drops itself, never the others: a
	// scrape that fails whole silences every alert. The error goes to the
	// log, never to the client.
	mux.Handle("/metrics", promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      logFunc(e.cfg.Logf),
	}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		e.mu.Lock()
		ok, err := e.scan.ok, e.scanErr
		e.mu.Unlock()
		if !ok {
			msg := "no scan has completed yet"
			if err != nil {
				msg = "redis unreachable: " + err.Error()
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

// Run scans and reads events until ctx ends.
func (e *Exporter) Run(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); e.every(ctx, e.cfg.ScanInterval, e.Scan) }()
	go func() { defer wg.Done(); e.every(ctx, e.cfg.EventInterval, e.ReadEvents) }()
	wg.Wait()
}

func (e *Exporter) every(ctx context.Context, d time.Duration, f func(context.Context) error) {
	t := time.NewTicker(d)
	defer t.Stop()
	for {
		f(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Scan refreshes the gauges.
func (e *Exporter) Scan(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	start := time.Now()
	var r scanResult
	byName := map[string]*lockGauge{}
	err := e.cfg.Inspector.Locks(ctx, "", nil, func(l inspect.Lock) error {
		r.held++
		name := labelValue(l.Name)
		g := byName[name]
		if g == nil {
			g = &lockGauge{name: name}
			byName[name] = g
		}
		// A semaphore, or a lock held shared, yields one Lock per
		// holder: its gauges are the longest-held holder's age and the
		// longest remaining TTL.
		if l.Age >= 0 && (!g.heldKnown || l.Age.Seconds() > g.held) {
			g.held, g.heldKnown = l.Age.Seconds(), true
		}
		if l.TTL >= 0 && (!g.ttlKnown || l.TTL.Seconds() > g.ttl) {
			g.ttl, g.ttlKnown = l.TTL.Seconds(), true
		}
		g.waiters = max(g.waiters, float64(l.Waiters()))
		return nil
	})
	if err == nil {
		err = e.cfg.Inspector.Orphans(ctx, "", nil, func(inspect.Orphan) error { r.orphans++; return nil })
	}
	r.duration = time.Since(start)
	e.mu.Lock()
	defer e.mu.Unlock()
	e.scanErr = err
	if err != nil {
		e.scan.ok = false
		e.scan.duration = r.duration
		e.cfg.Logf("scan: %v", err)
		return err
	}
	for _, g := range byName {
		r.locks = append(r.locks, *g)
	}
	// Longest-held first, so --max-names keeps the ones worth a look; then
	// by name, for a stable choice.
	sort.Slice(r.locks, func(i, j int) bool {
		a, b := r.locks[i], r.locks[j]
		if a.held != b.held {
			return a.held > b.held
		}
		return a.name < b.name
	})
	if len(r.locks) > e.cfg.MaxNames {
		r.locks = r.locks[:e.cfg.MaxNames]
	}
	r.ok = true
	e.scan = r
	return nil
}

// ReadEvents counts the entries written since the last call (loading the
// stored totals first, once) and stores the new totals.
func (e *Exporter) ReadEvents(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	err := e.readEvents(ctx)
	e.mu.Lock()
	e.eventErr = err
	e.mu.Unlock()
	if err != nil {
		e.cfg.Logf("events: %v", err)
	}
	return err
}

func (e *Exporter) readEvents(ctx context.Context) error {
	c := e.cfg.Client
	e.mu.Lock()
	loaded := e.loaded
	t := e.totals.clone()
	e.mu.Unlock()
	if !loaded {
		raw, err := c.Get(ctx, e.cfg.StateKey).Bytes()
		switch {
		case errors.Is(err, redis.Nil):
		case err != nil:
			return err
		default:
			stored := newTotals()
			if err := json.Unmarshal(raw, stored); err != nil {
				return fmt.Errorf("%s: %v", e.cfg.StateKey, err)
			}
			if stored.Counts == nil {
				stored.Counts = map[string]uint64{}
			}
			t = stored
		}
	}
	if t.LastID != "" {
		first, err := events.First(ctx, c, e.cfg.EventsKey)
		if err != nil {
			return err
		}
		if first != "" && idLess(t.LastID, first) {
			// The cap trimmed the last entry counted, and perhaps entries
			// after it that were never read (XADD MAXLEN ~ trims whole
			// nodes, so it cannot be told which).
			t.Missed++
			e.cfg.Logf("events: the stream %s was trimmed past the last entry counted (%s); events may have been missed: run the exporter continuously or raise the cap", e.cfg.EventsKey, t.LastID)
		}
	}
	changed := !loaded
	for {
		batch, last, err := events.Read(ctx, c, e.cfg.EventsKey, t.LastID, 1000)
		if err != nil {
			return err
		}
		if last == t.LastID {
			break
		}
		for _, en := range batch {
			t.add(en)
		}
		t.LastID = last
		changed = true
		if len(batch) < 1000 {
			break
		}
	}
	if changed {
		raw, err := json.Marshal(t)
		if err != nil {
			return err
		}
		if err := c.Set(ctx, e.cfg.StateKey, raw, 0).Err(); err != nil {
			return err
		}
	}
	e.mu.Lock()
	e.totals, e.loaded = t, true
	e.mu.Unlock()
	return nil
}

// idLess compares stream IDs (ms-seq).
func idLess(a, b string) bool {
	am, as := splitID(a)
	bm, bs := splitID(b)
	return am < bm || (am == bm && as < bs)
}

func splitID(id string) (ms, seq uint64) {
	fmt.Sscanf(id, "%d-%d", &ms, &seq)
	return
}

// collector turns the latest scan and totals into const metrics.
type collector struct{ e *Exporter }

var (
	descUp           = prometheus.NewDesc("lockctl_up", "1 when the last scan reached Redis.", nil, nil)
	descHeld         = prometheus.NewDesc("lockctl_locks_held", "Held locks under the prefix (semaphore slots and shared holders count once per holder).", nil, nil)
	descLockHeld     = prometheus.NewDesc("lockctl_lock_held_seconds", "Age of the current holder.", []string{"name"}, nil)
	descLockTTL      = prometheus.NewDesc("lockctl_lock_ttl_seconds", "Remaining TTL.", []string{"name"}, nil)
	descLockWaiters  = prometheus.NewDesc("lockctl_lock_waiters", "Waiters (FIFO queue and announced waiters).", []string{"name"}, nil)
	descOrphans      = prometheus.NewDesc("lockctl_orphans", "Lock-pattern keys with no TTL.", nil, nil)
	descWait         = prometheus.NewDesc("lockctl_acquire_wait_seconds", "Wait before acquiring (events).", nil, nil)
	descHold         = prometheus.NewDesc("lockctl_hold_seconds", "Time between acquire and release (events).", nil, nil)
	descAcq          = prometheus.NewDesc("lockctl_acquisitions_total", "Acquire outcomes.", []string{"result"}, nil)
	descRel          = prometheus.NewDesc("lockctl_releases_total", "Release outcomes; not_owner is a stale release that lockctl refused.", []string{"result"}, nil)
	descRenewFailed  = prometheus.NewDesc("lockctl_renewals_failed_total", "Renewals that failed.", nil, nil)
	descLost         = prometheus.NewDesc("lockctl_leases_lost_total", "Leases lost while held (run exit 76).", nil, nil)
	descForce        = prometheus.NewDesc("lockctl_force_releases_total", "Force-releases.", nil, nil)
	descRateLimited  = prometheus.NewDesc("lockctl_rate_limited_total", "limit refusals.", nil, nil)
	descScanDuration = prometheus.NewDesc("lockctl_scan_duration_seconds", "Duration of the last scan.", nil, nil)
)

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descHeld, descLockHeld, descLockTTL, descLockWaiters, descOrphans,
		descWait, descHold, descAcq, descRel, descRenewFailed, descLost, descForce, descRateLimited, descScanDuration} {
		ch <- d
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	e.mu.Lock()
	s := e.scan
	t := e.totals.clone()
	e.mu.Unlock()
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- constMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, kind string, labels ...string) {
		ch <- constMetric(d, prometheus.CounterValue, float64(t.Counts[kind]), labels...)
	}
	up := 0.0
	if s.ok {
		up = 1
	}
	gauge(descUp, up)
	gauge(descScanDuration, s.duration.Seconds())
	if s.ok {
		// Without a scan there is nothing to say: absent beats a
		// misleading 0 held, 0 orphans.
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
		}
	}
	ch <- constHistogram(descWait, &t.Wait, waitBuckets)
	ch <- constHistogram(descHold, &t.Hold, holdBuckets)
	counter(descAcq, events.Acquired, "acquired")
	counter(descAcq, events.Busy, "busy")
	counter(descAcq, events.Timeout, "timeout")
	counter(descRel, events.Released, "released")
	counter(descRel, events.NotHeld, "not_held")
	counter(descRel, events.NotOwner, "not_owner")
	counter(descRenewFailed, events.RenewFailed)
	counter(descLost, events.LeaseLost)
	counter(descForce, events.ForceRelease)
	counter(descRateLimited, events.RateLimited)
}

// labelValue makes a name read from Redis (written by lockctl or by any
// other client) a valid label value: bytes that are not UTF-8 become
// U+FFFD. Callers merge the names that then coincide.
func labelValue(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return strings.ToValidUTF8(s, "\uFFFD")
}

// constMetric never panics: a metric that cannot be built is reported as
// invalid, which the handler logs and leaves out, keeping every other
// series of the scrape.
func constMetric(d *prometheus.Desc, t prometheus.ValueType, v float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstMetric(d, t, v, labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

func constHistogram(d *prometheus.Desc, h *histogram, bounds []float64, labels ...string) prometheus.Metric {
	m, err := prometheus.NewConstHistogram(d, h.Count, h.Sum, h.cumulative(bounds), labels...)
	if err != nil {
		return prometheus.NewInvalidMetric(d, err)
	}
	return m
}

// logFunc adapts Logf to promhttp's error log.
type logFunc func(format string, args ...any)

func (f logFunc) Println(v ...any) { f("metrics: %s", strings.TrimSuffix(fmt.Sprintln(v...), "\n")) }
