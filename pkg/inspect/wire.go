package inspect

import "github.com/lockctl/lockctl/internal/lockinternal"

// The stored values and Redisson hashes a scan reads, as lock.Holders:
// pkg/lock's own conversions of what internal/lockwire parses.
var (
	parseValue       = lockinternal.ParseValue
	parseRedisson    = lockinternal.ParseRedisson
	parseRedissonAny = lockinternal.ParseRedissonAny
	parseRedissonRW  = lockinternal.ParseRedissonRW
)
