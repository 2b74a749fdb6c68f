package lock

import (
	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/lib/scriptcmds"
)

// ScriptCommands lists, sorted, the Redis commands that the lock scripts
// call on the server, which the connected user must be allowed to run
// besides EVALSHA and EVAL themselves (an ACL applies inside scripts too).
func ScriptCommands() []string {
	return scriptcmds.Calls(fenceLua, holderLua, acquireFastLua, acquireLua, renewLua, releaseFastLua, releaseLua, inspectLua, checkLua, fenceNextLua,
		auxLua, semAcquireLua, semRenewLua, semReleaseLua, fifoAcquireLua, fifoLeaveLua, raiseLua, reenterLua, lockwire.WakeLua,
		multiAcquireLua, multiRenewLua, multiReleaseLua, handoffFastLua, handoffLua)
}
