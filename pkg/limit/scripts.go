package limit

import (
	_ "embed"
	"sync"

	"github.com/lockctl/lockctl/internal/scriptcmds"

	"github.com/redis/go-redis/v9"
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
var scripts = sync.OnceValue(func() map[Algorithm]*redis.Script {
	return map[Algorithm]*redis.Script{
		GCRA:          redis.NewScript(prelude + gcraLua),
		SlidingLog:    redis.NewScript(prelude + slidingLogLua),
		SlidingWindow: redis.NewScript(prelude + slidingWindowLua),
		TokenBucket:   redis.NewScript(prelude + tokenBucketLua),
	}
})

// ScriptCommands lists, sorted, the Redis commands the rate-limit scripts
// call, which the connected user must be allowed on limit keys (an ACL
// applies inside scripts too).
func ScriptCommands() []string {
	return scriptcmds.Calls(prelude, gcraLua, slidingLogLua, slidingWindowLua, tokenBucketLua)
}
