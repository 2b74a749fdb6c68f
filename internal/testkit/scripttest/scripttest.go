// Package scripttest holds the testscript setup shared by lockctl's
// black-box CLI scripts (testdata/script/*.txtar): a private redis-server per
// script and a few commands that keep scripts short.
package scripttest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"
	"github.com/rogpeppe/go-internal/testscript"
)

const serverKey = "redistest.server"

// Setup starts a redis-server for the script and exports:
// LOCKCTL_URL, REDIS_ADDR, REDIS_PORT. HOME and XDG_CONFIG_HOME point into
// the script's work directory so no user config leaks in.
func Setup(env *testscript.Env) error {
	s, err := redistest.Start(nil)
	if err != nil {
		return err
	}
	env.Values[serverKey] = s
	env.Defer(s.Stop)
	env.Setenv("LOCKCTL_URL", s.URL)
	env.Setenv("REDIS_ADDR", s.Addr)
	env.Setenv("REDIS_PORT", strconv.Itoa(s.Port))
	env.Setenv("HOME", env.WorkDir)
	env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
	env.Setenv("NO_COLOR", "")
	env.Setenv("REDIS_URL", "")
	return nil
}

// Server returns the script's redis-server.
func Server(ts *testscript.TestScript) *redistest.Server {
	return ts.Value(serverKey).(*redistest.Server)
}

// Cmds are the custom script commands.
var Cmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"redis":       cmdRedis,
	"redis-until": cmdRedisUntil,
	"redis-sub":   cmdRedisSub,
	"waitfile":    cmdWaitFile,
	"redis-sig":   cmdRedisSig,
	"exits":       cmdExits,
	"jsonlog":     cmdJSONLog,
	"sleep":       cmdSleep,
	"cluster":     cmdCluster,
	"sentinel":    cmdSentinel,
	"servers":     cmdServers,
	"servers-sig": cmdServersSig,

	"redis-restart": cmdRedisRestart,
	"replica":       cmdReplica,
	"replica-sig":   cmdReplicaSig,
	"replica-redis": cmdReplicaRedis,
	"need":          cmdNeed,
	"node-exporter": cmdNodeExporter,
	"httpget":       cmdHTTPGet,
	"freeport":      cmdFreePort,
	"waithttp":      cmdWaitHTTP,
	"prometheus":    cmdPrometheus,
	"promql":        cmdPromQL,
	"idleconns":     cmdIdleConns,
	"dashboard":     cmdDashboard,
	"pty-start":     cmdPtyStart,
	"pty-expect":    cmdPtyExpect,
	"pty-send":      cmdPtySend,
	"pty-shows":     cmdPtyShows,
	"pty-wait":      cmdPtyWait,
	"maxcols":       cmdMaxCols,
	"proxy":         cmdProxy,
	"proxy-set":     cmdProxySet,
}

// redis-restart [ARGS...]: crash the script's redis-server and start it
// again on the same port with ARGS added (see redistest.Server.Restart);
// without persistence every key is gone.
func cmdRedisRestart(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("usage: redis-restart [REDIS-SERVER ARGS...]")
	}
	ts.Check(Server(ts).Restart(args...))
}

// replica: start a replica of the script's server, wait until it has
// synchronised, and export REPLICA_URL and REPLICA_ADDR. `replica-sig
// STOP|CONT|KILL` signals it; `replica-redis CMD ARGS...` runs a command on
// it as `redis` does on the master (REPLICAOF NO ONE promotes it).
func cmdReplica(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: replica")
	}
	r, err := redistest.StartReplica(Server(ts))
	ts.Check(err)
	ts.Defer(r.Stop)
	replicasMu.Lock()
	replicas[ts] = r
	replicasMu.Unlock()
	ts.Defer(func() {
		replicasMu.Lock()
		delete(replicas, ts)
		replicasMu.Unlock()
	})
	ts.Setenv("REPLICA_URL", r.URL)
	ts.Setenv("REPLICA_ADDR", r.Addr)
}

var (
	replicasMu sync.Mutex
	replicas   = map[*testscript.TestScript]*redistest.Server{}
)

func replicaOf(ts *testscript.TestScript) *redistest.Server {
	replicasMu.Lock()
	defer replicasMu.Unlock()
	r := replicas[ts]
	if r == nil {
		ts.Fatalf("no replica: run `replica` first")
	}
	return r
}

func cmdReplicaSig(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: replica-sig STOP|CONT|KILL")
	}
	ts.Check(replicaOf(ts).Signal(signalByName(ts, args[0])))
}

func cmdReplicaRedis(ts *testscript.TestScript, neg bool, args []string) {
	runRedis(ts, replicaOf(ts), neg, args)
}

