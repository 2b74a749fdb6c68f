package scripttest

import (
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/faultproxy"
	"github.com/rogpeppe/go-internal/testscript"
)

var (
	proxiesMu sync.Mutex
	proxies   = map[*testscript.TestScript]*faultproxy.Proxy{}
)

// proxy: put a fault proxy (internal/testkit/faultproxy) in front of the script's
// redis-server and export PROXY_URL and PROXY_ADDR; lockctl pointed at
// PROXY_URL sees the faults `proxy-set` chooses, while `redis` and
// redis-cli on REDIS_PORT still reach the server directly.
func cmdProxy(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: proxy")
	}
	p, err := faultproxy.New(Server(ts).Addr)
	ts.Check(err)
	ts.Defer(func() { p.Close() })
	ts.Setenv("PROXY_ADDR", p.Addr())
	ts.Setenv("PROXY_URL", "redis://"+p.Addr()+"/0")
	proxiesMu.Lock()
	proxies[ts] = p
	proxiesMu.Unlock()
	ts.Defer(func() {
		proxiesMu.Lock()
		delete(proxies, ts)
		proxiesMu.Unlock()
	})
}

// proxy-set latency D | slow D | blackhole on|off | reset: change the
// proxy's fault now (see faultproxy.Proxy); `slow D` delays every reply by
// D, `latency D` every chunk both ways, 0 clears either.
func cmdProxySet(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: proxy-set latency D | slow D | blackhole on|off | reset")
	}
	proxiesMu.Lock()
	p := proxies[ts]
	proxiesMu.Unlock()
	if p == nil {
		ts.Fatalf("no proxy: run `proxy` first")
	}
	arg := func() string {
		if len(args) != 2 {
			ts.Fatalf("usage: proxy-set %s VALUE", args[0])
		}
		return args[1]
	}
	dur := func() time.Duration {
		d, err := time.ParseDuration(arg())
		ts.Check(err)
		return d
	}
	switch args[0] {
	case "latency":
		p.SetLatency(dur())
	case "slow":
		p.SetSlowReplies(dur())
	case "blackhole":
		p.Blackhole(arg() == "on")
	case "reset":
		p.Reset()
	default:
		ts.Fatalf("proxy-set: unknown fault %q", args[0])
	}
}
