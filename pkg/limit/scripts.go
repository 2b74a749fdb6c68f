package limit

import (
	_ "embed"

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

// scripts share the prelude (server time, exact integer division).
var scripts = map[Algorithm]*redis.Script{
	GCRA:          redis.NewScript(prelude + gcraLua),
	SlidingLog:    redis.NewScript(prelude + slidingLogLua),
	SlidingWindow: redis.NewScript(prelude + slidingWindowLua),
	TokenBucket:   redis.NewScript(prelude + tokenBucketLua),
}
