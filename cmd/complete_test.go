package cmd_test

import (
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/testkit/faultproxy"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

// complete runs `lockctl __complete ARGS...` and returns the offered values
// (without the trailing directive line) and the directive.
func complete(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	io, _, out, _ := ui.Test()
	if code := runMain(t, io, append([]string{"__complete"}, args...)...); code != 0 {
		t.Fatalf("__complete %v exited %d", args, code)
	}
	lines := strings.Split(strings.TrimRight(out.String(), "\n"), "\n")
	directive := lines[len(lines)-1]
	return lines[:len(lines)-1], directive
}

// TestCompleteHeldNames: every command that takes a held NAME completes the
// names under the prefix that start with what was typed, from the server
// the flags, environment and prefix name; auxiliary keys never show.
func TestCompleteHeldNames(t *testing.T) {
	noServer(t)
	s := redistest.StartTest(t, nil)
	for _, k := range []string{"lock:deploy", "lock:db-migrate", "lock:backup", "other:deploy-x", "app:deploy"} {
		if _, err := s.Do("SET", k, "v", "PX", "60000"); err != nil {
			t.Fatal(err)
		}
	}
	// A semaphore, a lock held only by shared holders, a fence counter and
	// a name only waited for: the first two are held names, the others not.
	io, _, _, _ := ui.Test()
	if code := runMain(t, io, "lock", "dsem", "--limit", "2", "--url", s.URL); code != 0 {
		t.Fatalf("lock --limit exited %d", code)
	}
	for i := 0; i < 2; i++ {
		if code := runMain(t, io, "lock", "dshared", "--shared", "--url", s.URL); code != 0 {
			t.Fatalf("lock --shared exited %d", code)
		}
	}
	if _, err := s.Do("ZADD", "lockctl:writers:{lock:dwanted}", "99999999999999", "w"); err != nil {
		t.Fatal(err)
	}
	if code := runMain(t, io, "fence", "next", "dfence", "--url", s.URL); code != 0 {
		t.Fatalf("fence next exited %d", code)
	}
	for _, path := range [][]string{{"release"}, {"renew"}, {"inspect", "lock"}, {"inspect", "force-release"},
		{"fence", "peek"}, {"ls"}, {"inspect", "locks"}, {"run"}, {"lock"}} {
		got, dir := complete(t, append(path, "--url", s.URL, "d")...)
		if strings.Join(got, " ") != "db-migrate deploy dsem dshared" || dir != ":4" {
			t.Errorf("%v d: got %q %s", path, got, dir)
		}
	}
	t.Setenv("LOCKCTL_URL", s.URL)
	if got, _ := complete(t, "release", "--prefix", "app:", ""); strings.Join(got, " ") != "deploy" {
		t.Errorf("--prefix app: from LOCKCTL_URL: got %q", got)
	}
	// Only the first argument is a name.
	if got, _ := complete(t, "release", "deploy", ""); len(got) != 0 {
		t.Errorf("second argument: got %q", got)
	}
}

// TestCompleteUnreachable: a server that accepts connections and never
// answers costs the shell about the completion budget (300ms), not the
// 5s --timeout, and completes nothing; so does one that refuses them.
func TestCompleteUnreachable(t *testing.T) {
	noServer(t)
	s := redistest.StartTest(t, nil)
	if _, err := s.Do("SET", "lock:deploy", "v", "PX", "60000"); err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New(s.Addr)
	if err != nil {
		t.Fatal(err)
	}
	// Through the proxy before the fault: the name is there to complete.
	if got, _ := complete(t, "release", "--url", "redis://"+p.Addr()+"/0", ""); strings.Join(got, " ") != "deploy" {
		t.Fatalf("through the proxy: got %q", got)
	}
	defer p.Close()
	p.Blackhole(true)
	for _, url := range []string{"redis://" + p.Addr() + "/0", "redis://127.0.0.1:1/0"} {
		start := time.Now()
		got, dir := complete(t, "release", "--url", url, "--timeout", "30s", "")
		t.Logf("%s: %v", url, time.Since(start))
		// Generous for a loaded machine, far below --timeout.
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("%s: completion took %v", url, took)
		}
		if len(got) != 0 || dir != ":4" {
			t.Errorf("%s: got %q %s", url, got, dir)
		}
	}
}

// TestCompleteFlagValues: enumerated flags offer their words, durations
// their units, and --token nothing at all (not even file names).
func TestCompleteFlagValues(t *testing.T) {
	noServer(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"run", "x", "--on-lost", ""}, "term kill ignore"},
		{[]string{"ls", "-o", ""}, "text json env wide table"},
		{[]string{"ls", "--color", ""}, "auto always never"},
		{[]string{"ls", "--sort", ""}, "name ttl age none"},
		{[]string{"limit", "k", "--algo", ""}, "gcra sliding-log sliding-window token-bucket"},
		{[]string{"inspect", "orphans", "--fix", ""}, "delete expire:1h expire:24h"},
		{[]string{"inspect", "orphans", "--fix", "expire:9"}, "expire:9ms expire:9s expire:9m expire:9h"},
		{[]string{"run", "x", "--ttl", "30"}, "30ms 30s 30m 30h"},
		{[]string{"lock", "x", "-w", ""}, strings.Join([]string{"500ms", "5s", "30s", "1m", "5m", "10m", "1h"}, " ")},
		{[]string{"release", "x", "--token", ""}, ""},
		{[]string{"inspect", "force-release", "x", "--token", ""}, ""},
	}
	for _, c := range cases {
		got, dir := complete(t, c.args...)
		if strings.Join(got, " ") != c.want || dir != ":4" {
			t.Errorf("%v: got %q %s, want %q :4", c.args, got, dir, c.want)
		}
	}
}
