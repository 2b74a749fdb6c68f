package lockinternal

import (
	"context"
	"crypto/tls"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// electionTime is what a failover takes beyond noticing the master is down:
// the election (a Cluster replica waits 0.5-1s and more by rank; Sentinels
// elect a leader), the promotion, and clients learning of it.
const electionTime = time.Second

// ClusterFailoverTime estimates how long a Cluster's slot stays unwritable
// when its master dies: cluster-node-timeout (after which the master is
// marked failing) plus the election. ok is false when the setting cannot
// be read (an ACL that refuses CONFIG, a managed service), and the caller
// then says nothing.
func ClusterFailoverTime(ctx context.Context, c redis.UniversalClient) (d time.Duration, ok bool) {
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

// SentinelFailoverTime estimates how long a Sentinel-managed master set
// stays unwritable when its master dies: the first Sentinel at addrs that
// answers SENTINEL MASTER gives down-after-milliseconds, plus the election
// and promotion. ok is false when none answers (or an ACL refuses it).
func SentinelFailoverTime(ctx context.Context, addrs []string, master string, tlsConfig *tls.Config, timeout time.Duration) (d time.Duration, ok bool) {
	for _, addr := range addrs {
		c := redis.NewSentinelClient(&redis.Options{
			Addr: strings.TrimSpace(addr), TLSConfig: tlsConfig,
			DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
			DisableIdentity: true, Protocol: 2, MaxRetries: -1,
		})
		m, err := c.Master(ctx, master).Result()
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
