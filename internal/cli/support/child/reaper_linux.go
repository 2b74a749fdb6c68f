package child

import (
	"sync"

	"golang.org/x/sys/unix"
)

var subreaper sync.Once

// becomeSubreaper makes this process the reaper of its orphaned
// descendants (PR_SET_CHILD_SUBREAPER), so that when a group member's
// parent dies before it, the member is reparented to lockctl rather than to
// init, and groupAlive can reap it once it exits. Without this a dead
// orphan whose new parent is slow to reap (or never reaps: a shell or
// lockctl itself as PID 1 of a container) stays a zombie in the group and
// would hold the lock forever. It applies to the whole process, which is
// fine for a CLI whose only children are the ones it supervises.
// Failure is ignored: without it, reaping falls back to init.
func becomeSubreaper() {
	subreaper.Do(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) })
}
