package events_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/benchcmp"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

var srv *redistest.Server

func TestMain(m *testing.M) { redistest.Main(m, &srv) }

var ctx = context.Background()

func unique(t testing.TB) string {
	var b [4]byte
	rand.Read(b[:])
	return "ev:" + t.Name() + "." + hex.EncodeToString(b[:])
}

func TestRecordAndRead(t *testing.T) {
	c := srv.Client(t)
	key := unique(t)
	t.Cleanup(func() { c.Del(context.Background(), key) })
	r := events.NewRecorder(c, &events.Options{Key: key, MaxLen: 5})
	r.Record(ctx, events.Event{Kind: events.Acquired, Name: "a", Duration: 1500 * time.Microsecond})
	r.Record(ctx, events.Event{Kind: events.Released, Name: "a", Duration: 2 * time.Second})
	r.Record(ctx, events.Event{Kind: events.NotOwner, Name: "b"})
	r.Close()
	if r.Written() != 3 || r.Failed() != 0 {
		t.Fatalf("written %d failed %d, want 3 and 0", r.Written(), r.Failed())
	}
	got, last, err := events.Read(ctx, c, key, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []events.Event{{events.Acquired, "a", 1500 * time.Microsecond}, {events.Released, "a", 2 * time.Second}, {events.NotOwner, "b", 0}}
	if len(got) != len(want) {
		t.Fatalf("read %d entries, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if got[i].Event != want[i] || time.Since(got[i].Time) > time.Minute {
			t.Errorf("entry %d = %+v, want %+v", i, got[i], want[i])
		}
	}
	// Reading from the last ID returns nothing new, then only what follows.
	if more, l2, err := events.Read(ctx, c, key, last, 10); err != nil || len(more) != 0 || l2 != last {
		t.Fatalf("re-read: %v %v %v", more, l2, err)
	}
	r2 := events.NewRecorder(c, &events.Options{Key: key})
	r2.Record(ctx, events.Event{Kind: events.Busy, Name: "c"})
	r2.Close()
	more, _, err := events.Read(ctx, c, key, last, 10)
	if err != nil || len(more) != 1 || more[0].Kind != events.Busy {
		t.Fatalf("incremental read: %+v %v", more, err)
	}
}

// The cap holds the stream near MaxLen (XADD MAXLEN ~ trims whole nodes).
func TestCapped(t *testing.T) {
	c := srv.Client(t)
	key := unique(t)
	t.Cleanup(func() { c.Del(context.Background(), key) })
	r := events.NewRecorder(c, &events.Options{Key: key, MaxLen: 100})
	for i := 0; i < 2000; i++ {
		r.Record(ctx, events.Event{Kind: events.Busy, Name: "x"})
		if i%100 == 0 {
			r.Flush()
		}
	}
	r.Close()
	if n := c.XLen(ctx, key).Val(); n > 300 || n < 100 {
		t.Fatalf("XLEN = %d after 2000 events with MaxLen 100", n)
	}
}

// An unreachable server costs the caller nothing: Record returns at once,
// Close within the timeout, and the losses are counted.
func TestUnreachableNeverBlocks(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port), MaxRetries: -1})
	defer c.Close()
	r := events.NewRecorder(c, &events.Options{Timeout: 200 * time.Millisecond})
	start := time.Now()
	for i := 0; i < 100; i++ {
		r.Record(ctx, events.Event{Kind: events.Acquired, Name: "a"})
	}
	// Blocking on the dead server would take 100 write timeouts (25s).
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Record blocked for %v", d)
	}
	r.Close()
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("Close took %v", d)
	}
	if r.Failed() != 100 || r.Written() != 0 {
		t.Fatalf("failed %d written %d, want 100 and 0", r.Failed(), r.Written())
	}
	r.Record(ctx, events.Event{Kind: events.Acquired, Name: "after close"})
	if r.Failed() != 101 {
		t.Fatalf("an event after Close is not counted as dropped")
	}
	var nilRec *events.Recorder
	nilRec.Record(ctx, events.Event{Kind: events.Busy})
	nilRec.Close()
}

