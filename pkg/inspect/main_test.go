package inspect_test

import (
	"context"
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"
)

var srv *redistest.Server

func TestMain(m *testing.M) { redistest.Main(m, &srv) }

// clientFor returns a client on a redis:// URL, closed when the test ends.
var clientFor = redistest.ClientFor

func do(t testing.TB, c redis.UniversalClient, args ...any) any {
	t.Helper()
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil && err != redis.Nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}
