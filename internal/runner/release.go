package runner

import (
	"context"

	"github.com/lockctl/lockctl/pkg/lock"
)

// releaseThrough gives lease, granted by own, back through l, and returns
// how many holds of its token remain. l records the release as its events
// say (Job.LockerFor): when it is not own, the lease is resumed on l by its
// name and token first, so that l records it.
func releaseThrough(ctx context.Context, l *lock.Locker, lease *lock.Lease, own *lock.Locker) (int, error) {
	if l != nil && l != own {
		resumed, err := l.Resume(ctx, lease.Name, lease.Token)
		if err != nil {
			return 0, err
		}
		lease = resumed
	}
	if err := lease.Release(ctx); err != nil {
		return 0, err
	}
	return lease.Holds, nil
}
