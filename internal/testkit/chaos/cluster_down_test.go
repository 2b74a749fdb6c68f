package chaos_test

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

// TestClusterDownIsNotEmpty: a 3-master Cluster without replicas loses a
// master; once the others notice (cluster-node-timeout), with
// cluster-require-full-coverage yes (the default) they refuse every keyed
// command (CLUSTERDOWN). No command may then read as "no locks held" (exit
// 0, nothing printed) or call it a bug (70): every one says the cluster is
// down or names what it could not read, and exits 69.
func TestClusterDownIsNotEmpty(t *testing.T) {
	c, err := redistest.StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	global := []string{"--cluster", strings.Join(c.Addrs, ","), "--timeout", "2s"}
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(lockctlBin, append(append([]string{}, global...), args...)...)
		cmd.Env = append(cmd.Environ(), "LOCKCTL_URL=", "LOCKCTL_CLUSTER=", "NO_COLOR=1")
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		return exitOf(cmd.Run()), out.String(), errb.String()
	}
	// a, b and d hash to the three masters' slots
	for _, n := range []string{"a", "b", "d"} {
		if code, _, stderr := run("lock", n, "--ttl", "5m"); code != 0 {
			t.Fatalf("lock %s: exit %d: %s", n, code, stderr)
		}
	}
	c.Nodes[2].Kill()
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		info, _ := c.Nodes[0].Do("CLUSTER", "INFO")
		if strings.Contains(info, "cluster_state:fail") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster never went down: %s", info)
		}
	}
	for _, args := range [][]string{
		{"inspect", "locks"},
		{"inspect", "locks", "-o", "json"},
		{"inspect", "orphans"},
		{"inspect", "orphans", "--check"},
		{"inspect", "lock", "a"},
		{"doctor"},
		{"lock", "a", "--test"},
	} {
		code, stdout, stderr := run(args...)
		t.Logf("lockctl %s: exit %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, stdout, stderr)
		if code != 69 {
			t.Errorf("lockctl %s: exit %d, want 69 (the cluster is down)", strings.Join(args, " "), code)
		}
		if !strings.Contains(stderr, "cluster is down") && !strings.Contains(stderr, "CLUSTERDOWN") &&
			!strings.Contains(stderr, "listing incomplete") {
			t.Errorf("lockctl %s: stderr does not say the cluster is down: %s", strings.Join(args, " "), stderr)
		}
		if strings.Contains(stderr, "bug in lockctl") || strings.Contains(stderr, "no locks held") || strings.Contains(stderr, "no keys without TTL") {
			t.Errorf("lockctl %s: %s", strings.Join(args, " "), stderr)
		}
	}
}
