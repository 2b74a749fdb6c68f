package limit

import (
	_ "embed"
	"sync"

	"github.com/lockctl/lockctl/internal/lib/luascript"
	"github.com/lockctl/lockctl/internal/lib/scriptcmds"
)

var (
	//go:embed prelude.lua
	prelude string
	//go:embed gcra.lua
	gcraLua string
	//go:embed sliding_log.lua
	slidingLogLua string
	//go:embed sliding_window.lua
	slidingWindowLua string
	//go:embed token_bucket.lua
	tokenBucketLua string
)

// scripts share the prelude (server time, exact integer division). Built
// on first use, not at start-up: most invocations never limit anything.
var scripts = sync.OnceValue(func() map[Algorithm]*luascript.Script {
	return map[Algorithm]*luascript.Script{
		GCRA:          luascript.New(prelude + gcraLua),
		SlidingLog:    luascript.New(prelude + slidingLogLua),
		SlidingWindow: luascript.New(prelude + slidingWindowLua),
		TokenBucket:   luascript.New(prelude + tokenBucketLua),
	}
})

// ScriptCommands lists, sorted, the Redis commands the rate-limit scripts
// call, which the connected user must be allowed on limit keys (an ACL
// applies inside scripts too).
func ScriptCommands() []string {
	return scriptcmds.Calls(prelude, gcraLua, slidingLogLua, slidingWindowLua, tokenBucketLua)
}