// servers N: start N more standalone servers for this script (independent
// masters, as Redlock wants them) and export URL1..URLN, ADDR1..ADDRN and
// REDLOCK_URLS, their URLs joined by commas. `servers-sig I STOP|CONT|KILL`
// signals the I-th of them.
func cmdServers(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: servers N")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	if n < 1 {
		ts.Fatalf("servers: N must be at least 1")
	}
	var urls []string
	var srvs []*redistest.Server
	for i := 1; i <= n; i++ {
		s, err := redistest.Start(nil)
		ts.Check(err)
		ts.Defer(s.Stop)
		srvs = append(srvs, s)
		urls = append(urls, s.URL)
		ts.Setenv("URL"+strconv.Itoa(i), s.URL)
		ts.Setenv("ADDR"+strconv.Itoa(i), s.Addr)
	}
	ts.Setenv("REDLOCK_URLS", strings.Join(urls, ","))
	serversMu.Lock()
	servers[ts] = srvs
	serversMu.Unlock()
	ts.Defer(func() {
		serversMu.Lock()
		delete(servers, ts)
		serversMu.Unlock()
	})
}

var (
	serversMu sync.Mutex
	servers   = map[*testscript.TestScript][]*redistest.Server{}
)

// servers-sig I STOP|CONT|KILL: signal the I-th server that `servers` started.
func cmdServersSig(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: servers-sig I STOP|CONT|KILL")
	}
	i, err := strconv.Atoi(args[0])
	ts.Check(err)
	serversMu.Lock()
	srvs := servers[ts]
	serversMu.Unlock()
	if i < 1 || i > len(srvs) {
		ts.Fatalf("servers-sig: no server %d (started %d)", i, len(srvs))
	}
	ts.Check(srvs[i-1].Signal(signalByName(ts, args[1])))
}

func signalByName(ts *testscript.TestScript, name string) syscall.Signal {
	sig := map[string]syscall.Signal{"STOP": syscall.SIGSTOP, "CONT": syscall.SIGCONT, "KILL": syscall.SIGKILL}[name]
	if sig == 0 {
		ts.Fatalf("unknown signal %q", name)
	}
	return sig
}

// cluster N [replicas]: start an N-master Redis Cluster (with "replicas",
// a replica of each master) for this script and point
// LOCKCTL_CLUSTER at it (CLUSTER_ADDR is the first node).
func cmdCluster(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 || len(args) == 2 && args[1] != "replicas" {
		ts.Fatalf("usage: cluster N [replicas]")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	c, err := redistest.StartCluster(n)
	ts.Check(err)
	ts.Defer(c.Stop)
	if len(args) == 2 {
		// a replica of each master, in sync
		ts.Check(c.AddReplicas())
	}
	ts.Setenv("LOCKCTL_CLUSTER", strings.Join(c.Addrs, ","))
	ts.Setenv("CLUSTER_ADDR", c.Addrs[0])
}

// sentinel NAME [REPLICAS]: start a master (with REPLICAS replicas in sync,
// default none) watched by a sentinel and point LOCKCTL_SENTINEL and
// LOCKCTL_SENTINEL_MASTER at it. SENTINEL_MASTER_URL is the master's own
// URL, SENTINEL_PORT the sentinel's port and SENTINEL_REPLICA_URL the first
// replica's URL, for assertions and `redis-cli -p $SENTINEL_PORT SENTINEL
// FAILOVER NAME`.
func cmdSentinel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: sentinel NAME [REPLICAS]")
	}
	n := 0
	if len(args) == 2 {
		var err error
		n, err = strconv.Atoi(args[1])
		ts.Check(err)
	}
	s, err := redistest.StartSentinelReplicas(args[0], n)
	ts.Check(err)
	ts.Defer(s.Stop)
	ts.Setenv("LOCKCTL_SENTINEL", s.Addr)
	ts.Setenv("LOCKCTL_SENTINEL_MASTER", s.Name)
	ts.Setenv("SENTINEL_MASTER_URL", s.Master.URL)
	ts.Setenv("SENTINEL_PORT", s.Addr[strings.LastIndex(s.Addr, ":")+1:])
	if n > 0 {
		ts.Setenv("SENTINEL_REPLICA_URL", s.Replicas[0].URL)
	}
}

// sleep D: pause the script (lease expiry is the server's clock; scripts
// wait with generous margins).
func cmdSleep(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: sleep DURATION")
	}
	d, err := time.ParseDuration(args[0])
	ts.Check(err)
	time.Sleep(d)
}

// exits N PROG ARGS...: run PROG like exec and require exit status N;
// stdout and stderr are kept for the following stdout/stderr checks.
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits N PROG [ARGS...]")
	}
	want, err := strconv.Atoi(args[0])
	ts.Check(err)
	err = ts.Exec(args[1], args[2:]...)
	got := 0
	if err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("%s: %v", args[1], err)
		}
		got = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			got = 128 + int(ws.Signal())
		}
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", strings.Join(args[1:], " "), got, want)
	}
}

// redis CMD ARGS...: run one command on the script's server and print the
// reply to stdout: strings and integers as is, nil as (nil), arrays one
// element per line (nested arrays flattened), errors fail the command.
func cmdRedis(ts *testscript.TestScript, neg bool, args []string) {
	runRedis(ts, Server(ts), neg, args)
}

