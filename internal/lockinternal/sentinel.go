package lockinternal

import (
	"context"
	"crypto/tls"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// WatchMasterSwitch calls fn each time one of the Sentinels at addrs
// announces a new master for the master set named master (+switch-master),
// until the returned stop is called; stop waits for the watchers to end.
// tlsConfig (nil for none) and timeout apply to the connections to the
// Sentinels.
//
// A holder renews at once on it (lock.Watchdog.RenewNow): a Sentinel client
// follows the switch on its own, but only for its next call, and the
// promoted replica's copy of the lease runs out a TTL after the last renewal
// it replicated, which can come before the next periodic renewal (Sentinel
// confirms a promotion by polling, about a second, while the old master
// takes and loses the renewals sent meanwhile).
func WatchMasterSwitch(addrs []string, master string, tlsConfig *tls.Config, timeout time.Duration, fn func()) (stop func()) {
	if len(addrs) == 0 || master == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var closers []func() error
	for _, addr := range addrs {
		c := redis.NewSentinelClient(&redis.Options{
			Addr: strings.TrimSpace(addr), TLSConfig: tlsConfig,
			DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
			DisableIdentity: true, Protocol: 2, MaxRetries: -1,
			DialerRetries: 1, DialerRetryTimeout: 50 * time.Millisecond,
		})
		ps := c.Subscribe(ctx, "+switch-master")
		closers = append(closers, ps.Close, c.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for msg := range ps.Channel() {
				// "<name> <old ip> <old port> <new ip> <new port>"
				if name, _, _ := strings.Cut(msg.Payload, " "); name == master {
					fn()
				}
			}
		}()
	}
	return func() {
		cancel()
		for _, c := range closers {
			_ = c()
		}
		wg.Wait()
	}
}
