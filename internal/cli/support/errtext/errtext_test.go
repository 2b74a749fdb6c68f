package errtext_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli/support/errtext"
	"github.com/lockctl/lockctl/pkg/lock"
)

// lockctl prints package lock's errors in the words it always has, without
// the library's "lock: " prefix, wherever they sit in the chain.
func TestOf(t *testing.T) {
	held := &lock.HeldError{Err: lock.ErrNotOwner, Holder: lock.Holder{Key: "lock:deploy", Owner: "ci@b:1", TTL: 2 * time.Second}}
	for _, c := range []struct {
		err  error
		want string
	}{
		{held, "lock:deploy held by ci@b:1 (ttl 2s)"},
		{fmt.Errorf("release deploy: %w", held), "release deploy: lock:deploy held by ci@b:1 (ttl 2s)"},
		{&lock.LostError{Name: "deploy", Err: held},
			"lock deploy lost: renewal refused: lock:deploy held by ci@b:1 (ttl 2s)"},
		{&lock.LostError{Name: "deploy", Expired: true}, "lock deploy lost: no renewal succeeded before the lease's local deadline"},
		{fmt.Errorf("redis at h:1: %w", &lock.ReplicationError{Key: "lock:wr", Want: 1}), "redis at h:1: lock:wr: 0 of 1 replicas acknowledged the lock write"},
		{&lock.StaleFenceError{Resource: "db", Fence: 4, Highest: 5}, "fence 4 for db is stale: 5 is newer"},
		{&lock.DataError{Key: "lockctl:fence:{lock:a}", Type: "hash", Want: "a fence counter", Err: errors.New("WRONGTYPE")},
			"lockctl:fence:{lock:a} is a hash, not a fence counter"},
		{&lock.DataError{Key: "lock:s", Limit: 2, WantLimit: 3, Err: lock.ErrInvalid}, "lock: semaphore lock:s is held with limit 2, not 3"},
		{&lock.QuorumError{Reason: "2 of 3 nodes refused"}, "2 of 3 nodes refused"},
		{&lock.WakeError{Key: "lock:x", Channel: "c", Reason: "NOPERM"}, "lock:x released, but the server refused the wake-up on c: NOPERM"},
		{fmt.Errorf("%w: lock:x", lock.ErrNotHeld), "lock: not held: lock:x"},
		{errors.Join(held, &lock.StaleFenceError{Resource: "db", Fence: 5, Highest: 5}),
			"lock:deploy held by ci@b:1 (ttl 2s)\nfence 5 for db is stale: another holder already wrote with fence 5"},
	} {
		if got := errtext.Of(c.err); got != c.want {
			t.Errorf("Of(%q) = %q, want %q", c.err, got, c.want)
		}
	}
	if errtext.Of(nil) != "" {
		t.Error("Of(nil) is not empty")
	}
}
