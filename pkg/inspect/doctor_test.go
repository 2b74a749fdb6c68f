package inspect_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/redis/go-redis/v9"
)

func startServer(t *testing.T, o *redistest.Options) *redistest.Server {
	t.Helper()
	s, err := redistest.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

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
	wantStatus(t, m, "persistence", inspect.StatusOK, "AOF")

	c := clientFor(t, s.URL)
	do(t, c, "CONFIG", "SET", "maxmemory-policy", "volatile-ttl")
	wantStatus(t, doctor(t, c), "maxmemory-policy", inspect.StatusWarn, "volatile-ttl")
	do(t, c, "CONFIG", "SET", "appendonly", "no")
	do(t, c, "CONFIG", "SET", "save", "3600 1")
	wantStatus(t, doctor(t, c), "persistence", inspect.StatusWarn, "RDB")
}

func TestDoctorACL(t *testing.T) {
	s := startServer(t, &redistest.Options{Password: "adminpw"})
	admin := clientFor(t, s.URL)
	do(t, admin, "ACL", "SETUSER", "app", "on", ">apppw", "~*", "&*", "+@all", "-eval")
	do(t, admin, "ACL", "SETUSER", "narrow", "on", ">narrowpw", "~lock:*", "&*", "+get", "+set", "+ping", "+time")
	app := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "app", Password: "apppw"})
	defer app.Close()
	m := doctor(t, app)
	wantStatus(t, m, "acl", inspect.StatusFail, "user app may not run EVAL")
	if !strings.Contains(m["acl"].Hint, "+eval") {
		t.Errorf("hint %q", m["acl"].Hint)
	}
	// A user that may not even read the configuration gets warnings.
	narrow := redis.NewClient(&redis.Options{Addr: s.Addr, Username: "narrow", Password: "narrowpw"})
	defer narrow.Close()
	m = doctor(t, narrow)
	wantStatus(t, m, "maxmemory-policy", inspect.StatusWarn, "cannot read")
	wantStatus(t, m, "persistence", inspect.StatusWarn, "cannot read")
	wantStatus(t, m, "acl", inspect.StatusWarn, "cannot verify")
	// A wrong password: unreachable, an error.
	bad := redis.NewClient(&redis.Options{Addr: s.Addr, Password: "wrong", MaxRetries: -1})
	defer bad.Close()
	checks, err := inspect.New(bad, nil).Doctor(context.Background())
	if err == nil || len(checks) != 1 || checks[0].Status != inspect.StatusFail {
		t.Errorf("bad password: %v %v", checks, err)
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
