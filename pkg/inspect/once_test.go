package inspect_test

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/once"
)

// OnceUnknown lists at-most-once claims that lapsed without an outcome,
// marked unknown or not yet, and nothing else under the once prefix.
func TestOnceUnknown(t *testing.T) {
	ctx := context.Background()
	c := clientFor(t, srv.URL)
	prefix := "onceunk:" + redistest.UniqueKey(t) + ":"
	short := once.New(c, &once.Options{Prefix: prefix, TTL: 200 * time.Millisecond, Owner: "alice@a:1"})
	long := once.New(c, &once.Options{Prefix: prefix, TTL: time.Minute})
	amo := &once.ClaimOptions{AtMostOnce: true}
	for _, k := range []string{"marked", "lapsed"} {
		if _, err := short.Claim(ctx, k, amo); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := short.Claim(ctx, "alo", nil); err != nil { // at least once: expires, never unknown
		t.Fatal(err)
	}
	if _, err := long.Claim(ctx, "running", amo); err != nil {
		t.Fatal(err)
	}
	d, err := long.Claim(ctx, "done", amo)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Complete(ctx, 0); err != nil {
		t.Fatal(err)
	}
	do(t, c, "HSET", prefix+"foreign", "field", "v") // no once record
	time.Sleep(300 * time.Millisecond)
	if _, err := short.Claim(ctx, "marked", amo); err == nil {
		t.Fatal("claim of a lapsed at-most-once claim succeeded")
	}
	in := inspect.New(c, nil)
	var got []string
	err = in.OnceUnknown(ctx, prefix, "", nil, func(r once.Record) error {
		if r.State != once.StateUnknown || r.Owner != "alice@a:1" || r.Mode != once.ModeAtMostOnce {
			t.Errorf("record %+v", r)
		}
		got = append(got, r.Key)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(got)
	if len(got) != 2 || got[0] != prefix+"lapsed" || got[1] != prefix+"marked" {
		t.Fatalf("unknown keys %q, want %slapsed and %smarked", got, prefix, prefix)
	}
	// A pattern narrows it to matching names.
	got = nil
	if err := in.OnceUnknown(ctx, prefix, "mark*", nil, func(r once.Record) error { got = append(got, r.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != prefix+"marked" {
		t.Fatalf("with a pattern: %q", got)
	}
}
