package lock_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

var srv *redistest.Server

// redisAddr is where the examples find Redis: localhost:6379, as a program
// that copies them would; TestMain points it at the package's server.
var redisAddr = "localhost:6379"

func TestMain(m *testing.M) {
	s, err := redistest.Start(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	srv, redisAddr = s, s.Addr
	if err := os.Setenv("LOCKCTL_TEST_REDIS_URL", s.URL); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	code := m.Run()
	s.Stop()
	os.Exit(code)
}

// newClient returns a client on the package's server, closed when the test
// ends.
func newClient(t testing.TB) *redis.Client { return redistest.ClientFor(t, srv.URL) }

// uniqueName is a lock name no other test (or earlier run with -count) uses.
func uniqueName(t testing.TB) string {
	var b [4]byte
	rand.Read(b[:])
	return strings.NewReplacer("/", ".", " ", "_").Replace(t.Name()) + "." + hex.EncodeToString(b[:])
}

func newLocker(t testing.TB, opts *lock.Options) (*lock.Locker, *redis.Client) {
	c := newClient(t)
	return lock.New(c, opts), c
}

// sentOf is when the call that granted or last renewed lease was sent:
// its Deadline less the TTL, plus the default margin.
func sentOf(lease *lock.Lease) time.Time {
	return lease.Deadline().Add(leasetime.DefaultMargin(lease.TTL()) - lease.TTL())
}

// releaseHold gives lease back and returns the holds its token has left,
// as a caller reads them: Release, then Holds.
func releaseHold(ctx context.Context, lease *lock.Lease) (int, error) {
	err := lease.Release(ctx)
	return lease.Holds(), err
}

// releaseToken releases the lease token holds on the lock called name, as
// another process that knows only the two does: Resume, then Release.
func releaseToken(ctx context.Context, l *lock.Locker, name, token string) error {
	lease, err := l.Resume(ctx, name, token)
	if err != nil {
		return err
	}
	return lease.Release(ctx)
}

// renewToken renews the lease token holds on the lock called name for ttl
// (0: the TTL it was taken with), as another process that knows only the
// two does: Resume, then Refresh; it returns the TTL granted.
func renewToken(ctx context.Context, l *lock.Locker, name, token string, ttl time.Duration) (time.Duration, error) {
	lease, err := l.Resume(ctx, name, token)
	if err != nil {
		return 0, err
	}
	if err := lease.Refresh(ctx, ttl); err != nil {
		return 0, err
	}
	return lease.TTL(), nil
}

// redisDo runs a raw command for setup and assertions.
func redisDo(t testing.TB, c *redis.Client, args ...any) any {
	t.Helper()
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil && err != redis.Nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// countingHook counts the commands a client sends, pipelined or not: those
// named in only (lower case), or every one when only is empty.
type countingHook struct {
	n    atomic.Int64
	only []string
}

func (h *countingHook) count(cmd redis.Cmder) {
	if len(h.only) == 0 || slices.Contains(h.only, cmd.Name()) {
		h.n.Add(1)
	}
}

func (h *countingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *countingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		h.count(cmd)
		return next(ctx, cmd)
	}
}

func (h *countingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			h.count(cmd)
		}
		return next(ctx, cmds)
	}
}

func contextWithTimeout(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// serverMicros is the server's TIME in µs: the floor of every fence the
// server issues from then on.
func serverMicros(t testing.TB, c *redis.Client) int64 {
	t.Helper()
	now, err := c.Time(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	return now.UnixMicro()
}