// redis-until WANT CMD [ARGS...]: run CMD on the script's server until its
// reply, as redis prints it without the newline, is WANT (for 30s at most).
func cmdRedisUntil(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: redis-until WANT CMD [ARGS...]")
	}
	opt, err := redis.ParseURL(Server(ts).URL)
	ts.Check(err)
	c := redis.NewClient(opt)
	defer c.Close()
	a := make([]any, len(args)-1)
	for i, s := range args[1:] {
		a[i] = s
	}
	var last string
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		v, err := c.Do(context.Background(), a...).Result()
		if err == redis.Nil {
			v, err = "(nil)", nil
		}
		if err != nil {
			last = err.Error()
			continue
		}
		var b strings.Builder
		writeReply(&b, v)
		if last = strings.TrimSuffix(b.String(), "\n"); last == args[0] {
			return
		}
	}
	ts.Fatalf("redis %s: still %q after 30s, want %q", strings.Join(args[1:], " "), last, args[0])
}

func runRedis(ts *testscript.TestScript, s *redistest.Server, neg bool, args []string) {
	if len(args) == 0 {
		ts.Fatalf("usage: redis CMD [ARGS...]")
	}
	opt, err := redis.ParseURL(s.URL)
	ts.Check(err)
	c := redis.NewClient(opt)
	defer c.Close()
	a := make([]any, len(args))
	for i, s := range args {
		a[i] = s
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, err := c.Do(ctx, a...).Result()
	if err == redis.Nil {
		v, err = "(nil)", nil
	}
	if err != nil {
		if neg {
			ts.Logf("redis error (expected): %v", err)
			return
		}
		ts.Fatalf("redis %s: %v", strings.Join(args, " "), err)
	}
	if neg {
		ts.Fatalf("redis %s: unexpected success", strings.Join(args, " "))
	}
	var b strings.Builder
	writeReply(&b, v)
	fmt.Fprint(ts.Stdout(), b.String())
}

// redis-sub [-p|-s] FILE CHANNEL...: subscribe on the script's server in
// the background, as a waiter does (SUBSCRIBE; -p: PSUBSCRIBE to patterns;
// -s: SSUBSCRIBE to shard channels, as Redisson does on a Redis 7 Cluster),
// and append one "CHANNEL MESSAGE" line to FILE per message, until the
// script ends. It returns once the server confirmed the subscriptions, so
// nothing published afterwards is missed; publish a marker last and wait
// for it to know every earlier message is in FILE.
func cmdRedisSub(ts *testscript.TestScript, neg bool, args []string) {
	mode := ""
	if len(args) > 0 && (args[0] == "-p" || args[0] == "-s") {
		mode, args = args[0], args[1:]
	}
	if neg || len(args) < 2 {
		ts.Fatalf("usage: redis-sub [-p|-s] FILE CHANNEL...")
	}
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	ts.Check(err)
	opt, err := redis.ParseURL(Server(ts).URL)
	ts.Check(err)
	c := redis.NewClient(opt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var ps *redis.PubSub
	switch mode {
	case "-p":
		ps = c.PSubscribe(ctx, args[1:]...)
	case "-s":
		ps = c.SSubscribe(ctx, args[1:]...)
	default:
		ps = c.Subscribe(ctx, args[1:]...)
	}
	for range args[1:] {
		if _, err := ps.Receive(ctx); err != nil {
			ts.Fatalf("redis-sub: %v", err)
		}
	}
	done := make(chan struct{})
	msgs := ps.Channel()
	go func() {
		defer close(done)
		for m := range msgs {
			fmt.Fprintf(f, "%s %s\n", m.Channel, m.Payload)
		}
	}()
	ts.Defer(func() {
		// The script is over: nothing reads f after this.
		_ = ps.Close()
		<-done
		_ = f.Close()
		_ = c.Close()
	})
}

func writeReply(b *strings.Builder, v any) {
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			writeReply(b, e)
		}
	case map[any]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, fmt.Sprint(k))
		}
		sort.Strings(keys)
		for _, k := range keys {
			fmt.Fprintln(b, k)
		}
	case nil:
		fmt.Fprintln(b, "(nil)")
	default:
		fmt.Fprintln(b, x)
	}
}

// waitfile FILE [TIMEOUT]: wait until FILE exists and is not empty (for
// synchronising with background commands). Default timeout 30s.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waitfile FILE [TIMEOUT]")
	}
	limit := 30 * time.Second
	if len(args) == 2 {
		d, err := time.ParseDuration(args[1])
		ts.Check(err)
		limit = d
	}
	path := ts.MkAbs(args[0])
	deadline := time.Now().Add(limit)
	for {
		if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
			if neg {
				ts.Fatalf("%s appeared", args[0])
			}
			return
		}
		if time.Now().After(deadline) {
			if neg {
				return
			}
			ts.Fatalf("%s did not appear within %s", args[0], limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// redis-sig STOP|CONT|KILL: signal the script's redis-server (pause it,
// resume it, or take it down).
func cmdRedisSig(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: redis-sig STOP|CONT|KILL")
	}
	ts.Check(Server(ts).Signal(signalByName(ts, args[0])))
}
