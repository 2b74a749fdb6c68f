// Package events records what lock operations ended in (acquired, busy,
// released, refused, lost, ...) as compact entries of a capped Redis
// stream, for monitoring: `lockctl exporter` turns them into counters and
// histograms, `lockctl top` into sparklines.
//
// Recording is opt-in for library users (a Recorder as pkg/lock's
// Options.Events records every Acquire, release and watchdog renewal of
// that Locker) and never changes an operation's outcome: a Recorder
// queues events and writes them in the background, bounds each write by a
// short timeout, swallows its errors and counts them. The write is separate from the operation's own command (a
// pipelined XADD after it, or, for a release on one server, an XADD in
// the release's script that only a release that happened makes), so an event can be missing (the write failed,
// or the process died before Close) but never invents an operation.
package events

import (
	"context"
	"errors"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultKey is the stream's key: outside the default lock prefix (lock:),
// so listing locks never shows it.
const DefaultKey = "lockctl:events"

// DefaultMaxLen caps the stream (approximately: XADD MAXLEN ~).
const DefaultMaxLen = 100000

// DefaultTimeout bounds one write.
const DefaultTimeout = 250 * time.Millisecond

// Kinds of event. Acquired carries the wait, Released the hold time.
const (
	Acquired     = "acquired"      // a lock or slot was acquired (Duration: the wait)
	Busy         = "busy"          // not acquired: held elsewhere, no waiting (-n)
	Timeout      = "timeout"       // not acquired: the wait deadline passed (-w D)
	Released     = "released"      // released by its holder (Duration: the hold time, 0 when unknown)
	NotHeld      = "not_held"      // release refused: nothing held (expired, or never taken)
	NotOwner     = "not_owner"     // release refused: another token holds it (a stale release)
	RenewFailed  = "renew_failed"  // a renewal failed
	LeaseLost    = "lease_lost"    // a lease was lost while held
	ForceRelease = "force_release" // released by `inspect force-release`
	RateLimited  = "rate_limited"  // a `limit` call was refused
	OnceReplayed = "once_replayed" // `once` replayed a recorded outcome instead of running
	OnceResolved = "once_resolved" // `once resolve` settled a key whose outcome was unknown
)

// Kinds lists every kind, in a fixed order.
var Kinds = []string{Acquired, Busy, Timeout, Released, NotHeld, NotOwner, RenewFailed, LeaseLost, ForceRelease, RateLimited, OnceReplayed, OnceResolved}

// Event is one ended operation.
type Event struct {
	Kind     string
	Name     string        // the lock NAME (or the limit / once KEY)
	Duration time.Duration // wait (Acquired) or hold (Released); 0 otherwise or unknown
}

// Options configure a Recorder. A nil *Options means all defaults.
type Options struct {
	Key     string        // stream key; "" is DefaultKey
	MaxLen  int64         // approximate cap; 0 is DefaultMaxLen
	Timeout time.Duration // bound on one batch of writes (and on Close); 0 is DefaultTimeout
	// Buffer bounds the events waiting to be written; past it, Record
	// drops (and counts) events rather than grow or block. 0 is 10000.
	Buffer int
	// Delay is how long the writer waits after the first queued event
	// before sending, to batch; 0 is 5ms. Close sends at once.
	Delay time.Duration
}

// Recorder writes events to the stream in the background: Record only
// queues, a goroutine sends what is queued as one pipeline (one round trip
// for however many events piled up meanwhile), and Close flushes. A nil
// *Recorder records nothing, so callers need not check whether recording
// is on.
type Recorder struct {
	c       redis.Cmdable
	key     string
	maxLen  int64
	timeout time.Duration
	limit   int
	delay   time.Duration

	mu      sync.Mutex
	pending []Event
	closed  bool
	once    sync.Once
	kick    chan struct{}
	stop    chan struct{}
	stopped chan struct{}
	flushMu sync.Mutex

	written atomic.Int64
	failed  atomic.Int64
}

// NewRecorder returns a Recorder writing through c. opts may be nil. Close
// it to write what is still queued.
func NewRecorder(c redis.Cmdable, opts *Options) *Recorder {
	if opts == nil {
		opts = &Options{}
	}
	r := &Recorder{c: c, key: opts.Key, maxLen: opts.MaxLen, timeout: opts.Timeout, limit: opts.Buffer,
		kick: make(chan struct{}, 1), stop: make(chan struct{}), stopped: make(chan struct{})}
	if r.key == "" {
		r.key = DefaultKey
	}
	if r.maxLen <= 0 {
		r.maxLen = DefaultMaxLen
	}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
	}
	if r.limit <= 0 {
		r.limit = 10000
	}
	r.delay = opts.Delay
	if r.delay <= 0 {
		r.delay = 5 * time.Millisecond
	}
	return r
}

