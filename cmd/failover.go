package cmd

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// electionTime is what a failover takes beyond noticing the master is down:
// the election (a Cluster replica waits 0.5-1s and more by rank; Sentinels
// elect a leader), the promotion, and clients learning of it.
const electionTime = time.Second

// clusterFailoverTime estimates how long a Cluster's slot stays unwritable
// when its master dies: cluster-node-timeout (after which the master is
// marked failing) plus the election. ok is false when the setting cannot
// be read (an ACL that refuses CONFIG, a managed service), and the caller
// then says nothing.
func clusterFailoverTime(ctx context.Context, c redis.UniversalClient) (d time.Duration, ok bool) {
	m, err := c.ConfigGet(ctx, "cluster-node-timeout").Result()
	if err != nil {
		return 0, false
	}
	ms, err := strconv.ParseInt(m["cluster-node-timeout"], 10, 64)
	if err != nil || ms <= 0 {
		return 0, false
	}
	return time.Duration(ms)*time.Millisecond + electionTime, true
}

// sentinelFailoverTime estimates how long the --sentinel-master set stays
// unwritable when its master dies: the first --sentinel that answers
// SENTINEL MASTER gives down-after-milliseconds, plus the election and
// promotion. ok is false when none answers (or an ACL refuses it).
func (f *Factory) sentinelFailoverTime(ctx context.Context) (d time.Duration, ok bool) {
	for _, addr := range f.G.Sentinel {
		o, err := f.sentinelOptions(addr)
		if err != nil {
			return 0, false
		}
		c := redis.NewSentinelClient(o)
		m, err := c.Master(ctx, f.G.SentinelMaster).Result()
		_ = c.Close() // a probe: its answer is all that matters
		if err != nil {
			continue
		}
		ms, err := strconv.ParseInt(m["down-after-milliseconds"], 10, 64)
		if err != nil || ms <= 0 {
			return 0, false
		}
		return time.Duration(ms)*time.Millisecond + electionTime, true
	}
	return 0, false
}
