package cmd

import (
	"context"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// sentinelOptions are the options of a client of the one Sentinel at addr
// (not of the master it names): clientOptions' settings, and the TLS of
// the --sentinel client, whose own connections to the Sentinels go without
// a password as these do.
func (f *Factory) sentinelOptions(addr string) (*redis.Options, error) {
	tlsCfg, err := f.tlsConfig(false, "")
	if err != nil {
		return nil, err
	}
	o := &redis.Options{Addr: strings.TrimSpace(addr), TLSConfig: tlsCfg}
	clientOptions(&f.G, o)
	return o, nil
}

// OnMasterSwitch calls fn each time a --sentinel announces a new master for
// --sentinel-master (+switch-master), until the returned stop is called;
// stop waits for the watchers to end. Without --sentinel it does nothing.
//
// A holder renews at once on it (lock.Lease.RenewNow): a Sentinel client
// follows the switch on its own, but only for its next call, and the
// promoted replica's copy of the lease runs out a TTL after the last renewal
// it replicated, which can come before the next periodic renewal (Sentinel
// confirms a promotion by polling, about a second, while the old master
// takes and loses the renewals sent meanwhile).
func (f *Factory) OnMasterSwitch(fn func()) (stop func()) {
	g := &f.G
	if len(g.Sentinel) == 0 || g.SentinelMaster == "" {
		return func() {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var closers []func() error
	for _, addr := range g.Sentinel {
		o, err := f.sentinelOptions(addr)
		if err != nil {
			break
		}
		c := redis.NewSentinelClient(o)
		ps := c.Subscribe(ctx, "+switch-master")
		closers = append(closers, ps.Close, c.Close)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for msg := range ps.Channel() {
				// "<name> <old ip> <old port> <new ip> <new port>"
				if name, _, _ := strings.Cut(msg.Payload, " "); name == g.SentinelMaster {
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
