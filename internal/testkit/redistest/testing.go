package redistest

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Main is a test package's TestMain: it starts one server for the
// package's tests, sets *srv to it, runs the tests, stops the server and
// exits with the tests' status (see RunMain).
//
//	var srv *redistest.Server
//
//	func TestMain(m *testing.M) { redistest.Main(m, &srv) }
func Main(m *testing.M, srv **Server) { os.Exit(RunMain(m, nil, srv)) }

// StartTest starts a private server for one test (with opts, which may be
// nil), stopped when the test ends; a server that does not start fails the
// test.
func StartTest(tb testing.TB, opts *Options) *Server {
	tb.Helper()
	s, err := Start(opts)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(s.Stop)
	return s
}

// StartClusterTest starts a private Cluster of three masters for one test,
// stopped when the test ends; a Cluster that does not start fails the test.
func StartClusterTest(tb testing.TB) *Cluster {
	tb.Helper()
	c, err := StartCluster(3)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(c.Stop)
	return c
}

// Client returns a Cluster client on c, closed when the test ends.
func (c *Cluster) Client(tb testing.TB) *redis.ClusterClient {
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs})
	tb.Cleanup(func() { _ = cc.Close() })
	return cc
}

// Client returns a go-redis client on s, closed when the test ends. Its
// pool is large enough for tests that hammer one key from many goroutines.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	return newClient(tb, s.URL, 128)
}

// ClientFor returns a go-redis client with the default pool on a redis://
// URL, closed when the test ends.
func ClientFor(tb testing.TB, url string) *redis.Client {
	tb.Helper()
	return newClient(tb, url, 0)
}

func newClient(tb testing.TB, url string, poolSize int) *redis.Client {
	tb.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		tb.Fatal(err)
	}
	if poolSize > 0 {
		opt.PoolSize = poolSize
	}
	c := redis.NewClient(opt)
	tb.Cleanup(func() { c.Close() })
	return c
}

// Int runs a raw command over the server's own connection, independent of
// the client under test, and returns its integer reply.
func (s *Server) Int(tb testing.TB, args ...string) int64 {
	tb.Helper()
	r, err := s.Do(args...)
	if err != nil {
		tb.Fatalf("%v: %v", args, err)
	}
	n, err := strconv.ParseInt(r, 10, 64)
	if err != nil {
		tb.Fatalf("%v: reply %q is not an integer", args, r)
	}
	return n
}

var keySeq atomic.Int64

// UniqueKey names a key no other test on a shared server uses.
func UniqueKey(tb testing.TB) string {
	return fmt.Sprintf("%s:%d:%d", tb.Name(), time.Now().UnixNano(), keySeq.Add(1))
}

// Context is a context that ends with the test, bounded at 30s.
func Context(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return ctx
}
