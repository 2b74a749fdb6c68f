package redistest

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Cluster is a Redis Cluster of masters without replicas, all on loopback.
type Cluster struct {
	Nodes    []*Server // the masters
	Addrs    []string
	Replicas []*Server // after AddReplicas, Replicas[i] replicates Nodes[i]
}

// StartCluster starts n (at least 3) cluster-enabled servers, spreads the
// 16384 slots over them and waits until every node reports cluster_state:ok.
func StartCluster(n int) (*Cluster, error) {
	if n < 1 {
		n = 3
	}
	c := &Cluster{}
	for i := 0; i < n; i++ {
		s, err := Start(&Options{Args: []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000",
		}})
		if err != nil {
			c.Stop()
			return nil, err
		}
		c.Nodes = append(c.Nodes, s)
		c.Addrs = append(c.Addrs, s.Addr)
	}
	per := 16384 / n
	for i, s := range c.Nodes {
		lo, hi := i*per, (i+1)*per-1
		if i == n-1 {
			hi = 16383
		}
		if r, err := s.Do("CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(lo), strconv.Itoa(hi)); err != nil || r != "OK" {
			c.Stop()
			return nil, fmt.Errorf("CLUSTER ADDSLOTSRANGE on %s: %q %v", s.Addr, r, err)
		}
		if i > 0 {
			if r, err := s.Do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(c.Nodes[0].Port)); err != nil || r != "OK" {
				c.Stop()
				return nil, fmt.Errorf("CLUSTER MEET from %s: %q %v", s.Addr, r, err)
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range c.Nodes {
		for {
			info, err := s.Do("CLUSTER", "INFO")
			if err == nil && strings.Contains(info, "cluster_state:ok") && strings.Contains(info, "cluster_known_nodes:"+strconv.Itoa(n)) {
				break
			}
			if time.Now().After(deadline) {
				c.Stop()
				return nil, fmt.Errorf("cluster did not become ok: %q %v", info, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return c, nil
}

// Stop stops every node.
func (c *Cluster) Stop() {
	for _, s := range c.Replicas {
		s.Stop()
	}
	for _, s := range c.Nodes {
		s.Stop()
	}
}

// Sentinel is one master watched by one sentinel process, with replicas
// when asked for.
type Sentinel struct {
	Master   *Server
	Replicas []*Server // in sync with Master when StartSentinelReplicas returns
	Addr     string    // the sentinel's host:port
	Name     string    // the master's name in the sentinel

	proc *Server // the sentinel process itself
}

// StartSentinel starts a master and a sentinel monitoring it as name.
func StartSentinel(name string) (*Sentinel, error) { return StartSentinelReplicas(name, 0) }

// StartSentinelReplicas starts a master with n replicas and a sentinel
// monitoring them as name, and returns once the replicas are in sync and
// the sentinel knows them, so that SENTINEL FAILOVER can promote one. After
// a failover Master is no longer the master: ask the sentinel which is.
func StartSentinelReplicas(name string, n int) (*Sentinel, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	m, err := Start(nil)
	if err != nil {
		return nil, err
	}
	var replicas []*Server
	stopAll := func() {
		for _, r := range replicas {
			r.Stop()
		}
		m.Stop()
	}
	for range n {
		r, err := Start(&Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(m.Port)}})
		if err != nil {
			stopAll()
			return nil, err
		}
		replicas = append(replicas, r)
	}
	port, err := FreePort()
	if err != nil {
		stopAll()
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lockctl-sentinel-")
	if err != nil {
		stopAll()
		return nil, err
	}
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel monitor %s 127.0.0.1 %d 1\nsentinel down-after-milliseconds %s 1000\n",
		port, dir, filepath.Join(dir, "sentinel.log"), name, m.Port, name)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		stopAll()
		return nil, err
	}
	cmd := exec.Command(bin, conf, "--sentinel")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		stopAll()
		_ = os.RemoveAll(dir) // best effort: err, the start's, is the one to report
		return nil, err
	}
	proc := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(proc.done) }() // killed in the end: its status says nothing
	s := &Sentinel{Master: m, Replicas: replicas, Addr: proc.Addr, Name: name, proc: proc}
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := proc.Do("SENTINEL", "GET-MASTER-ADDR-BY-NAME", name)
		ready := err == nil && r == "2"
		if ready && n > 0 {
			ready = inSync(m, n) && knowsReplicas(proc, name, n)
		}
		if ready {
			return s, nil
		}
		if time.Now().After(deadline) {
			s.Stop()
			return nil, fmt.Errorf("sentinel on %s did not start with %d replicas: %q %v", s.Addr, n, r, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// inSync: the master reports n replicas online.
func inSync(m *Server, n int) bool {
	info, err := m.Do("INFO", "replication")
	return err == nil && strings.Count(info, "state=online") >= n
}

// knowsReplicas: the sentinel has discovered n replicas of name (it learns
// them from the master's INFO, which it asks for every few seconds).
func knowsReplicas(sentinel *Server, name string, n int) bool {
	info, err := sentinel.Do("INFO", "sentinel")
	return err == nil && strings.Contains(info, "name="+name+",status=ok,") && strings.Contains(info, fmt.Sprintf(",slaves=%d,", n))
}

// Stop stops the sentinel, its master and its replicas.
func (s *Sentinel) Stop() {
	s.proc.Stop()
	for _, r := range s.Replicas {
		r.Stop()
	}
	s.Master.Stop()
}

// Replicated is a master with one replica, watched by several sentinels
// that agree on failures by majority.
type Replicated struct {
	Master, Replica *Server
	Sentinels       []*Server // the sentinel processes
	SentinelAddrs   []string
	Name            string
}

// StartReplicated starts a master, a replica of it and n sentinels (quorum
// n/2+1) monitoring the master as name, and waits until every sentinel
// knows the replica, so that a failover can pick it at once.
func StartReplicated(name string, n int) (*Replicated, error) {
	if _, err := Binary(); err != nil {
		return nil, err
	}
	var err error
	r := &Replicated{Name: name}
	if r.Master, err = Start(nil); err != nil {
		return nil, err
	}
	if r.Replica, err = Start(&Options{Args: []string{"--replicaof", "127.0.0.1", strconv.Itoa(r.Master.Port)}}); err != nil {
		r.Stop()
		return nil, err
	}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if info, _ := r.Replica.Do("INFO", "replication"); strings.Contains(info, "master_link_status:up") {
			break
		}
		if time.Now().After(deadline) {
			r.Stop()
			return nil, errors.New("the replica never synced with its master")
		}
	}
	if r.Sentinels, err = StartSentinels(name, r.Master.Port, n); err != nil {
		r.Stop()
		return nil, err
	}
	r.SentinelAddrs = addrs(r.Sentinels)
	return r, nil
}

// StartSentinels starts n sentinels (quorum n/2+1) monitoring the master at
// 127.0.0.1:masterPort as name (a fault proxy's port puts the proxy between
// the sentinels and the master) and waits until every one knows one replica
// and its peers. The caller stops them.
func StartSentinels(name string, masterPort, n int) ([]*Server, error) {
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var ss []*Server
	stop := func() {
		for _, s := range ss {
			s.Stop()
		}
	}
	for i := 0; i < n; i++ {
		s, err := startSentinel(bin, name, masterPort, n/2+1)
		if err != nil {
			stop()
			return nil, err
		}
		ss = append(ss, s)
	}
	deadline := time.Now().Add(30 * time.Second)
	for _, s := range ss {
		for {
			reply, err := s.Do("SENTINEL", "MASTER", name)
			if err == nil && reply != "" {
				if info, _ := s.Do("INFO", "sentinel"); strings.Contains(info, "slaves=1") && strings.Contains(info, "sentinels="+strconv.Itoa(n)) {
					break
				}
			}
			if time.Now().After(deadline) {
				stop()
				return nil, fmt.Errorf("sentinel on %s never saw the replica and its peers", s.Addr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return ss, nil
}

func addrs(ss []*Server) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Addr)
	}
	return out
}

func startSentinel(bin, name string, masterPort, quorum int) (*Server, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "lockctl-sentinel-")
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "sentinel.conf")
	body := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s\nsentinel monitor %s 127.0.0.1 %d %d\nsentinel down-after-milliseconds %s 1000\nsentinel failover-timeout %s 5000\n",
		port, dir, filepath.Join(dir, "sentinel.log"), name, masterPort, quorum, name, name)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, conf, "--sentinel")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		_ = os.RemoveAll(dir) // best effort: err, the start's, is the one to report
		return nil, err
	}
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), Port: port, Dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(s.done) }() // killed in the end: its status says nothing
	if err := s.waitReady(10 * time.Second); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Stop stops the sentinels, the replica and the master.