// Key is the stream's key.
func (r *Recorder) Key() string {
	if r == nil {
		return DefaultKey
	}
	return r.key
}

// Record queues e and returns at once; it never blocks on Redis and never
// fails. ctx is unused but kept for the shape of every other call: an
// event outlives the cancellation of the operation it records.
func (r *Recorder) Record(_ context.Context, e Event) {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.closed || len(r.pending) >= r.limit {
		r.mu.Unlock()
		r.failed.Add(1)
		return
	}
	r.pending = append(r.pending, e)
	r.mu.Unlock()
	r.once.Do(func() { go r.loop() })
	select {
	case r.kick <- struct{}{}:
	default:
	}
}

func (r *Recorder) loop() {
	defer close(r.stopped)
	for {
		select {
		case <-r.kick:
			// Let a few more events pile up: one round trip then carries
			// them all, instead of one per operation competing with the
			// operations themselves.
			select {
			case <-time.After(r.delay):
			case <-r.stop:
			}
			r.Flush()
		case <-r.stop:
			return
		}
	}
}

// Flush writes every queued event now, within the Recorder's timeout.
func (r *Recorder) Flush() {
	if r == nil {
		return
	}
	r.flushMu.Lock()
	defer r.flushMu.Unlock()
	r.mu.Lock()
	batch := r.pending
	r.pending = nil
	r.mu.Unlock()
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), r.timeout)
	defer cancel()
	p := r.c.Pipeline()
	for _, e := range batch {
		p.XAdd(ctx, &redis.XAddArgs{Stream: r.key, MaxLen: r.maxLen, Approx: true, Values: fields(e)})
	}
	cmds, err := p.Exec(ctx)
	if len(cmds) == 0 && err != nil {
		r.failed.Add(int64(len(batch)))
		return
	}
	for _, c := range cmds {
		if c.Err() != nil {
			r.failed.Add(1)
		} else {
			r.written.Add(1)
		}
	}
}

// Close writes what is queued (within the timeout) and stops the
// background writer; later events are dropped.
func (r *Recorder) Close() {
	if r == nil {
		return
	}
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return
	}
	r.closed = true
	r.mu.Unlock()
	started := false
	r.once.Do(func() { close(r.stopped) })
	select {
	case <-r.stopped:
	default:
		started = true
	}
	if started {
		close(r.stop)
		<-r.stopped
	}
	r.Flush()
}

// Written counts the events written.
func (r *Recorder) Written() int64 {
	if r == nil {
		return 0
	}
	return r.written.Load()
}

// Failed counts the events dropped: writes that failed or timed out, and
// events queued past the buffer or after Close.
func (r *Recorder) Failed() int64 {
	if r == nil {
		return 0
	}
	return r.failed.Load()
}

func fields(e Event) []any {
	f := Fields(e)
	v := make([]any, len(f))
	for i, x := range f {
		v[i] = x
	}
	return v
}

// Reader is what reading the stream needs of a client.
type Reader interface {
	XRangeN(ctx context.Context, key, start, stop string, count int64) *redis.XMessageSliceCmd
	XRevRangeN(ctx context.Context, key, start, stop string, count int64) *redis.XMessageSliceCmd
}

// Entry is an event read back from the stream.
type Entry struct {
	ID   string
	Time time.Time // from the entry's ID: the server's clock when it was written
	Event
}

// ErrMalformed is the error of a stream entry that is not an event of this
// package.
var ErrMalformed = errors.New("events: malformed entry")

// Parse turns a stream message into an Entry.
func Parse(m redis.XMessage) (Entry, error) {
	e := Entry{ID: m.ID}
	ms, _, ok := strings.Cut(m.ID, "-")
	t, err := strconv.ParseInt(ms, 10, 64)
	if !ok || err != nil {
		return e, ErrMalformed
	}
	e.Time = time.UnixMilli(t)
	e.Kind, _ = m.Values["k"].(string)
	e.Name, _ = m.Values["n"].(string)
	if e.Kind == "" {
		return e, ErrMalformed
	}
	if s, ok := m.Values["ms"].(string); ok {
		f, err := strconv.ParseFloat(s, 64)
		// NaN, Inf and durations past what a time.Duration holds would
		// convert to about -292 years: refused with the negative ones.
		d := f * float64(time.Millisecond)
		if err != nil || !(d >= 0 && d < math.MaxInt64) {
			return e, ErrMalformed
		}
		e.Duration = time.Duration(d)
	}
	return e, nil
}

