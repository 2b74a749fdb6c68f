package once

import (
	_ "embed"

	"github.com/lockctl/lockctl/internal/scriptcmds"

	"github.com/redis/go-redis/v9"
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

	claimScript    = redis.NewScript(claimLua)
	renewScript    = redis.NewScript(renewLua)
	completeScript = redis.NewScript(completeLua)
	abandonScript  = redis.NewScript(abandonLua)
	getScript      = redis.NewScript(getLua)
)

// ScriptCommands lists, sorted, the Redis commands the once scripts call,
// which the connected user must be allowed on once keys (an ACL applies
// inside scripts too).
func ScriptCommands() []string {
	return scriptcmds.Calls(claimLua, renewLua, completeLua, abandonLua, getLua)
}
