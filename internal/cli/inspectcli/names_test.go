package inspectcli

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
)

// Completion offers a name held only by shared holders, not one only waited
// for, nor lockctl's own keys. (A server of its own: Names reads a bounded
// part of the keyspace.)
func TestNamesSharedHolders(t *testing.T) {
	s := redistest.StartTest(t, nil)
	c := redistest.ClientFor(t, s.URL)
	ctx := context.Background()
	l := lock.New(c, nil)
	for _, owner := range []string{"ci@build-1:11", "ci@build-2:22", "ops@bastion:33"} {
		if _, err := l.Acquire(ctx, "rw", time.Minute, &lock.AcquireOptions{Shared: true, Owner: owner}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := l.Acquire(ctx, "rx", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "ZADD", lockwire.AuxKey(lockwire.KindWriters, "lock:rwanted"), 99999999999999, "w").Err(); err != nil {
		t.Fatal(err)
	}
	for start, want := range map[string]string{"": "rw,rx", "r": "rw,rx", "rw": "rw", "rwa": ""} {
		names, err := Names(ctx, c, "lock:", start, 100)
		if err != nil || strings.Join(names, ",") != want {
			t.Errorf("names %q: %v %v, want %s", start, names, err, want)
		}
	}
}
