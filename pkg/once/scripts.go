package once

import (
	_ "embed"
	"sync"

	"github.com/lockctl/lockctl/internal/lib/luascript"
	"github.com/lockctl/lockctl/internal/lib/scriptcmds"
)

var (
	//go:embed claim.lua
	claimLua string
	//go:embed renew.lua
	renewLua string
	//go:embed complete.lua
	completeLua string
	//go:embed abandon.lua
	abandonLua string
	//go:embed get.lua
	getLua string
	//go:embed resolve.lua
	resolveLua string
	//go:embed unknown.lua
	unknownLua string

	// Each script's SHA-1 is computed on its first use, not at start-up:
	// every lockctl invocation links these scripts, few run them.
	claimScript    = lazyScript(&claimLua)
	renewScript    = lazyScript(&renewLua)
	completeScript = lazyScript(&completeLua)
	abandonScript  = lazyScript(&abandonLua)
	getScript      = lazyScript(&getLua)
	resolveScript  = lazyScript(&resolveLua)
	unknownScript  = lazyScript(&unknownLua)
)

func lazyScript(src *string) func() *luascript.Script {
	return sync.OnceValue(func() *luascript.Script { return luascript.New(*src) })
}

// ScriptCommands lists, sorted, the Redis commands the once scripts call,
// which the connected user must be allowed on once keys (an ACL applies
// inside scripts too). resolve.lua, an operator's command that also
// writes to the audit stream, has ResolveScriptCommands.
func ScriptCommands() []string {
	return scriptcmds.Calls(claimLua, renewLua, completeLua, abandonLua, getLua, unknownLua)
}

// ResolveScriptCommands lists, sorted, the Redis commands `once resolve`'s
// script calls on a once key and (XADD, XDEL) the audit stream: those of
// ScriptCommands, and XADD and XDEL, which doctor checks on the audit
// stream for inspect force-release, so doctor needs no family of its own
// for it.
func ResolveScriptCommands() []string { return scriptcmds.Calls(resolveLua) }
