package inspect_test

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/lockctl/lockctl/pkg/once"
	"github.com/redis/go-redis/v9"
)

// startServer starts a private server, stopped when the test ends.
var startServer = redistest.StartTest

func doctor(t *testing.T, c redis.UniversalClient) map[string]inspect.Check {
	t.Helper()
	checks, err := inspect.New(c, nil).Doctor(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]inspect.Check{}
	for _, ck := range checks {
		m[ck.Check] = ck
		if ck.Status != inspect.StatusOK && ck.Hint == "" {
			t.Errorf("%s: %s without a hint", ck.Check, ck.Status)
		}
	}
	return m
}

func wantStatus(t *testing.T, m map[string]inspect.Check, check string, st inspect.Status, msg string) {
	t.Helper()
	ck, ok := m[check]
	if !ok {
		t.Fatalf("no %s check in %v", check, m)
	}
	if ck.Status != st || !strings.Contains(ck.Message, msg) {
		t.Errorf("%s: %s %q, want %s containing %q", check, ck.Status, ck.Message, st, msg)
	}
}

func TestDoctorDefaultServer(t *testing.T) {
	m := doctor(t, clientFor(t, srv.URL))
	wantStatus(t, m, "reachable", inspect.StatusOK, "")
	wantStatus(t, m, "clock", inspect.StatusOK, "server clock within 100ms of this host's")
	wantStatus(t, m, "role", inspect.StatusOK, "master")
	wantStatus(t, m, "maxmemory-policy", inspect.StatusOK, "noeviction")
	wantStatus(t, m, "persistence", inspect.StatusFail, "none")
	wantStatus(t, m, "replication", inspect.StatusWarn, "no replicas")
	wantStatus(t, m, "acl", inspect.StatusOK, "default")
}

func TestDoctorEvictionAndAOF(t *testing.T) {
	s := startServer(t, &redistest.Options{Args: []string{"--maxmemory", "100mb", "--maxmemory-policy", "allkeys-lru", "--appendonly", "yes"}})
	m := doctor(t, clientFor(t, s.URL))
	wantStatus(t, m, "maxmemory-policy", inspect.StatusFail, "allkeys-lru")
	// everysec: a crash loses the fence counter's latest increments, and
	// then only the clock floor keeps fences ordered
	wantStatus(t, m, "persistence", inspect.StatusWarn, "AOF on (appendfsync everysec): a crash loses")
	wantStatus(t, m, "persistence", inspect.StatusWarn, "unless the clock was stepped back by more than the restart took (about 100ms locally)")
	do(t, clientFor(t, s.URL), "CONFIG", "SET", "appendfsync", "always")
	wantStatus(t, doctor(t, clientFor(t, s.URL)), "persistence", inspect.StatusOK, "appendfsync always")

	c := clientFor(t, s.URL)
	do(t, c, "CONFIG", "SET", "maxmemory-policy", "volatile-ttl")
	wantStatus(t, doctor(t, c), "maxmemory-policy", inspect.StatusWarn, "volatile-ttl")
	do(t, c, "CONFIG", "SET", "appendonly", "no")
	do(t, c, "CONFIG", "SET", "save", "3600 1")
	wantStatus(t, doctor(t, c), "persistence", inspect.StatusWarn, "RDB")
	wantStatus(t, doctor(t, c), "persistence", inspect.StatusWarn, "unless the clock was stepped back")
}

// The clock check warns at the step back the fences' clock floor tolerates
// across a local restart (inspect.ClockStep), not only at a second.
func TestDoctorClockStep(t *testing.T) {
	s := startServer(t, nil)
	c := clientFor(t, s.URL)
	check := func(off time.Duration) inspect.Check {
		t.Helper()
		in := inspect.New(c, &inspect.Options{Clock: func() time.Time { return time.Now().Add(off) }})
		checks, err := in.Doctor(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, ck := range checks {
			if ck.Check == "clock" {
				return ck
			}
		}
		t.Fatal("no clock check")
		return inspect.Check{}
	}
	if ck := check(400 * time.Millisecond); ck.Status != inspect.StatusWarn || !strings.Contains(ck.Message, "off this host's") || !strings.Contains(ck.Hint, "appendfsync always") {
		t.Errorf("server 400ms behind: %s %q (hint %q), want a warning", ck.Status, ck.Message, ck.Hint)
	}
	if ck := check(-400 * time.Millisecond); ck.Status != inspect.StatusWarn {
		t.Errorf("server 400ms ahead: %s %q, want a warning", ck.Status, ck.Message)
	}
	if ck := check(0); ck.Status != inspect.StatusOK {
		t.Errorf("same clock: %s %q", ck.Status, ck.Message)
	}
}

func TestDoctorACL(t *testing.T) {
	s := startServer(t, &redistest.Options{Password: "adminpw"})
	admin := clientFor(t, s.URL)
	// Either of EVALSHA (with SCRIPT LOAD) and EVAL runs the scripts
	// (internal/lib/luascript); a user without both cannot take a lock.
	do(t, admin, "ACL", "SETUSER", "app", "on", ">apppw", "~*", "&*", "+@all", "-eval", "-evalsha")
	do(t, admin, "ACL", "SETUSER", "noeval", "on", ">apppw", "~*", "&*", "+@all", "-eval")
	do(t, admin, "ACL", "SETUSER", "narrow", "on", ">narrowpw", "~lock:*", "&*", "+get", "+set", "+ping", "+time")
	app := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "app", Password: "apppw"})
	defer app.Close()
	m := doctor(t, app)
	wantStatus(t, m, "acl", inspect.StatusFail, "user app may not run EVALSHA, EVAL")
	if !strings.Contains(m["acl"].Hint, "+evalsha +eval") {
		t.Errorf("hint %q", m["acl"].Hint)
	}
	noeval := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "noeval", Password: "apppw"})
	defer noeval.Close()
	wantStatus(t, doctor(t, noeval), "acl", inspect.StatusOK, "user noeval may run every command lockctl uses")
	// A user that may not even read the configuration gets warnings for
	// it, but its permissions are still found out, by trying them.
	narrow := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "narrow", Password: "narrowpw"})
	defer narrow.Close()
	m = doctor(t, narrow)
	wantStatus(t, m, "maxmemory-policy", inspect.StatusWarn, "cannot read")
	wantStatus(t, m, "persistence", inspect.StatusWarn, "cannot read")
	wantStatus(t, m, "acl", inspect.StatusFail, "this user may not run EVALSHA, EVAL, ")
	wantStatus(t, m, "acl", inspect.StatusFail, "GET (its keys)")
	if h := m["acl"].Hint; !strings.Contains(h, "+evalsha +eval ") || strings.Contains(h, "+get") || !strings.Contains(h, "~lock:* ~lockctl:* ~limit:* ~once:* &lockctl:*") {
		t.Errorf("hint %q", h)
	}
	// A wrong password: unreachable, an error.
	bad := redis.NewClient(&redis.Options{Addr: s.Addr, Password: "wrong", MaxRetries: -1})
	defer bad.Close()
	checks, err := inspect.New(bad, nil).Doctor(context.Background())
	if err == nil || len(checks) != 1 || checks[0].Status != inspect.StatusFail {
		t.Errorf("bad password: %v %v", checks, err)
	}
}

