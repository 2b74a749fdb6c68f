package once_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/redis/go-redis/v9"
)

var srv *redistest.Server

func TestMain(m *testing.M) { os.Exit(redistest.RunMain(m, nil, &srv)) }

func newClient(tb testing.TB) *redis.Client {
	tb.Helper()
	opt, err := redis.ParseURL(srv.URL)
	if err != nil {
		tb.Fatal(err)
	}
	c := redis.NewClient(opt)
	tb.Cleanup(func() { c.Close() })
	return c
}

var keySeq atomic.Int64

func uniqueKey(tb testing.TB) string {
	return fmt.Sprintf("%s:%d:%d", tb.Name(), time.Now().UnixNano(), keySeq.Add(1))
}

func redisInt(tb testing.TB, args ...string) int64 {
	tb.Helper()
	s, err := srv.Do(args...)
	if err != nil {
		tb.Fatalf("%v: %v", args, err)
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		tb.Fatalf("%v: reply %q is not an integer", args, s)
	}
	return n
}

func ctxT(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return ctx
}
