package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

// Auxiliary keys someone else wrote with another type, or with a counter
// that is no number: every call that reads them returns a *DataError naming
// the key (errors.Is ErrWrongType), never the server's bare reply or a
// parse error.
func TestDataErrorNamesTheKey(t *testing.T) {
	ctx := context.Background()
	l, c := newLocker(t, nil)
	for _, tc := range []struct {
		name  string
		kind  string
		plant []any // with the key in place of nil
		call  func(name string) error
		typ   string
		value string
	}{
		{"fence hash", lock.KindFence, []any{"HSET", nil, "f", "x"}, func(n string) error {
			_, err := l.Acquire(ctx, n, time.Second, &lock.AcquireOptions{})
			return err
		}, "hash", ""},
		{"fence garbage", lock.KindFence, []any{"SET", nil, "12abc"}, func(n string) error {
			_, err := l.Fences().Next(ctx, n)
			return err
		}, "", "12abc"},
		{"fence peek", lock.KindFence, []any{"SET", nil, "x"}, func(n string) error {
			_, err := l.Fences().Peek(ctx, n)
			return err
		}, "", "x"},
		{"semaphore", lock.KindSem, []any{"SET", nil, "x"}, func(n string) error {
			_, err := l.Acquire(ctx, n, time.Second, &lock.AcquireOptions{Limit: 2})
			return err
		}, "string", ""},
		{"semaphore release", lock.KindSem, []any{"RPUSH", nil, "x"}, func(n string) error {
			return releaseToken(ctx, l, n, "t")
		}, "list", ""},
		{"fifo queue", lock.KindQueue, []any{"SADD", nil, "x"}, func(n string) error {
			_, err := l.Acquire(ctx, n, time.Second, &lock.AcquireOptions{FIFO: true})
			return err
		}, "set", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := uniqueName(t)
			key := lock.AuxKey(tc.kind, "lock:"+name)
			args := append([]any(nil), tc.plant...)
			args[1] = key
			redisDo(t, c, args...)
			t.Cleanup(func() { c.Del(context.Background(), key) })

			err := tc.call(name)
			var de *lock.DataError
			if !errors.As(err, &de) || !errors.Is(err, lock.ErrWrongType) {
				t.Fatalf("err %v (%T), want a *lock.DataError matching ErrWrongType", err, err)
			}
			if de.Key != key || de.Type != tc.typ || de.Value != tc.value || de.Want == "" {
				t.Fatalf("DataError %+v, want key %s, type %q, value %q", de, key, tc.typ, tc.value)
			}
		})
	}
}
