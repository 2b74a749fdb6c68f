package lock

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/lockinternal/hook"
)

// lockctl's own packages reach these through internal/lockinternal; they
// are no part of the library's API.
func init() {
	hook.NewHeldError = newHeldError
	hook.StartWatchdog = startWatchdog
	hook.ReleaseHold = func(ctx context.Context, l *Locker, lease *Lease) (int, error) {
		return lease.release(ctx, l)
	}
	hook.HeldSince = func(ctx context.Context, l *Locker, name, token string) (time.Time, bool, error) {
		return l.heldSince(ctx, name, token)
	}
	hook.ParseValue = parseValue
	hook.ParseRedisson = parseRedisson
	hook.ParseRedissonAny = parseRedissonAny
	hook.ParseRedissonRW = parseRedissonRW
	hook.DataErrorOf = dataErrorOf
	hook.ScriptCommands = scriptCommands
}