func TestParseRejectsForeignEntries(t *testing.T) {
	for _, m := range []redis.XMessage{
		{ID: "1-0", Values: map[string]any{"n": "a"}},
		{ID: "x", Values: map[string]any{"k": "busy"}},
		{ID: "1-0", Values: map[string]any{"k": "acquired", "ms": "-3"}},
		// Durations a time.Duration cannot hold: converted, each became
		// about -9.2e9 s.
		{ID: "1-0", Values: map[string]any{"k": "acquired", "ms": "NaN"}},
		{ID: "1-0", Values: map[string]any{"k": "acquired", "ms": "Inf"}},
		{ID: "1-0", Values: map[string]any{"k": "released", "ms": "+Inf"}},
		{ID: "1-0", Values: map[string]any{"k": "acquired", "ms": "1e308"}},
		{ID: "1-0", Values: map[string]any{"k": "acquired", "ms": "9223372036854.776"}},
	} {
		if _, err := events.Parse(m); err == nil {
			t.Errorf("Parse(%+v) accepted", m)
		}
	}
	// Long durations still parse, up to what a time.Duration holds.
	for ms, want := range map[string]time.Duration{"86400000.5": 24*time.Hour + 500*time.Microsecond, "9223372036853": 9223372036853 * time.Millisecond} {
		e, err := events.Parse(redis.XMessage{ID: "1-0", Values: map[string]any{"k": "acquired", "ms": ms}})
		if d := e.Duration - want; err != nil || d < -time.Microsecond || d > time.Microsecond {
			t.Errorf("Parse(%s ms) = %v, %v; want %v", ms, e.Duration, err, want)
		}
	}
}

// BenchmarkAcquireReleaseEvents measures acquire+release with an acquired
// and a released event recorded against the same operations without
// events, interleaved in short rounds (see BENCHMARKS.md).
func BenchmarkAcquireReleaseEvents(b *testing.B) {
	for _, g := range []int{1, 16} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			c := srv.Client(b)
			key := unique(b)
			b.Cleanup(func() { c.Del(context.Background(), key) })
			l := lock.New(c, nil)
			rec := events.NewRecorder(c, &events.Options{Key: key})
			defer rec.Close()
			prefix := unique(b)
			var seq atomic.Int64
			names := make([]string, g)
			for i := range names {
				names[i] = fmt.Sprintf("%s.%d", prefix, seq.Add(1))
			}
			cycle := func(w int, r *events.Recorder) error {
				lease, err := l.Acquire(ctx, names[w], 30*time.Second, nil)
				if err != nil {
					return err
				}
				r.Record(ctx, events.Event{Kind: events.Acquired, Name: names[w], Duration: lease.Waited()})
				if err := lease.Release(ctx); err != nil {
					return err
				}
				r.Record(ctx, events.Event{Kind: events.Released, Name: names[w], Duration: time.Since(lease.AcquiredAt())})
				return nil
			}
			benchcmp.Compare(b, g, 20,
				func(w int) error { return cycle(w, rec) },
				func(w int) error { return cycle(w, nil) })
			rec.Flush()
			if rec.Failed() > 0 {
				b.Errorf("%d events dropped", rec.Failed())
			}
		})
	}
}

// uncomparable is a client whose type cannot be compared with ==.
type uncomparable struct {
	redis.Cmdable
	tags []string
}

// Take never panics on a client that cannot be compared, and takes only
// for the Recorder's own client.
func TestTakeOnlyForItsOwnClient(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"}) // never dialled
	defer c.Close()
	odd := uncomparable{Cmdable: c, tags: []string{"x"}}
	r := events.NewRecorder(odd, nil)
	r.Record(context.Background(), events.Event{Kind: events.Acquired, Name: "a"})
	if _, _, _, ok := r.Take(uncomparable{Cmdable: c}); ok {
		t.Fatal("Take for another client")
	}
	own := events.NewRecorder(c, nil)
	own.Record(context.Background(), events.Event{Kind: events.Acquired, Name: "a"})
	if _, _, q, ok := own.Take(c); !ok || len(q) != 1 {
		t.Fatalf("Take for its own client = %v, %v", q, ok)
	}
	if _, _, _, ok := own.Take(redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})); ok {
		t.Fatal("Take for another *redis.Client")
	}
}
