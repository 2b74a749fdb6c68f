// Package events records what lock operations ended in (acquired, busy,
// released, refused, lost, ...) as compact entries of a capped Redis
// stream, for monitoring: `lockctl exporter` turns them into counters and
// histograms, `lockctl top` into sparklines.
//
// Recording is opt-in for library users and never changes an operation's
// outcome: a Recorder bounds each write by a short timeout, swallows its
// errors and counts them. The write is separate from the operation's own
// command (one XADD after it), so an event can be missing (the write failed
// or lockctl died in between) but never invents an operation.
package events

import (
	"context"
	"errors"
	"strconv"
	"strings"
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
)

// Kinds lists every kind, in a fixed order.
var Kinds = []string{Acquired, Busy, Timeout, Released, NotHeld, NotOwner, RenewFailed, LeaseLost, ForceRelease, RateLimited, OnceReplayed}

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
	Timeout time.Duration // bound on one write; 0 is DefaultTimeout
}

// Recorder writes events to the stream. A nil *Recorder records nothing,
// so callers need not check whether recording is on.
type Recorder struct {
	c       redis.Cmdable
	key     string
	maxLen  int64
	timeout time.Duration
	written atomic.Int64
	failed  atomic.Int64
}

// NewRecorder returns a Recorder writing through c. opts may be nil.
func NewRecorder(c redis.Cmdable, opts *Options) *Recorder {
	if opts == nil {
		opts = &Options{}
	}
	r := &Recorder{c: c, key: opts.Key, maxLen: opts.MaxLen, timeout: opts.Timeout}
	if r.key == "" {
		r.key = DefaultKey
	}
	if r.maxLen <= 0 {
		r.maxLen = DefaultMaxLen
	}
	if r.timeout <= 0 {
		r.timeout = DefaultTimeout
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

// Record writes e. It returns within the Recorder's timeout whatever the
// server does, even when ctx is already cancelled (an interrupted
// operation still ends in an event); a failed write is counted, not
// returned.
func (r *Recorder) Record(ctx context.Context, e Event) {
	if r == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
	defer cancel()
	err := r.c.XAdd(ctx, &redis.XAddArgs{
		Stream: r.key,
		MaxLen: r.maxLen,
		Approx: true,
		Values: fields(e),
	}).Err()
	if err != nil {
		r.failed.Add(1)
		return
	}
	r.written.Add(1)
}

// Written and Failed count the writes that succeeded and failed.
func (r *Recorder) Written() int64 {
	if r == nil {
		return 0
	}
	return r.written.Load()
}

// Failed counts the writes that failed (and were swallowed).
func (r *Recorder) Failed() int64 {
	if r == nil {
		return 0
	}
	return r.failed.Load()
}

func fields(e Event) []any {
	v := []any{"k", e.Kind, "n", e.Name}
	if e.Duration > 0 {
		v = append(v, "ms", strconv.FormatFloat(float64(e.Duration)/float64(time.Millisecond), 'f', 3, 64))
	}
	return v
}

// Entry is an event read back from the stream.
type Entry struct {
	ID   string
	Time time.Time // from the entry's ID: the server's clock when it was written
	Event
}

// ErrMalformed: a stream entry is not an event of this package.
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
		if err != nil || f < 0 {
			return e, ErrMalformed
		}
		e.Duration = time.Duration(f * float64(time.Millisecond))
	}
	return e, nil
}

// Read returns up to count entries of the stream at key written after the
// entry with ID after ("" or "0" for the beginning), oldest first, skipping
// malformed ones; last is the ID to pass next time (after itself when
// nothing new was read). It never blocks.
func Read(ctx context.Context, c redis.Cmdable, key, after string, count int64) (entries []Entry, last string, err error) {
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
func First(ctx context.Context, c redis.Cmdable, key string) (string, error) {
	msgs, err := c.XRangeN(ctx, key, "-", "+", 1).Result()
	if err != nil || len(msgs) == 0 {
		return "", err
	}
	return msgs[0].ID, nil
}
