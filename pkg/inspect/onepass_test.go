package inspect_test

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
)

// Under the default prefix, one SCAN pass over the keyspace finds the locks
// and the semaphores (whose holders live in lockctl:sem:...), and nothing
// else: not the fence counters, not keys that merely start with "lock",
// not the locks of another prefix. Its own server, so that SCAN can be
// counted.
func TestLocksDefaultPrefixScansOnce(t *testing.T) {
	s, err := redistest.Start(nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	ctx := context.Background()
	c := clientFor(t, s.URL)
	l := lock.New(c, nil)
	for _, name := range []string{"deploy", "db:migrate"} {
		if _, err := l.Acquire(ctx, name, time.Minute, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 2 {
		if _, err := l.Acquire(ctx, "pool", time.Minute, &lock.AcquireOptions{Limit: 3}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := lock.New(c, &lock.Options{Prefix: "other:"}).Acquire(ctx, "x", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	do(t, c, "SET", "lockless", "1")
	do(t, c, "SET", "lock", "1")
	for i := range 50 {
		do(t, c, "SET", "cache:"+strings.Repeat("k", i), "v")
	}
	do(t, c, "CONFIG", "RESETSTAT")
	var got []string
	err = inspect.New(c, nil).Locks(ctx, "", nil, func(x inspect.Lock) error {
		got = append(got, x.Name+"/"+x.Kind())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if want := "db:migrate/lockctl deploy/lockctl pool/semaphore pool/semaphore"; strings.Join(got, " ") != want {
		t.Errorf("listed %q, want %q", got, want)
	}
	stats := do(t, c, "INFO", "commandstats").(string)
	if !strings.Contains(stats, "cmdstat_scan:calls=1,") {
		t.Errorf("want one SCAN call over a small keyspace:\n%s", stats)
	}
}
