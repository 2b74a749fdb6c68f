package exporter

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lockwire"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// Shared holders count once per holder, as semaphore slots do, and a lock's
// gauges are those of its longest-held holder and its longest TTL; an
// exclusive acquirer waiting for them adds no holder.
func TestScanCountsSharedHolders(t *testing.T) {
	s := redistest.StartTest(t, nil)
	c := redistest.ClientFor(t, s.URL)
	ctx := context.Background()
	l := lock.New(c, nil)
	for _, ttl := range []time.Duration{40 * time.Second, time.Minute, 50 * time.Second} {
		if _, err := l.Acquire(ctx, "rw", ttl, &lock.AcquireOptions{Shared: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Acquire(ctx, "deploy", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.ZAdd(ctx, lockwire.AuxKey(lockwire.KindWriters, "lock:rw"), redis.Z{Score: 99999999999999, Member: "w"}).Err(); err != nil {
		t.Fatal(err)
	}
	e := New(Config{Client: c, Inspector: inspect.New(c, nil), MaxNames: 10})
	if err := e.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if e.scan.held != 4 || len(e.scan.locks) != 2 || e.scan.orphans != 0 {
		t.Fatalf("scan: held %d, %d names, %d orphans", e.scan.held, len(e.scan.locks), e.scan.orphans)
	}
	for _, g := range e.scan.locks {
		if g.name == "rw" && (!g.ttlKnown || g.ttl <= 50 || g.ttl > 60 || !g.heldKnown) {
			t.Errorf("rw gauges %+v", g)
		}
	}
}
