package redistest

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// Client returns a go-redis client on s, closed when the test ends. Its
// pool is large enough for tests that hammer one key from many goroutines.
func (s *Server) Client(tb testing.TB) *redis.Client {
	tb.Helper()
	opt, err := redis.ParseURL(s.URL)
	if err != nil {
		tb.Fatal(err)
	}
	opt.PoolSize = 128
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
