package redistest_test

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

func TestClusterAndSentinel(t *testing.T) {
	c, err := redistest.StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	info, err := c.Nodes[1].Do("CLUSTER", "INFO")
	if err != nil || !strings.Contains(info, "cluster_slots_assigned:16384") {
		t.Fatalf("cluster info: %q %v", info, err)
	}

	s, err := redistest.StartSentinel("mymaster")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	if s.Master.Port == 0 || s.Addr == "" {
		t.Fatal("sentinel without addresses")
	}
}
