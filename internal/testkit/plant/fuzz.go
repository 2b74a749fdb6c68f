package plant

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The scaffolding the planted-data fuzz targets share: their seed corpus,
// the names each input plants under, and the check that every error is
// typed.

// Seed is one value of a fuzz target's seed corpus: a Types index, a
// payload as Value reads it, and whether the value is huge.
type Seed = struct {
	Typ     byte
	Payload string
	Huge    bool
}

// LockValue is a well-formed lockctl lock value, the one the seeds plant
// whole, cut short and at the wrong key.
const LockValue = `{"token":"0123456789abcdef0123456789abcdef","fence":7,"owner":"ci@h:1","acquired_ms":1767225600000}`

// AddSeeds adds every seed at each of n targets, for a fuzz function of
// (t, target, typ byte, payload string, huge bool).
func AddSeeds(f *testing.F, n int, seeds []Seed) {
	for target := range n {
		for _, s := range seeds {
			f.Add(byte(target), s.Typ, s.Payload, s.Huge)
		}
	}
}

var seq atomic.Int64

// Unique returns "PID.N", a name no other input of this process, nor of
// another fuzz worker, plants under.
func Unique() string { return fmt.Sprintf("%d.%d", os.Getpid(), seq.Add(1)) }

// At plants a value at key as Value does, failing tb if it cannot.
func At(ctx context.Context, tb testing.TB, c redis.Cmdable, key string, typ byte, payload string, size int) {
	tb.Helper()
	if err := Value(ctx, c, key, typ, payload, size); err != nil {
		tb.Fatalf("plant at %s: %v", key, err)
	}
}

// Typed reports whether err is one a caller can branch on: one of the
// package's sentinels, or a reply error of the server.
func Typed(err error, sentinels ...error) bool {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return true
		}
	}
	return ReplyError(err)
}

// Checker returns the check a fuzz input runs on each operation's error:
// an error that typed rejects fails tb, naming the operation and what was
// planted (a Describe).
func Checker(tb testing.TB, what string, typed func(error) bool) func(op string, err error) {
	return func(op string, err error) {
		tb.Helper()
		if err != nil && !typed(err) {
			tb.Fatalf("%s with %s: untyped error %T: %s", op, what, err, Abbrev(err.Error()))
		}
	}
}
