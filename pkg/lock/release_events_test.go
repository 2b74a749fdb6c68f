package lock_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// sends counts what a client sends: one per command or pipeline.
type sends struct{ n atomic.Int64 }

func (s *sends) DialHook(next redis.DialHook) redis.DialHook { return next }
func (s *sends) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { s.n.Add(1); return next(ctx, cmd) }
}
func (s *sends) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { s.n.Add(1); return next(ctx, cmds) }
}

// plainSink hides a Recorder's Inline methods: the events go only through
// Record, written after the operation (the unprotected variant).
type plainSink struct{ r *events.Recorder }

func (p plainSink) Record(ctx context.Context, e events.Event) { p.r.Record(ctx, e) }

func streamKinds(t *testing.T, c *redis.Client, key string) []string {
	t.Helper()
	msgs, err := c.XRange(context.Background(), key, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		e, err := events.Parse(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e.Kind)
	}
	return out
}

// A release with a Recorder on the same client writes the events queued
// before it (the acquisition's) and its own 'released' in its own script:
// once Release returns, the stream holds them both, and closing the
// Recorder sends nothing. Through a sink that only records (the way every
// event went before), the stream is empty after the release and Close
// sends a write of its own.
func TestReleaseWritesItsEventsInItsOwnScript(t *testing.T) {
	ctx := context.Background()
	for _, inline := range []bool{false, true} {
		c := newClient(t)
		var sent sends
		c.AddHook(&sent)
		stream := "events:" + uniqueName(t)
		// An hour's delay: only Close (or the release) writes.
		rec := events.NewRecorder(c, &events.Options{Key: stream, Delay: time.Hour})
		var sk events.Sink = rec
		if !inline {
			sk = plainSink{rec}
		}
		l := lock.New(c, &lock.Options{Events: sk})
		lease, err := l.Acquire(ctx, uniqueName(t), time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
		got := streamKinds(t, c, stream)
		before := sent.n.Load()
		rec.Close()
		after := sent.n.Load() - before
		if inline {
			if len(got) != 2 || got[0] != events.Acquired || got[1] != events.Released {
				t.Fatalf("stream after the release = %v, want [acquired released]", got)
			}
			if after != 0 {
				t.Fatalf("Close sent %d commands after a release that wrote the events", after)
			}
			if rec.Written() != 2 || rec.Failed() != 0 {
				t.Fatalf("written %d, failed %d; want 2, 0", rec.Written(), rec.Failed())
			}
		} else {
			if len(got) != 0 || after == 0 {
				t.Fatalf("plain sink: stream after the release %v, Close sent %d; want nothing, then a write", got, after)
			}
			if got := streamKinds(t, c, stream); len(got) != 2 {
				t.Fatalf("plain sink: stream after Close = %v", got)
			}
		}
	}
}

// A release that finds another holder writes no 'released': the refusal
// is recorded as before (not_owner), and the queued events still go out.
func TestReleaseEventsOfARefusedRelease(t *testing.T) {
	ctx := context.Background()
	c := newClient(t)
	stream := "events:" + uniqueName(t)
	rec := events.NewRecorder(c, &events.Options{Key: stream, Delay: time.Hour})
	l := lock.New(c, &lock.Options{Events: rec})
	name := uniqueName(t)
	lease, err := l.Acquire(ctx, name, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	redisDo(t, c, "DEL", lease.Key())
	if _, err := lock.New(c, nil).Acquire(ctx, name, time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); !errors.Is(err, lock.ErrNotOwner) {
		t.Fatalf("release = %v, want ErrNotOwner", err)
	}
	if got := streamKinds(t, c, stream); len(got) != 1 || got[0] != events.Acquired {
		t.Fatalf("stream after a refused release = %v, want [acquired]", got)
	}
	rec.Close()
	if got := streamKinds(t, c, stream); len(got) != 2 || got[1] != events.NotOwner {
		t.Fatalf("stream after Close = %v, want [acquired not_owner]", got)
	}
}

// A user whose ACL grants the lock's keys but not the event stream: the
// server refuses a script that names the stream, so the release leaves it
// out (then and after) and still releases; the events fail as they always
// did for such a user, counted.
func TestReleaseEventsUnderAnACLWithoutTheStream(t *testing.T) {
	ctx := context.Background()
	user := "nostream"
	if _, err := srv.Do("ACL", "SETUSER", user, "reset", "on", ">pw", "+@all", "~lock:*", "~lockctl:*{*", "&*"); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _, _ = srv.Do("ACL", "DELUSER", user) })
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: user, Password: "pw", Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { _ = c.Close() })
	admin := newClient(t)
	stream := "lockctl:events:" + uniqueName(t)
	rec := events.NewRecorder(c, &events.Options{Key: stream, Delay: time.Hour})
	l := lock.New(c, &lock.Options{Events: rec})
	for i := 0; i < 2; i++ {
		lease, err := l.Acquire(ctx, uniqueName(t), time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatalf("release %d under an ACL without the stream: %v", i, err)
		}
		if n := redisDo(t, admin, "EXISTS", lease.Key()).(int64); n != 0 {
			t.Fatalf("release %d left the lock", i)
		}
	}
	rec.Close()
	if rec.Written() != 0 || rec.Failed() != 4 {
		t.Fatalf("written %d, failed %d; want 0, 4 (two acquired, two released)", rec.Written(), rec.Failed())
	}
}

// On a Cluster the stream lies in another slot than the lock: the release
// sends its script without it, and the events follow as before.
func TestReleaseEventsOnCluster(t *testing.T) {
	cl := redistest.StartClusterTest(t)
	ctx := context.Background()
	c := cl.Client(t)
	stream := "events"
	rec := events.NewRecorder(c, &events.Options{Key: stream, Delay: time.Hour})
	l := lock.New(c, &lock.Options{Events: rec})
	for _, name := range []string{"a", "b", "c"} { // three slots
		lease, err := l.Acquire(ctx, name, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := lease.Release(ctx); err != nil {
			t.Fatalf("release of %s: %v", name, err)
		}
	}
	rec.Close()
	if rec.Written() != 6 || rec.Failed() != 0 {
		t.Fatalf("written %d, failed %d; want 6, 0", rec.Written(), rec.Failed())
	}
	if n, err := c.XLen(ctx, stream).Result(); err != nil || n != 6 {
		t.Fatalf("stream length %d (%v), want 6", n, err)
	}
}