// Read returns up to count entries of the stream at key written after the
// entry with ID after ("" or "0" for the beginning), oldest first, skipping
// malformed ones; last is the ID to pass next time (after itself when
// nothing new was read). It never blocks.
func Read(ctx context.Context, c Reader, key, after string, count int64) (entries []Entry, last string, err error) {
	start := "-"
	if after != "" && after != "0" {
		start = "(" + after
	}
	last = after
	msgs, err := c.XRangeN(ctx, key, start, "+", count).Result()
	if err != nil {
		return nil, last, err
	}
	for _, m := range msgs {
		last = m.ID
		if e, err := Parse(m); err == nil {
			entries = append(entries, e)
		}
	}
	return entries, last, nil
}

// First returns the ID of the oldest entry still in the stream, "" when it
// is empty: a reader whose last ID is older has missed the entries the cap
// trimmed.
func First(ctx context.Context, c Reader, key string) (string, error) {
	msgs, err := c.XRangeN(ctx, key, "-", "+", 1).Result()
	if err != nil || len(msgs) == 0 {
		return "", err
	}
	return msgs[0].ID, nil
}

// Recent returns up to count of the newest entries, oldest first, and the
// ID to Read from next ("" when the stream is empty).
func Recent(ctx context.Context, c Reader, key string, count int64) ([]Entry, string, error) {
	msgs, err := c.XRevRangeN(ctx, key, "+", "-", count).Result()
	if err != nil {
		return nil, "", err
	}
	var out []Entry
	last := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		last = msgs[i].ID
		if e, err := Parse(msgs[i]); err == nil {
			out = append(out, e)
		}
	}
	return out, last, nil
}

// Sink receives the outcome of each pkg/lock operation (lock.Options.Events), for monitoring.
// *Recorder satisfies it. Record is called on the operation's
// goroutine (the watchdog's, for renewals), so from several at once, after
// the outcome is decided: it must return at once and cannot fail the
// operation. A Recorder only queues, and writes in the background, batched
// and pipelined: that works alike on one server, Sentinel and Cluster
// (where the stream cannot share the lock's slot), and costs the operation
// no round trip. A Sink that is also an Inline lets a release write its
// event, and those queued before it, in its own script instead.
type Sink interface {
	Record(ctx context.Context, e Event)
}

// Inline is a Sink whose stream an operation's script may write to
// itself, in the operation's own round trip, instead of a write of its
// own after it: pkg/lock's release does so on one server or a
// Sentinel-managed master (not on a Cluster, where the stream lies in
// another slot). A process that releases and exits then sends nothing
// after the release. *Recorder satisfies it.
type Inline interface {
	Sink
	// Take returns the stream's key and cap, and hands over the events
	// queued so far, for the script to write before its own; ok is false
	// when the sink does not write to Redis through c (nothing is taken).
	Take(c redis.Cmdable) (key string, maxLen int64, queued []Event, ok bool)
	// Taken reports what the script did: how many events it wrote and
	// how many it failed to write (the server refused them), and gives
	// back the taken events a script that never ran did not write, to be
	// written as if Take had not been called.
	Taken(written, failed int, unsent []Event)
}

// Take hands the queued events over to a script that writes through c,
// when c is the Recorder's client (see Inline).
func (r *Recorder) Take(c redis.Cmdable) (key string, maxLen int64, queued []Event, ok bool) {
	if r == nil || !sameClient(r.c, c) {
		return "", 0, nil, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return "", 0, nil, false
	}
	queued, r.pending = r.pending, nil
	return r.key, r.maxLen, queued, true
}

// sameClient reports whether a and b are the same client. A client whose
// type cannot be compared (a struct value holding a slice, say) is never
// the same as another: comparing it would panic.
func sameClient(a, b redis.Cmdable) (same bool) {
	if a == nil || b == nil {
		return false
	}
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// Taken counts what a script wrote for the Recorder and queues again what
// it did not send (see Inline).
func (r *Recorder) Taken(written, failed int, unsent []Event) {
	if r == nil {
		return
	}
	r.written.Add(int64(written))
	r.failed.Add(int64(failed))
	for _, e := range unsent {
		r.Record(context.Background(), e)
	}
}

// Fields is e as the stream stores it: field names and values, in order.
// A script that writes e itself (Inline) writes these.
func Fields(e Event) []string {
	v := []string{"k", e.Kind, "n", e.Name}
	if e.Duration > 0 {
		v = append(v, "ms", strconv.FormatFloat(float64(e.Duration)/float64(time.Millisecond), 'f', 3, 64))
	}
	return v
}
