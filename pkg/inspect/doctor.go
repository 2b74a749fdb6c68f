package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/redis/go-redis/v9"
)

// Status is a check's verdict.
type Status string

// The verdicts a Check can have.
const (
	StatusOK   Status = "ok"   // safe as it is
	StatusWarn Status = "warn" // a risk, or a setting Doctor could not read
	StatusFail Status = "fail" // unsafe for locks, or the server is unusable
)

// Check is one verdict of Doctor: what was checked, the verdict, why, and
// what to do about it (Hint is empty when there is nothing to do).
type Check struct {
	Check   string
	Status  Status
	Message string
	Hint    string
	// Node and Role say which server of a Cluster the verdict is about
	// ("127.0.0.1:7000", "master" or "replica"); both are empty for a
	// verdict on the whole deployment (one server, or a Cluster's ACL
	// and state).
	Node string
	Role string
}

// Latency above which the round-trip check warns: every acquire, renewal
// and release pays it, and the lease margin must cover it many times over.
const slowRTT = 20 * time.Millisecond

// Doctor checks the deployment behind the Inspector's client for lock
// safety and returns one verdict per check, in a fixed order: reachable,
// latency, clock, version, role, mode, maxmemory-policy, persistence,
// replication, acl. Settings it is not permitted to read (CONFIG GET, INFO
// under a restricted ACL user) give warnings, not failures.
//
// The error is non-nil only when the server cannot be used at all (not
// reachable, authentication refused); the checks then hold the failed
// "reachable" verdict alone.
//
// On a Cluster the server checks run on every master and replica the
// Cluster names, each verdict naming its node and role, so that an
// operator sees every server was checked; a node that cannot be reached
// fails its "reachable" verdict without hiding the others. A "cluster"
// verdict reports the cluster's state, and the error is ErrClusterDown
// when a node says the cluster is down (it then refuses every lock).
func (in *Inspector) Doctor(ctx context.Context) ([]Check, error) {
	if cc, ok := in.c.(*redis.ClusterClient); ok {
		return in.clusterDoctor(ctx, cc)
	}
	out, info, err := in.serverChecks(ctx, in.c, false)
	if err != nil {
		return out, err
	}
	return append(out, in.aclCheck(ctx, info.acl7)), nil
}

// serverInfo is what the server checks learnt of a server.
type serverInfo struct {
	role string // "master", "replica", "" when unknown
	acl7 bool   // Redis 7 or later: ACL DRYRUN
}

// serverChecks runs every check but the ACL's on one server. inCluster:
// the server is a node of a Cluster the client follows, where a replica
// is expected (it takes over on failover) rather than a misdirected URL.
func (in *Inspector) serverChecks(ctx context.Context, c redis.UniversalClient, inCluster bool) ([]Check, serverInfo, error) {
	var (
		out  checkList
		info serverInfo
	)
	if err := out.reachable(ctx, c, inCluster); err != nil {
		return out, info, err
	}
	out = append(out, clockCheck(ctx, c, in.now))

	server, serverErr := infoSection(ctx, c, "server")
	repl, replErr := infoSection(ctx, c, "replication")
	info.role = out.identity(server, serverErr, repl, replErr, inCluster)

	cfg, cfgErr := configGet(ctx, c, "maxmemory-policy", "maxmemory", "appendonly", "appendfsync", "save", "min-replicas-to-write")
	out.memory(cfg, cfgErr)
	out.persistence(cfg, cfgErr)
	if replErr == nil {
		out.replication(cfg, cfgErr, repl, info.role, inCluster)
	}

	info.acl7 = serverErr == nil && versionAtLeast(server["redis_version"], 7)
	return out, info, nil
}

// checkList collects the verdicts of serverChecks in order.
type checkList []Check

func (l *checkList) add(name string, st Status, hint, format string, args ...any) {
	*l = append(*l, Check{Check: name, Status: st, Message: fmt.Sprintf(format, args...), Hint: hint})
}

// Hints for settings doctor is not permitted to read.
const (
	infoHint = "grant the user INFO (+info), or run doctor as an admin user"
	cfgHint  = "grant the user CONFIG GET (+config|get), or run doctor as an admin user"
)

