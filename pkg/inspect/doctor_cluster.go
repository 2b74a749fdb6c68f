package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// ErrClusterDown is the error of a Cluster whose nodes say it is down
// (cluster_state:fail): every node refuses keyed commands (CLUSTERDOWN),
// so no lock can be taken, renewed or read.
var ErrClusterDown = errors.New("inspect: the cluster is down")

// clusterDoctor runs the server checks on every node of the Cluster, then
// the cluster's state and the ACL check through the cluster client.
func (in *Inspector) clusterDoctor(ctx context.Context, cc *redis.ClusterClient) ([]Check, error) {
	nodes, err := in.checkClusterNodes(ctx, cc)
	if err == nil && len(nodes) == 0 {
		err = cc.Ping(ctx).Err()
	}
	if err != nil && len(nodes) == 0 {
		return []Check{{Check: "reachable", Status: StatusFail, Message: err.Error(),
			Hint: "check --cluster (LOCKCTL_CLUSTER), the password and CLUSTER INFO on the nodes: a cluster whose slots are all unassigned serves nothing"}}, err
	}
	sortClusterNodes(nodes)
	var (
		out       []Check
		reached   int
		acl7      = true
		down      []string
		firstDown error
	)
	for _, n := range nodes {
		role := n.info.role
		if role == "" {
			role = "unknown"
		}
		for _, ck := range n.checks {
			ck.Node, ck.Role = n.addr, role
			out = append(out, ck)
		}
		if n.err != nil {
			if firstDown == nil {
				firstDown = n.err
			}
			continue
		}
		reached++
		acl7 = acl7 && n.info.acl7
		if n.state != "" && n.state != "ok" {
			down = append(down, n.addr)
		}
	}
	if reached == 0 {
		return out, firstDown
	}
	ck, derr := clusterVerdict(down, firstDown != nil, reached, len(nodes))
	return append(out, ck, in.aclCheck(ctx, acl7)), derr
}

// clusterNode is what doctor learnt of one node of a Cluster.
type clusterNode struct {
	addr   string
	checks []Check
	info   serverInfo
	err    error
	state  string // CLUSTER INFO's cluster_state
}

// checkClusterNodes runs the server checks on every node the cluster
// client knows, then on every other node the nodes themselves name. The
// error is the client's, when it could not walk its nodes.
func (in *Inspector) checkClusterNodes(ctx context.Context, cc *redis.ClusterClient) ([]clusterNode, error) {
	var (
		mu    sync.Mutex
		nodes []clusterNode
		known = map[string]bool{} // every node some node's CLUSTER NODES names
	)
	check := func(ctx context.Context, c *redis.Client) {
		n, named := in.checkClusterNode(ctx, c)
		mu.Lock()
		defer mu.Unlock()
		nodes = append(nodes, n)
		for _, a := range named {
			known[a] = true
		}
	}
	err := cc.ForEachShard(ctx, func(ctx context.Context, c *redis.Client) error {
		check(ctx, c)
		return nil // a node's failure is its own verdict, never the others' end
	})
	// The client's slot map may lag behind the cluster (a replica just
	// added) and leaves out nodes that serve no slot: every node the
	// nodes themselves name is checked, those down included.
	checked := map[string]bool{}
	for _, n := range nodes {
		checked[n.addr] = true
	}
	var rest []string
	for a := range known {
		if !checked[a] {
			rest = append(rest, a)
		}
	}
	sort.Strings(rest)
	o := cc.Options()
	for _, a := range rest {
		c := redis.NewClient(&redis.Options{Addr: a, Username: o.Username, Password: o.Password, TLSConfig: o.TLSConfig,
			Dialer: o.Dialer, DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			Protocol: o.Protocol, CredentialsProvider: o.CredentialsProvider, MaxRetries: -1})
		check(ctx, c)
		_ = c.Close()
	}
	return nodes, err
}

// checkClusterNode runs the server checks on one node and reads its
// cluster_state; named lists the nodes its CLUSTER NODES names.
func (in *Inspector) checkClusterNode(ctx context.Context, c *redis.Client) (n clusterNode, named []string) {
	n.addr = c.Options().Addr
	n.checks, n.info, n.err = in.serverChecks(ctx, c, true)
	if n.err != nil {
		return n, nil
	}
	if ci, err := c.ClusterInfo(ctx).Result(); err == nil {
		for _, line := range strings.Split(ci, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "cluster_state:"); ok {
				n.state = v
			}
		}
	}
	if cn, err := c.ClusterNodes(ctx).Result(); err == nil {
		named = nodeAddrs(cn)
	}
	return n, named
}

// sortClusterNodes puts masters first, then replicas, each by address: a
// stable report.
func sortClusterNodes(nodes []clusterNode) {
	rank := func(n clusterNode) int {
		switch n.info.role {
		case "master":
			return 0
		case "replica":
			return 1
		}
		return 2
	}
	sort.Slice(nodes, func(i, j int) bool {
		if rank(nodes[i]) != rank(nodes[j]) {
			return rank(nodes[i]) < rank(nodes[j])
		}
		return nodes[i].addr < nodes[j].addr
	})
}

// clusterVerdict is the "cluster" verdict: down lists the nodes that say
// the cluster is down (the error is then ErrClusterDown), missing whether
// some node did not answer; reached of all nodes answered.
func clusterVerdict(down []string, missing bool, reached, all int) (Check, error) {
	switch {
	case len(down) > 0:
		return Check{Check: "cluster", Status: StatusFail,
				Message: fmt.Sprintf("cluster_state:fail on %s: the cluster refuses every keyed command (CLUSTERDOWN), so no lock can be taken, renewed or listed", strings.Join(down, ", ")),
				Hint:    "bring the failed master back or let a replica take over; assign every slot (CLUSTER INFO cluster_slots_assigned should be 16384)"},
			fmt.Errorf("%w: cluster_state:fail on %s", ErrClusterDown, strings.Join(down, ", "))
	case missing:
		return Check{Check: "cluster", Status: StatusFail,
			Message: fmt.Sprintf("%d of %d nodes answered: the slots of a master that does not answer are not served until its replica takes over", reached, all),
			Hint:    "CLUSTER NODES shows which nodes are down and which replica will take over"}, nil
	default:
		return Check{Check: "cluster", Status: StatusOK, Message: fmt.Sprintf("cluster_state:ok on all %d nodes", all)}, nil
	}
}

// nodeAddrs lists the addresses of the nodes a CLUSTER NODES reply names
// ("<id> 127.0.0.1:7000@17000[,hostname] <flags> ..."), skipping nodes
// without an address yet.
func nodeAddrs(reply string) []string {
	var out []string
	for _, line := range strings.Split(reply, "\n") {
		f := strings.Fields(line)
		if len(f) < 3 || strings.Contains(f[2], "noaddr") {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		if addr == "" || strings.HasSuffix(addr, ":0") {
			continue
		}
		out = append(out, addr)
	}
	return out
}
