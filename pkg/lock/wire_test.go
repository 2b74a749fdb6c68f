package lock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

// Kind is the one word output prints: the Reason when there is one, else
// the Format.
func TestHolderKind(t *testing.T) {
	for _, c := range []struct {
		h    lock.Holder
		want string
	}{
		{lock.Holder{Format: lock.FormatLockctl}, "lockctl"},
		{lock.Holder{Format: lock.FormatString}, "string"},
		{lock.Holder{Format: lock.FormatRedisson}, "redisson"},
		{lock.Holder{Format: lock.FormatLockctl, Reason: lock.ReasonSemaphore}, "semaphore"},
		{lock.Holder{Format: lock.FormatLockctl, Reason: lock.ReasonShared}, "shared"},
		{lock.Holder{Reason: lock.ReasonQueue}, "queue"},
		{lock.Holder{Reason: lock.ReasonWriters}, "writers"},
		{lock.Holder{}, ""},
	} {
		if got := c.h.Kind(); got != c.want {
			t.Errorf("%+v.Kind() = %q, want %q", c.h, got, c.want)
		}
	}
}

// A semaphore refusal names both: the holder's value is lockctl's, and
// semaphore slots are why the name is taken.
func TestSemaphoreRefusalFormatAndReason(t *testing.T) {
	l, _ := newLocker(t, nil)
	ctx := context.Background()
	if _, err := l.Acquire(ctx, "fr", time.Minute, &lock.AcquireOptions{Limit: 1}); err != nil {
		t.Fatal(err)
	}
	_, err := l.Acquire(ctx, "fr", time.Minute, &lock.AcquireOptions{Limit: 1})
	var held *lock.HeldError
	if !errors.As(err, &held) || held.Holder.Format != lock.FormatLockctl || held.Holder.Reason != lock.ReasonSemaphore {
		t.Fatalf("refusal %v: %+v", err, held)
	}
}