// An application user without ACL WHOAMI or DRYRUN: its permissions are
// found by trying each command on scratch keys, which are gone afterwards.
func TestDoctorACLWithoutDryRun(t *testing.T) {
	s := startServer(t, &redistest.Options{Password: "adminpw"})
	admin := clientFor(t, s.URL)
	app := []any{"on", ">pw", "~lock:*", "~lockctl:*", "~limit:*", "~once:*", "&lockctl:*", "+@read", "+@write", "+@scripting", "+@pubsub", "+time", "+ping", "+wait", "+scan", "-acl"}
	do(t, admin, append([]any{"ACL", "SETUSER", "app"}, app...)...)
	do(t, admin, append([]any{"ACL", "SETUSER", "nowait"}, append(app, "-wait")...)...)
	do(t, admin, append([]any{"ACL", "SETUSER", "nosha"}, append(app, "-evalsha")...)...)
	do(t, admin, append([]any{"ACL", "SETUSER", "noeval"}, append(app, "-evalsha", "-eval")...)...)
	user := func(name string) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: name, Password: "pw"})
		t.Cleanup(func() { c.Close() })
		return c
	}
	wantStatus(t, doctor(t, user("app")), "acl", inspect.StatusOK, "this user may run every command lockctl uses (trying each command)")
	wantStatus(t, doctor(t, user("nowait")), "acl", inspect.StatusWarn, "this user may take locks but not use --wait-replicas (WAIT)")
	// EVAL alone runs the scripts (internal/lib/luascript); neither cannot.
	wantStatus(t, doctor(t, user("nosha")), "acl", inspect.StatusOK, "this user may run every command lockctl uses (trying each command)")
	m := doctor(t, user("noeval"))
	wantStatus(t, m, "acl", inspect.StatusFail, "this user may not run EVALSHA, EVAL: every lock fails with NOPERM")
	if h := m["acl"].Hint; !strings.HasPrefix(h, "ACL SETUSER <user> +evalsha +eval ~lock:* ") {
		t.Errorf("hint %q", h)
	}
	if keys := admin.Keys(context.Background(), "*").Val(); len(keys) != 0 {
		t.Errorf("doctor left keys behind: %v", keys)
	}
}

// Every command the lock scripts call is among those doctor checks.
func TestDoctorChecksEveryScriptCommand(t *testing.T) {
	checked := map[string]bool{}
	for _, c := range inspect.New(nil, nil).Commands() {
		checked[strings.ToUpper(c[0])] = true
	}
	for _, c := range slices.Concat(lock.ScriptCommands(), limit.ScriptCommands(), once.ScriptCommands()) {
		if !checked[c] {
			t.Errorf("the scripts call %s, which doctor does not check", c)
		}
	}
	if len(lock.ScriptCommands()) < 10 {
		t.Errorf("script commands %v: the scripts were not read", lock.ScriptCommands())
	}
}

func TestDoctorReplica(t *testing.T) {
	master := startServer(t, nil)
	replica := startServer(t, &redistest.Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(master.Port)}})
	mc := clientFor(t, master.URL)
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(mc.Info(context.Background(), "replication").Val(), "connected_slaves:1") {
		if time.Now().After(deadline) {
			t.Fatal("replica did not connect")
		}
		time.Sleep(20 * time.Millisecond)
	}
	wantStatus(t, doctor(t, clientFor(t, replica.URL)), "role", inspect.StatusFail, "replica of 127.0.0.1:"+strconv.Itoa(master.Port))
	wantStatus(t, doctor(t, mc), "replication", inspect.StatusWarn, "min-replicas-to-write 0")
	do(t, mc, "CONFIG", "SET", "min-replicas-to-write", "1")
	wantStatus(t, doctor(t, mc), "replication", inspect.StatusOK, "1 replica(s), min-replicas-to-write 1")
}