func (r *Replicated) Stop() {
	for _, s := range r.Sentinels {
		s.Stop()
	}
	r.Replica.Stop()
	r.Master.Stop()
}

// AddReplicas gives every master of the cluster one replica and waits until
// each replica is in sync, so that killing a master makes the cluster fail
// over to its replica (after cluster-node-timeout).
func (c *Cluster) AddReplicas() error {
	masters := append([]*Server(nil), c.Nodes...)
	for _, m := range masters {
		id, err := m.Do("CLUSTER", "MYID")
		if err != nil {
			return err
		}
		r, err := Start(&Options{Args: []string{
			"--cluster-enabled", "yes",
			"--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", "5000",
		}})
		if err != nil {
			return err
		}
		c.Replicas = append(c.Replicas, r)
		if res, err := r.Do("CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(m.Port)); err != nil || res != "OK" {
			return fmt.Errorf("CLUSTER MEET from %s: %q %v", r.Addr, res, err)
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			res, err := r.Do("CLUSTER", "REPLICATE", id)
			if err == nil && res == "OK" {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("CLUSTER REPLICATE on %s: %q %v", r.Addr, res, err)
			}
			time.Sleep(50 * time.Millisecond)
		}
		for {
			info, _ := r.Do("INFO", "replication")
			if strings.Contains(info, "master_link_status:up") {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("replica %s never synced", r.Addr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// StartReplica starts a server replicating master and waits until the
// replica has synchronised (master_link_status:up), so every write the
// master acknowledged before it returns is on the replica too.
func StartReplica(master *Server) (*Server, error) {
	// Redis waits 5s by default for more replicas to share a full sync.
	if r, err := master.Do("CONFIG", "SET", "repl-diskless-sync-delay", "0"); err != nil || r != "OK" {
		return nil, fmt.Errorf("CONFIG SET repl-diskless-sync-delay on %s: %q %v", master.Addr, r, err)
	}
	args := []string{"--replicaof", "127.0.0.1", strconv.Itoa(master.Port)}
	if master.password != "" {
		args = append(args, "--masterauth", master.password)
	}
	r, err := Start(&Options{Args: args, Password: master.password})
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := r.Do("INFO", "replication")
		if err == nil && strings.Contains(info, "master_link_status:up") {
			return r, nil
		}
		if time.Now().After(deadline) {
			r.Stop()
			return nil, fmt.Errorf("replica %s did not sync with %s: %q %v", r.Addr, master.Addr, info, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
