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
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/prometheus/client_golang/prometheus"
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

	// work serialises the changes of totals (events counted, names
	// chosen by a scan) and their storing; mu guards what collect reads.
	work  sync.Mutex
	dirty bool // names chosen since the totals were last stored

	mu       sync.Mutex
	scan     scanResult
	totals   *Totals
	loaded   bool
	scanErr  error
	eventErr error
	// reachable: the last PING (at start and before each scan) was
	// answered; lockctl_up. A scan still running says nothing about it.
	reachable bool
	// partial: the last scan could not read every node of a Cluster
	// (inspect.ErrIncomplete): part of Redis is unreachable.
	partial bool
	// discarded counts the stored totals found unreadable and replaced.
	discarded uint64

	scanLog, eventLog trouble
}

type lockGauge struct {
	name      string
	held, ttl float64
	waiters   float64
	heldKnown bool
	ttlKnown  bool
	// The renewal record of the most overdue holder (renewal): how long
	// ago it renewed, and its period (0: renewed by hand); renewKnown is
	// false when no holder records one (foreign locks).
	renewAge, renewEvery float64
	renewKnown           bool
}

// renewal folds one holder's renewal record (age and period in seconds)
// into g, which keeps the most overdue holder's: the most periods since
// its last renewal, and among leases renewed by hand (no period), which
// count below any holder with one, the oldest renewal. Age and period
// stay one holder's, so that the alert comparing them compares a holder
// with itself.
func (g *lockGauge) renewal(age, every float64) {
	periods := func(age, every float64) float64 {
		if every > 0 {
			return age / every
		}
		return -1
	}
	if g.renewKnown {
		p, q := periods(age, every), periods(g.renewAge, g.renewEvery)
		if p < q || (p == q && age <= g.renewAge) {
			return
		}
	}
	g.renewAge, g.renewEvery, g.renewKnown = age, every, true
}

type scanResult struct {
	ok       bool
	held     int
	orphans  int
	duration time.Duration
	locks    []lockGauge
	// Pub/sub cost of the waiters: lockctl's release channels with a
	// subscriber, their subscriptions, and the server's clients (pubsub
	// is false when the server refused PUBSUB or INFO).
	pubsub                bool
	channels, subscribers int64
	clients               int64
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
	e.scanLog.what, e.eventLog.what = "scan", "events"
	e.reg.MustRegister(collector{e})
	return e
}

// Handler serves /metrics and /healthz.
func (e *Exporter) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.metricsHandler())
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
	// Events first: the names with series of their own are chosen in the
	// order their events happened, before a scan's order could.
	// Reachability first: lockctl_up says whether Redis answers, which
	// a first scan beside millions of keys takes seconds to tell.
	_ = e.ping(ctx)
	_ = e.ReadEvents(ctx) // its error is recorded and logged by ReadEvents
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
		_ = f(ctx) // Scan and ReadEvents record and log their errors; the next round retries
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// ping records whether Redis answers a PING (lockctl_up).
func (e *Exporter) ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
	err := e.cfg.Client.Ping(ctx).Err()
	e.mu.Lock()
	e.reachable = err == nil
	e.mu.Unlock()
	return err
}

// Scan refreshes the gauges.
func (e *Exporter) Scan(ctx context.Context) error {
	start := time.Now()
	if err := e.ping(ctx); err != nil {
		return e.scanDone(scanResult{duration: time.Since(start)}, err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.cfg.Timeout)
	defer cancel()
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
		if r := l.Renewal; r.Recorded {
			g.renewal(r.Age.Seconds(), r.Every.Seconds())
		}
		return nil
	})
	if err == nil {
		err = e.cfg.Inspector.Orphans(ctx, "", nil, func(inspect.Orphan) error { r.orphans++; return nil })
	}
	if err == nil {
		r.pubsub, r.channels, r.subscribers, r.clients = pubsubCost(ctx, e.cfg.Client)
	}
	r.duration = time.Since(start)
	if err == nil {
		err = e.chooseNames(ctx, byName, &r)
	}
	return e.scanDone(r, err)
}

