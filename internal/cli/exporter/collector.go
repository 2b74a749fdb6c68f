package exporter

import (
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/lockctl/lockctl/pkg/events"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// The series the exporter serves (the contract's, and the few added since).
// Each scrape turns the latest scan and totals into const metrics; nothing
// else is registered (no Go runtime or process collectors).
var (
	descUp           = prometheus.NewDesc("lockctl_up", "1 when Redis answered the last PING (at start and before each scan) and, on a Cluster, the last scan reached every master.", nil, nil)
	descScanComplete = prometheus.NewDesc("lockctl_scan_complete", "1 when the last scan ended and read every key; 0 before the first scan ends and after a scan that failed or missed part of a Cluster (the scan gauges are then absent).", nil, nil)
	descHeld         = prometheus.NewDesc("lockctl_locks_held", "Held locks under the prefix (semaphore slots and shared holders count once per holder).", nil, nil)
	descOrphans      = prometheus.NewDesc("lockctl_orphans", "Lock-pattern keys with no TTL.", nil, nil)
	descScanDuration = prometheus.NewDesc("lockctl_scan_duration_seconds", "Duration of the last scan.", nil, nil)
	descChannels     = prometheus.NewDesc("lockctl_pubsub_channels", "lockctl release channels with at least one subscriber (PUBSUB CHANNELS).", nil, nil)
	descSubscribers  = prometheus.NewDesc("lockctl_pubsub_subscribers", "Subscriptions to lockctl release channels (PUBSUB NUMSUB): waiting processes.", nil, nil)
	descClients      = prometheus.NewDesc("lockctl_redis_connected_clients", "Clients connected to the Redis server (INFO clients).", nil, nil)
	descWait         = prometheus.NewDesc("lockctl_acquire_wait_seconds", "Wait before acquiring (events).", []string{"name"}, nil)
	descHold         = prometheus.NewDesc("lockctl_hold_seconds", "Time between acquire and release (events).", []string{"name"}, nil)
	descAcq          = prometheus.NewDesc("lockctl_acquisitions_total", "Acquire outcomes.", []string{"name", "result"}, nil)
	descRel          = prometheus.NewDesc("lockctl_releases_total", "Release outcomes; not_owner is a stale release that lockctl refused.", []string{"name", "result"}, nil)
	descRenewFailed  = prometheus.NewDesc("lockctl_renewals_failed_total", "Renewals that failed.", []string{"name"}, nil)
	descLost         = prometheus.NewDesc("lockctl_leases_lost_total", "Leases lost while held (run exit 76).", []string{"name"}, nil)
	descForce        = prometheus.NewDesc("lockctl_force_releases_total", "Force-releases.", []string{"name"}, nil)
	descRateLimited  = prometheus.NewDesc("lockctl_rate_limited_total", "limit refusals.", []string{"key"}, nil)
	descMalformed    = prometheus.NewDesc("lockctl_events_malformed_total", "Entries of the event stream skipped as malformed: no kind, a bad ID, a duration that is negative, not a finite number or too long.", nil, nil)
	descDiscarded    = prometheus.NewDesc("lockctl_exporter_state_discarded_total", "Times this exporter found its stored totals unreadable and started afresh from the event stream.", nil, nil)
)

// lockGauges are the per-name gauges of a scan, one entry each: the value
// of a lock's series, and whether it has one (a value not known is left
// out, never a made-up 0).
var lockGauges = []struct {
	desc  *prometheus.Desc
	value func(l *lockGauge) (float64, bool)
}{
	{prometheus.NewDesc("lockctl_lock_held_seconds", "Age of the current holder (_other: the oldest).", []string{"name"}, nil),
		func(l *lockGauge) (float64, bool) { return l.held, l.heldKnown }},
	{prometheus.NewDesc("lockctl_lock_ttl_seconds", "Remaining TTL (_other: the longest).", []string{"name"}, nil),
		func(l *lockGauge) (float64, bool) { return l.ttl, l.ttlKnown }},
	{prometheus.NewDesc("lockctl_lock_waiters", "Waiters (FIFO queue and announced waiters).", []string{"name"}, nil),
		func(l *lockGauge) (float64, bool) { return l.waiters, true }},
	{prometheus.NewDesc("lockctl_lock_last_renewal_age_seconds", "Time since the holder last renewed its lease, server time; lockctl's own holders only (several holders, _other: the most overdue).", []string{"name"}, nil),
		func(l *lockGauge) (float64, bool) { return l.renewAge, l.renewKnown }},
	{prometheus.NewDesc("lockctl_lock_renew_period_seconds", "Renewal period of the holder that lockctl_lock_last_renewal_age_seconds describes; absent for a lease renewed by hand.", []string{"name"}, nil),
		func(l *lockGauge) (float64, bool) { return l.renewEvery, l.renewKnown && l.renewEvery > 0 }},
}

// nameCounters are the per-name counters of the events: the event kind
// each counts, and the result label when its family has one.
var nameCounters = []struct {
	desc   *prometheus.Desc
	kind   string
	result string
}{
	{descAcq, events.Acquired, "acquired"},
	{descAcq, events.Busy, "busy"},
	{descAcq, events.Timeout, "timeout"},
	{descRel, events.Released, "released"},
	{descRel, events.NotHeld, "not_held"},
	{descRel, events.NotOwner, "not_owner"},
	{descRenewFailed, events.RenewFailed, ""},
	{descLost, events.LeaseLost, ""},
	{descForce, events.ForceRelease, ""},
}

// collector is the exporter's one prometheus.Collector.
type collector struct{ e *Exporter }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descScanComplete, descHeld, descOrphans, descScanDuration,
		descChannels, descSubscribers, descClients, descWait, descHold, descAcq, descRel, descRenewFailed,
		descLost, descForce, descRateLimited, descMalformed, descDiscarded} {
		ch <- d
	}
	for _, g := range lockGauges {
		ch <- g.desc
	}
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	e := c.e
	e.mu.Lock()
	s := e.scan
	t := e.totals.clone()
	reachable := e.reachable && !e.partial
	discarded := e.discarded
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
		// Without a scan there is nothing to say: absent beats a
		// misleading 0 held, 0 orphans.
		gauge(descHeld, float64(s.held))
		gauge(descOrphans, float64(s.orphans))
		for i := range s.locks {
			for _, g := range lockGauges {
				if v, ok := g.value(&s.locks[i]); ok {
					gauge(g.desc, v, s.locks[i].name)
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
		ch <- constHistogram(descWait, &n.Wait, waitBuckets, name)
		ch <- constHistogram(descHold, &n.Hold, holdBuckets, name)
		for _, nc := range nameCounters {
			if nc.result != "" {
				counter(nc.desc, n.Counts[nc.kind], name, nc.result)
			} else {
				counter(nc.desc, n.Counts[nc.kind], name)
			}
		}
	}
	for key, v := range t.Keys {
		counter(descRateLimited, v, key)
	}
	counter(descMalformed, t.Malformed)
	counter(descDiscarded, discarded)
}

// constMetric never panics: a metric that cannot be built (a label value
// that is not UTF-8, say) is reported as invalid, which the handler logs
// and leaves out, keeping every other series of the scrape.
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

// metricsHandler serves the registry. A series that cannot be encoded
// drops itself, never the others: a scrape that fails whole silences every
// alert. The error goes to the log, never to the client.
func (e *Exporter) metricsHandler() http.Handler {
	return promhttp.HandlerFor(e.reg, promhttp.HandlerOpts{
		ErrorHandling: promhttp.ContinueOnError,
		ErrorLog:      logFunc(e.cfg.Logf),
	})
}

// logFunc adapts Logf to promhttp's error log: one line per error, the
// errors of a MultiError (every series a scrape left out) each on its own.
type logFunc func(format string, args ...any)

func (f logFunc) Println(v ...any) {
	for i, a := range v {
		var multi prometheus.MultiError
		if err, ok := a.(error); ok && errors.As(err, &multi) {
			prefix := strings.TrimSuffix(fmt.Sprintln(v[:i]...), "\n")
			for _, err := range multi {
				f("metrics: %s %v", prefix, err)
			}
			return
		}
	}
	f("metrics: %s", strings.TrimSuffix(fmt.Sprintln(v...), "\n"))
}
