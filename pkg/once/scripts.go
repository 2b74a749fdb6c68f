package once

import (
	_ "embed"

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