// reachable pings the server five times: the "reachable" verdict, then the
// "latency" one from the median round trip. The error is the server's
// when it cannot be used; the failed "reachable" verdict is then the last.
func (l *checkList) reachable(ctx context.Context, c redis.UniversalClient, inCluster bool) error {
	add := l.add
	rtts := make([]time.Duration, 0, 5)
	for i := 0; i < 5; i++ {
		start := time.Now()
		pong, err := c.Ping(ctx).Result()
		if err == nil && pong != "PONG" {
			// A Redis answers PING with PONG and nothing else: whatever
			// answered is no Redis (an impostor answering +OK to all).
			err = redisreply.Unexpected("reply to PING", pong)
		}
		if err != nil && isNoPerm(err) {
			// Logged in, and the server answered: a user without PING
			// is the acl check's business, which names what to grant.
			rtts = append(rtts, time.Since(start))
			continue
		}
		if err != nil {
			hint := "check --url, the password (LOCKCTL_PASSWORD, --password-file) and that redis-server runs there"
			if inCluster {
				hint = "start this node again, or let its replica take over (CLUSTER NODES shows its state); its slots are not served meanwhile"
			}
			add("reachable", StatusFail, hint, "%v", err)
			return err
		}
		rtts = append(rtts, time.Since(start))
	}
	sort.Slice(rtts, func(i, j int) bool { return rtts[i] < rtts[j] })
	add("reachable", StatusOK, "", "the server answered")
	if rtt := rtts[len(rtts)/2]; rtt > slowRTT {
		add("latency", StatusWarn, "run lockctl near the server, or use TTLs of many seconds so renewals have room",
			"round trip %s (median of 5): every acquire, renewal and release waits this long", rtt.Round(10*time.Microsecond))
	} else {
		add("latency", StatusOK, "", "round trip %s (median of 5)", rtt.Round(10*time.Microsecond))
	}
	return nil
}

// identity adds the verdicts on what the server is, from INFO server and
// INFO replication: "version", "role" and "mode"; it returns the role
// ("master", "replica", or "" when INFO replication cannot be read).
func (l *checkList) identity(server map[string]string, serverErr error, repl map[string]string, replErr error, inCluster bool) (role string) {
	add := l.add
	if serverErr != nil {
		add("version", StatusWarn, infoHint, "cannot read INFO server: %v", serverErr)
	} else {
		v := server["redis_version"]
		maj, min := parseVersion(v)
		switch {
		case maj < 6 || (maj == 6 && min < 2):
			add("version", StatusWarn, "upgrade to Redis 6.2 or later", "Redis %s: older than 6.2; ACL checks and some commands lockctl uses are missing", v)
		default:
			add("version", StatusOK, "", "Redis %s", v)
		}
	}

	switch {
	case replErr != nil:
		add("role", StatusWarn, infoHint, "cannot read INFO replication: %v", replErr)
	case (repl["role"] == "slave" || repl["role"] == "replica") && inCluster:
		role = "replica"
		add("role", StatusOK, "", "replica of %s:%s: a Cluster replica, which takes over its master's slots on failover (lockctl writes to masters only)",
			repl["master_host"], repl["master_port"])
	case repl["role"] == "slave" || repl["role"] == "replica":
		role = "replica"
		add("role", StatusFail, "point --url at the master, or use --sentinel so lockctl follows failovers",
			"replica of %s:%s: it refuses writes (READONLY), so no lock can be taken here", repl["master_host"], repl["master_port"])
	default:
		role = "master"
		add("role", StatusOK, "", "master")
	}

	if serverErr == nil {
		switch m := server["redis_mode"]; m {
		case "sentinel":
			add("mode", StatusFail, "use --sentinel H:P --sentinel-master NAME instead of --url", "this is a Sentinel, which stores no keys")
		case "cluster":
			add("mode", StatusOK, "", "cluster: every lock's fence, queue and semaphore keys share its slot")
		default:
			add("mode", StatusOK, "", "%s", orDefault(m, "standalone"))
		}
	}

	return role
}

