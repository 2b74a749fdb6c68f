package once

import (
	_ "embed"

	"github.com/lockctl/lockctl/internal/luascript"
	"github.com/lockctl/lockctl/internal/scriptcmds"
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

	claimScript    = luascript.New(claimLua)
	renewScript    = luascript.New(renewLua)
	completeScript = luascript.New(completeLua)
	abandonScript  = luascript.New(abandonLua)
	getScript      = luascript.New(getLua)
)

// ScriptCommands lists, sorted, the Redis commands the once scripts call,
// which the connected user must be allowed on once keys (an ACL applies
// inside scripts too).
func ScriptCommands() []string {
	return scriptcmds.Calls(claimLua, renewLua, completeLua, abandonLua, getLua)
}