// scanDone records a scan's end: its gauges when it read everything, else
// its error (the gauges are then left out: a short count reads as fewer
// locks, not as a scan that could not see).
func (e *Exporter) scanDone(r scanResult, err error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.scanErr = err
	e.partial = errors.Is(err, inspect.ErrIncomplete)
	if err != nil {
		e.scan.ok = false
		e.scan.duration = r.duration
		e.scanLog.fail(e.cfg.Logf, err)
		return err
	}
	e.scanLog.ok(e.cfg.Logf)
	r.ok = true
	e.scan = r
	return nil
}

// chooseNames folds the scanned locks into their label values: longest-held
// first, each name keeps or gets a series of its own while fewer than
// MaxNames have one (the choice stored with the totals), the others are
// summed under Other (the longest age, the longest TTL, the sum of waiters).
func (e *Exporter) chooseNames(ctx context.Context, byName map[string]*lockGauge, r *scanResult) error {
	var all []lockGauge
	for _, g := range byName {
		all = append(all, *g)
	}
	sort.Slice(all, func(i, j int) bool {
		a, b := all[i], all[j]
		if a.held != b.held {
			return a.held > b.held
		}
		return a.name < b.name
	})
	e.work.Lock()
	defer e.work.Unlock()
	t, err := e.load(ctx)
	if err != nil {
		return err
	}
	t = t.clone()
	folded := map[string]*lockGauge{}
	var order []string
	for _, g := range all {
		l, added := t.nameLabel(g.name, e.cfg.MaxNames)
		e.dirty = e.dirty || added
		f := folded[l]
		if f == nil {
			f = &lockGauge{name: l}
			folded[l] = f
			order = append(order, l)
		}
		if g.heldKnown && (!f.heldKnown || g.held > f.held) {
			f.held, f.heldKnown = g.held, true
		}
		if g.ttlKnown && (!f.ttlKnown || g.ttl > f.ttl) {
			f.ttl, f.ttlKnown = g.ttl, true
		}
		f.waiters += g.waiters
		if g.renewKnown {
			f.renewal(g.renewAge, g.renewEvery)
		}
	}
	for _, l := range order {
		r.locks = append(r.locks, *folded[l])
	}
	e.mu.Lock()
	e.totals = t
	e.mu.Unlock()
	return nil
}

// pubsubCost reads what the waiters cost the server in pub/sub: lockctl's
// release channels that have subscribers (PUBSUB CHANNELS), their
// subscriptions (PUBSUB NUMSUB) and the connected clients (INFO clients).
// ok is false when the server refuses any of it (an ACL without PUBSUB or
// INFO): the series are then left out, never a made-up 0.
func pubsubCost(ctx context.Context, c redis.UniversalClient) (ok bool, channels, subscribers, clients int64) {
	chans, err := c.PubSubChannels(ctx, lockwire.AuxPrefix+lockwire.KindChannel+":*").Result()
	if err != nil {
		return false, 0, 0, 0
	}
	channels = int64(len(chans))
	for i := 0; i < len(chans); i += 500 {
		n, err := c.PubSubNumSub(ctx, chans[i:min(i+500, len(chans))]...).Result()
		if err != nil {
			return false, 0, 0, 0
		}
		for _, v := range n {
			subscribers += v
		}
	}
	info, err := c.Info(ctx, "clients").Result()
	if err != nil {
		return false, 0, 0, 0
	}
	for _, line := range strings.Split(info, "\n") {
		if v, found := strings.CutPrefix(strings.TrimSpace(line), "connected_clients:"); found {
			clients, _ = strconv.ParseInt(v, 10, 64)
			return true, channels, subscribers, clients
		}
	}
	return false, 0, 0, 0
}