// memory adds the "maxmemory-policy" verdict: whether locks can be evicted.
func (l *checkList) memory(cfg map[string]string, cfgErr error) {
	add := l.add
	if cfgErr != nil {
		add("maxmemory-policy", StatusWarn, cfgHint, "cannot read the configuration: %v", cfgErr)
	} else {
		p, maxmem := cfg["maxmemory-policy"], cfg["maxmemory"]
		limited := maxmem != "" && maxmem != "0"
		switch {
		case strings.HasPrefix(p, "allkeys-"):
			st := StatusFail
			why := "with maxmemory set it evicts any key under memory pressure: held locks vanish (a second holder gets them) and fence check records too (a stale fence is accepted again); " +
				"an evicted fence counter starts again from the server's clock, so fences stay ordered"
			if !limited {
				st, why = StatusWarn, "no maxmemory is set now, but once one is, any key can be evicted: held locks and fence check records vanish (fences stay ordered)"
			}
			add("maxmemory-policy", st, "CONFIG SET maxmemory-policy noeviction (or keep locks on a Redis of their own)", "%s: %s", p, why)
		case strings.HasPrefix(p, "volatile-"):
			st := StatusWarn
			if !limited {
				st = StatusOK
			}
			add("maxmemory-policy", st, "CONFIG SET maxmemory-policy noeviction (or keep locks on a Redis of their own)",
				"%s: keys with a TTL, held locks included, can be evicted before they expire (a second holder gets them); fence counters and fence check records have no TTL and are never evicted", p)
		default:
			add("maxmemory-policy", StatusOK, "", "%s", orDefault(p, "noeviction"))
		}
	}

}

// persistence adds the "persistence" verdict: what a restart keeps.
func (l *checkList) persistence(cfg map[string]string, cfgErr error) {
	add := l.add
	if cfgErr != nil {
		add("persistence", StatusWarn, cfgHint, "cannot read the configuration: %v", cfgErr)
	} else {
		aof, save := cfg["appendonly"] == "yes", strings.TrimSpace(cfg["save"])
		switch {
		case aof && cfg["appendfsync"] == "always":
			add("persistence", StatusOK, "", "AOF on (appendfsync always): a restart keeps every lock, fence counter and fence check record")
		case aof:
			add("persistence", StatusWarn, "CONFIG SET appendfsync always, where fences must stay ordered across a crash",
				"AOF on (appendfsync %s): a crash loses up to a second of writes, locks, fence counter increments and fence check records included; "+
					"fences stay ordered by the clock floor unless the clock was stepped back by more than the restart took (about %s locally)", cfg["appendfsync"], clockStep)
		case save != "":
			add("persistence", StatusWarn, "CONFIG SET appendonly yes and appendfsync always, so a restart keeps locks, fence counters and fence check records",
				"RDB snapshots only (save %q): a restart rolls locks, fence counters and fence check records back to the last snapshot (a stale fence is accepted again, expired locks revive); "+
					"fences stay ordered by the clock floor unless the clock was stepped back by more than the restart took (about %s locally)", save, clockStep)
		default:
			add("persistence", StatusFail, "CONFIG SET appendonly yes and appendfsync always (and CONFIG REWRITE)",
				"none: a restart drops every lock (a second holder gets each at once) and every fence check record (a stale fence is accepted again); "+
					"fences stay ordered by the clock floor unless the clock was stepped back by more than the restart took (about %s locally)", clockStep)
		}
	}

}

