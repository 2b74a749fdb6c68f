package exporter

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
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

// The age of each lock's last renewal, and the period of the holder it is
// of: a holder killed mid-lease shows an age far past its period, a lease
// renewed by hand an age without a period, a foreign lock neither. Several
// holders of one name (and names summed under _other) show the most
// overdue holder's age and period, never one's age beside another's period.
func TestScanRenewalAge(t *testing.T) {
	s := redistest.StartTest(t, nil)
	c := redistest.ClientFor(t, s.URL)
	ctx := context.Background()
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	ago := func(d time.Duration) string { return strconv.FormatInt(now.Add(-d).UnixMilli(), 10) }
	val := func(token, every string, acquired, renewed time.Duration) string {
		v := `{"token":"` + token + `","fence":1,"owner":"ci@build-3:4242","ttl_ms":600000`
		if every != "" {
			v += `,"renew_every_ms":` + every
		}
		return v + `,"acquired_ms":` + ago(acquired) + `,"renewed_ms":` + ago(renewed) + `}`
	}
	for key, v := range map[string]string{
		"lock:dead":    val("t1", "5000", time.Hour, 100*time.Second),
		"lock:live":    val("t2", "5000", time.Hour, 2*time.Second),
		"lock:byhand":  val("t3", "", time.Hour, 300*time.Second),
		"lock:foreign": "0f3b8a52-5c1e-4d0e-9a4b-2f1f6a1c9e77",
		"lock:z1":      val("t4", "1000", time.Minute, 5*time.Second),     // 5 periods overdue
		"lock:z2":      val("t5", "60000", 2*time.Minute, 50*time.Second), // older, within its period
	} {
		if err := c.Set(ctx, key, v, 10*time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// A semaphore: one slot overdue, one not.
	for i, v := range []string{val("s1", "10000", time.Hour, 3*time.Second), val("s2", "1000", time.Hour, 4*time.Second)} {
		tok := []string{"s1", "s2"}[i]
		if err := c.ZAdd(ctx, lockwire.AuxKey(lockwire.KindSem, "lock:sem"), redis.Z{Score: float64(now.Add(time.Minute).UnixMilli()), Member: tok}).Err(); err != nil {
			t.Fatal(err)
		}
		if err := c.HSet(ctx, lockwire.AuxKey(lockwire.KindSemVal, "lock:sem"), tok, v).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// The longest-held names get series of their own; z1 and z2, held the
	// shortest, and foreign (age unknown) go under _other.
	e := New(Config{Client: c, Inspector: inspect.New(c, nil), MaxNames: 4})
	e.reachable = true
	if err := e.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	out := scrape(t, e)
	within := func(series string, lo, hi float64) {
		t.Helper()
		m := regexp.MustCompile(`\n` + regexp.QuoteMeta(series) + ` ([0-9.e+-]+)\n`).FindStringSubmatch(out)
		if m == nil {
			t.Errorf("no %s in:\n%s", series, out)
			return
		}
		if v, _ := strconv.ParseFloat(m[1], 64); v < lo || v > hi {
			t.Errorf("%s = %v, want %v..%v", series, v, lo, hi)
		}
	}
	within(`lockctl_lock_last_renewal_age_seconds{name="dead"}`, 100, 110)
	within(`lockctl_lock_renew_period_seconds{name="dead"}`, 5, 5)
	within(`lockctl_lock_last_renewal_age_seconds{name="live"}`, 2, 12)
	within(`lockctl_lock_last_renewal_age_seconds{name="byhand"}`, 300, 310)
	within(`lockctl_lock_last_renewal_age_seconds{name="sem"}`, 4, 14)
	within(`lockctl_lock_renew_period_seconds{name="sem"}`, 1, 1)
	within(`lockctl_lock_last_renewal_age_seconds{name="_other"}`, 5, 15)
	within(`lockctl_lock_renew_period_seconds{name="_other"}`, 1, 1)
	if strings.Contains(out, `name="z1"`) || strings.Contains(out, `name="z2"`) {
		t.Errorf("z1 or z2 has series of its own:\n%s", out)
	}
	if strings.Contains(out, `lockctl_lock_renew_period_seconds{name="byhand"}`) ||
		strings.Contains(out, `lockctl_lock_last_renewal_age_seconds{name="foreign"}`) {
		t.Errorf("a renewal series without a record:\n%s", out)
	}
}