// load returns the totals, reading the stored ones first, once. The caller
// holds e.work.
func (e *Exporter) load(ctx context.Context) (*Totals, error) {
	e.mu.Lock()
	loaded, t := e.loaded, e.totals
	e.mu.Unlock()
	if loaded {
		return t, nil
	}
	raw, err := e.cfg.Client.Get(ctx, e.cfg.StateKey).Bytes()
	var bad error
	switch {
	case errors.Is(err, redis.Nil):
		t = newTotals()
	case redisreply.IsData(err):
		bad = err
	case err != nil:
		return nil, err
	default:
		t = newTotals()
		if bad = json.Unmarshal(raw, t); bad == nil {
			t.migrate()
			bad = t.check()
		}
	}
	discarded := uint64(0)
	if bad != nil {
		// Stopping at a state that cannot be read would leave every
		// series to a key deleted by hand: start afresh instead (as a
		// first start does, from what the stream holds; Prometheus takes
		// the counters' fall as a reset), and overwrite it.
		e.cfg.Logf("events: the stored totals in %s cannot be read (%v); starting afresh from the stream %s and overwriting them: the counters restart", e.cfg.StateKey, bad, e.cfg.EventsKey)
		t, discarded = newTotals(), 1
	}
	e.mu.Lock()
	e.totals, e.loaded = t, true
	e.discarded += discarded
	e.mu.Unlock()
	e.dirty = true
	return t, nil
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
		e.eventLog.fail(e.cfg.Logf, err)
	} else {
		e.eventLog.ok(e.cfg.Logf)
	}
	return err
}

func (e *Exporter) readEvents(ctx context.Context) error {
	c := e.cfg.Client
	e.work.Lock()
	defer e.work.Unlock()
	t, err := e.load(ctx)
	if err != nil {
		return err
	}
	t = t.clone()
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
	changed := e.dirty
	for {
		start := "-"
		if t.LastID != "" {
			start = "(" + t.LastID
		}
		batch, err := c.XRangeN(ctx, e.cfg.EventsKey, start, "+", 1000).Result()
		if err != nil {
			return err
		}
		if len(batch) == 0 {
			break
		}
		for _, m := range batch {
			if en, err := events.Parse(m); err == nil {
				t.add(en, e.cfg.MaxNames)
			} else {
				// Written by another client, or by hand: it must not
				// move a series (a NaN duration would make a histogram's
				// sum negative for good), but it is seen.
				t.Malformed++
			}
		}
		t.LastID = batch[len(batch)-1].ID
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
		e.dirty = false
	}
	e.mu.Lock()
	e.totals = t
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
	_, _ = fmt.Sscanf(id, "%d-%d", &ms, &seq) // a malformed ID keeps what parsed, zeros otherwise
	return
}

// trouble logs a failing loop without flooding the log: the first failure
// at once, then again while it lasts at a doubling interval (1m, 2m, 4m,
// ... 1h), and the recovery once.
type trouble struct {
	what    string
	failing bool
	since   time.Time
	next    time.Time
	every   time.Duration
	count   int
}

func (tr *trouble) fail(logf func(string, ...any), err error) {
	now := time.Now()
	tr.count++
	switch {
	case !tr.failing:
		tr.failing, tr.since, tr.every, tr.count = true, now, time.Minute, 1
		tr.next = now.Add(tr.every)
		logf("%s: %v (retrying; logged again at a backing-off interval until it recovers)", tr.what, err)
	case !now.Before(tr.next):
		logf("%s: still failing after %s (%d attempts): %v", tr.what, now.Sub(tr.since).Round(time.Second), tr.count, err)
		tr.every = min(2*tr.every, time.Hour)
		tr.next = now.Add(tr.every)
	}
}

func (tr *trouble) ok(logf func(string, ...any)) {
	if tr.failing {
		logf("%s: recovered after %s (%d failed attempts)", tr.what, time.Since(tr.since).Round(time.Second), tr.count)
		tr.failing = false
	}
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