// replication adds the "replication" verdict: what a failover can lose.
func (l *checkList) replication(cfg map[string]string, cfgErr error, repl map[string]string, role string, inCluster bool) {
	add := l.add
	n, _ := strconv.Atoi(repl["connected_slaves"])
	minw := cfg["min-replicas-to-write"]
	switch {
	case n == 0 && role == "replica" && inCluster:
		add("replication", StatusOK, "", "a replica itself: its master's replication verdict covers it")
	case n == 0:
		add("replication", StatusWarn, "fine for one server you can afford to lose; otherwise add a replica and Sentinel",
			"no replicas: if this server is lost, every lock and fence counter goes with it")
	case cfgErr != nil:
		add("replication", StatusWarn, cfgHint, "%d replica(s); cannot read min-replicas-to-write: %v", n, cfgErr)
	case minw == "" || minw == "0":
		add("replication", StatusWarn, "CONFIG SET min-replicas-to-write 1 (with min-replicas-max-lag): only that stops a master cut off from its replicas from taking writes, anyone's; "+
			"--wait-replicas 1 makes a holder give up its lease when its own writes are not replicated (a grant is given back, an unacknowledged renewal does not count), but does not stop another client's stale write on that master",
			"%d replica(s), min-replicas-to-write 0: a failover can lose locks and fence check records the master acknowledged (replication is asynchronous); fences stay ordered while the servers' clocks agree", n)
	default:
		add("replication", StatusOK, "", "%d replica(s), min-replicas-to-write %s", n, minw)
	}
}

func toAny(s []string) []any {
	a := make([]any, len(s))
	for i, v := range s {
		a[i] = v
	}
	return a
}

// clockStep is about how long a local restart of Redis takes, and so the
// largest step back of the server's clock that the fences' clock floor
// tolerates across a crash that loses the counter's latest increments (no
// persistence, RDB, AOF everysec): fences issued after the restart start
// from the clock, and are greater than those issued before only if the
// clock, stepped back, still reads later than it did then. A failover takes
// longer (seconds), so it tolerates more. A server clock this far from a
// synchronised host's is stepped by about as much once NTP corrects it.
const clockStep = 100 * time.Millisecond

// clockCheck compares the server's clock with this host's (now). The
// difference is measured within half the round trip; only what is beyond
// that counts.
func clockCheck(ctx context.Context, c redis.UniversalClient, now func() time.Time) Check {
	ck := Check{Check: "clock"}
	before := now()
	srv, err := c.Time(ctx).Result()
	if err != nil {
		ck.Status, ck.Message, ck.Hint = StatusWarn, fmt.Sprintf("cannot read the server's clock: %v", err), "grant the user TIME (+time)"
		return ck
	}
	rtt := now().Sub(before)
	d := srv.Sub(before.Add(rtt / 2))
	if d.Abs()-rtt/2 > clockStep {
		ck.Status = StatusWarn
		ck.Message = fmt.Sprintf("the server's clock is %s off this host's: when NTP corrects it, it steps by about that much, "+
			"and a crash that loses the fence counter (no persistence, RDB, AOF everysec) around such a step back can hand out fences "+
			"lower than earlier ones; the clock floor tolerates a step back shorter than the restart (about %s for a local one)",
			d.Round(time.Millisecond), clockStep)
		ck.Hint = "run NTP (chrony, systemd-timesyncd) on the Redis servers and here; where fences must survive a crash, appendonly yes with appendfsync always"
		return ck
	}
	ck.Status, ck.Message = StatusOK, fmt.Sprintf("server clock within %s of this host's (the step back the fences' clock floor tolerates at a local restart)", clockStep)
	return ck
}

func orDefault(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

// infoSection parses one INFO section into fields.
func infoSection(ctx context.Context, c redis.UniversalClient, section string) (map[string]string, error) {
	s, err := c.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			m[k] = v
		}
	}
	return m, nil
}

// configGet reads the named parameters; a NOPERM or a server without
// CONFIG (some managed services rename it) is returned as the error.
func configGet(ctx context.Context, c redis.UniversalClient, names ...string) (map[string]string, error) {
	out := map[string]string{}
	for _, n := range names {
		m, err := c.ConfigGet(ctx, n).Result()
		if err != nil {
			return nil, err
		}
		for k, v := range m {
			out[k] = v
		}
	}
	if len(out) == 0 {
		return nil, errors.New("CONFIG GET returned nothing")
	}
	return out, nil
}

func parseVersion(v string) (major, minor int) {
	parts := strings.SplitN(v, ".", 3)
	if len(parts) >= 1 {
		major, _ = strconv.Atoi(parts[0])
	}
	if len(parts) >= 2 {
		minor, _ = strconv.Atoi(parts[1])
	}
	return major, minor
}

func versionAtLeast(v string, major int) bool {
	m, _ := parseVersion(v)
	return m >= major
}
