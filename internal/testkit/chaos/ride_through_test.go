package chaos_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/testkit/chaos"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

// rideModes are the three ways CLUSTER FAILOVER promotes a replica:
// graceful (the master pauses its clients until the replica caught up),
// FORCE (no handshake with the master) and TAKEOVER (no election either).
var rideModes = []string{"", "FORCE", "TAKEOVER"}

// rideRounds is how many failovers each mode gets per variant: 2 in the
// full tier (the scenario runs 3 modes x 2 variants on a 2-core box), or
// LOCKCTL_CHAOS_RIDE_ROUNDS.
func rideRounds(t *testing.T) int {
	if s := os.Getenv("LOCKCTL_CHAOS_RIDE_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			t.Fatalf("LOCKCTL_CHAOS_RIDE_ROUNDS=%q: want a positive count", s)
		}
		return n
	}
	return 2
}

// TestClusterFailoverRideThrough: a lockctl run holder (--ttl 6s) holds a
// lock on a 3+3 Cluster while the slot's replica is promoted with CLUSTER
// FAILOVER (graceful, FORCE, TAKEOVER) and then stalled (SIGSTOP, as a
// loaded machine would) for 3s, so that the slot cannot be written for
// about 3s. The stall starts just before a renewal is due: 2s after the
// grant, which is a renewal time of both schedules compared (ttl/6 = 1s,
// the default, and ttl/3 = 2s, the old default), the worst phase for each.
//
// The window a lease survives at the worst phase is ttl - margin - period
// (README): 3.5s at ttl/6, 2.5s at ttl/3. With the default schedule every
// round must ride through (exit 0); with --renew-every 2s the same stall
// loses the lease (76), safely. Nobody else may get in meanwhile.
//
// A 5s stall is past the window of either: the holder must then end in 76,
// and a waiter must not get the lock before the holder's command stopped.
func TestClusterFailoverRideThrough(t *testing.T) {
	full(t)
	c, err := redistest.StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if err := c.AddReplicas(); err != nil {
		t.Fatal(err)
	}
	name := "rt"
	slot := lockwire.Slot("lock:" + name)
	src := slot / (16384 / len(c.Nodes))
	if src >= len(c.Nodes) {
		src = len(c.Nodes) - 1
	}
	s := &rideSlot{c: c, master: c.Nodes[src], replica: c.Replicas[src], elected: map[*redistest.Server]time.Time{}}
	rounds := rideRounds(t)
	lost := map[string]int{}
	ran := map[string]bool{}
	type variant struct{ label, every, bin string }
	vs := []variant{
		{"lockctl run --ttl 6s (renews every ttl/6)", "", lockctlBin},
		{"lockctl run --ttl 6s --renew-every 2s (ttl/3, the old default)", "2s", lockctlBin},
	}
	if old := os.Getenv("LOCKCTL_CHAOS_BIN_OLD"); old != "" {
		// An earlier build, to compare: its own default schedule.
		vs = append(vs, variant{"earlier build (LOCKCTL_CHAOS_BIN_OLD) run --ttl 6s", "old", old})
	}
	for _, v := range vs {
		t.Run(v.label, func(t *testing.T) {
			ran[v.every] = true
			lost[v.every] = rideThrough(t, s, name, v.label, v.every, v.bin, rounds)
		})
	}
	t.Run("5s stall", func(t *testing.T) {
		rideOutage(t, s, name)
	})
	if ran["2s"] && lost["2s"] == 0 {
		t.Errorf("the old schedule (ttl/3) rode through all %d stalls: the scenario did not reach the worst phase", rounds*len(rideModes))
	}
}

// rideSlot is the lock's slot: its master and replica, which swap roles
// with every failover.
type rideSlot struct {
	c               *redistest.Cluster
	master, replica *redistest.Server
	// elected is when each node last won an election: a replica starts
	// another only 4 node timeouts after its last one (and a master votes
	// for a replica of the same master once in 2), so a node is promoted
	// again 21s later at the earliest (cluster-node-timeout 5s).
	elected map[*redistest.Server]time.Time
}

// ready waits until the replica may win an election again.
func (s *rideSlot) ready() {
	if at, ok := s.elected[s.replica]; ok {
		time.Sleep(time.Until(at.Add(21 * time.Second)))
	}
}

// stall promotes the replica (mode: "", FORCE or TAKEOVER), stops it as
// soon as it reports role:master, and resumes it d later. It returns when
// the stall began, as e's clock counts.
func (s *rideSlot) stall(t *testing.T, e *chaos.Env, mode string, d time.Duration) time.Duration {
	t.Helper()
	args := []string{"CLUSTER", "FAILOVER"}
	if mode != "" {
		args = append(args, mode)
	}
	if res, err := s.replica.Do(args...); err != nil || res != "OK" {
		t.Fatalf("%s on %s: %q %v", strings.Join(args, " "), s.replica.Addr, res, err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if info, _ := s.replica.Do("INFO", "replication"); strings.Contains(info, "role:master") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: the replica was not promoted", strings.Join(args, " "))
		}
	}
	if err := s.replica.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	at := e.Rec.Now()
	s.elected[s.replica] = time.Now()
	time.Sleep(d)
	if err := s.replica.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	s.master, s.replica = s.replica, s.master
	return at
}

// settle waits until the demoted master replicates the promoted one and
// every node sees the cluster ok, so that the next failover starts clean.
func (s *rideSlot) settle(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		info, _ := s.replica.Do("INFO", "replication")
		ok := strings.Contains(info, "role:slave") && strings.Contains(info, "master_link_status:up")
		for _, n := range append(append([]*redistest.Server(nil), s.c.Nodes...), s.c.Replicas...) {
			if ci, _ := n.Do("CLUSTER", "INFO"); !strings.Contains(ci, "cluster_state:ok") {
				ok = false
			}
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the cluster did not settle after the failover: %q", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// rideStallAt is where, after the grant, the stall starts: just before the
// renewal due at 2s (the second at ttl/6, the first at ttl/3), leaving the
// promotion its few milliseconds.
const (
	rideTTL     = 6 * time.Second
	rideDue     = 2 * time.Second
	rideLead    = 150 * time.Millisecond
	rideStall   = 3 * time.Second
	rideOutageD = 5 * time.Second
)

func rideGlobal(c *redistest.Cluster) []string {
	return []string{"--cluster", strings.Join(append(append([]string(nil), c.Addrs...), addrsOf(c.Replicas)...), ",")}
}

func addrsOf(ss []*redistest.Server) []string {
	var out []string
	for _, s := range ss {
		out = append(out, s.Addr)
	}
	return out
}

// rideThrough runs rounds stalls per mode under one schedule and returns
// how many leases were lost.
func rideThrough(t *testing.T, s *rideSlot, name, label, every, bin string, rounds int) int {
	e := chaos.NewEnv(t, "9.cluster-failover-ride-through", bin)
	flags := []string{"-w", "30s", "--ttl", rideTTL.String()}
	if every != "" && every != "old" {
		flags = append(flags, "--renew-every", every)
	}
	id := 0
	lost := 0
	var offsets []string
	for _, mode := range rideModes {
		kept := 0
		for r := 0; r < rounds; r++ {
			s.ready()
			a := e.Spawn(id, chaos.ProcSpec{Global: rideGlobal(s.c), Name: name, TTL: rideTTL,
				Flags: flags, Work: rideDue + rideStall + 2*time.Second, Writes: 8})
			id++
			if !e.WaitEntered(a.Holder, 30*time.Second) {
				t.Fatalf("holder never started: %s", a)
			}
			entered := e.Res.Entered(a.Holder)
			for e.Rec.Now() < entered+rideDue-rideLead {
				time.Sleep(time.Millisecond)
			}
			at := s.stall(t, e, mode, rideStall)
			offsets = append(offsets, msOf(at-entered))
			a.Wait()
			switch a.Exit {
			case 0:
				kept++
			case 76:
				lost++
			default:
				t.Errorf("%s round %d: exit %d, want 0 or 76: %s", failoverMode(mode), r, a.Exit, a)
			}
			s.settle(t)
		}
		t.Logf("%s: %s rode through %d of %d", label, failoverMode(mode), kept, rounds)
		ridden[label+"/"+failoverMode(mode)] = fmt.Sprintf("%d of %d", kept, rounds)
	}
	f := e.Collect(label, rideTTL, id)
	verdict := f.Check(e)
	var parts []string
	for _, mode := range rideModes {
		parts = append(parts, failoverMode(mode)+" "+ridden[label+"/"+failoverMode(mode)])
	}
	f.Note("rode through a %v stall of the promoted replica: %s (stall started %s after the grant)",
		rideStall, strings.Join(parts, ", "), strings.Join(offsets, ", "))
	safe := f.Unfenced.Overlaps == 0 && f.Fenced.AcceptedStale == 0 && verdict == "ok"
	if every == "" {
		f.Verdict = verdictOf(safe && lost == 0, "every lease rides through a 3s unwritable slot at the worst phase; no overlap")
		if lost != 0 {
			t.Errorf("%d of %d leases lost in a %v stall; the default schedule must ride through it", lost, rounds*len(rideModes), rideStall)
		}
	} else {
		f.Verdict = verdictOf(safe, "leases lost in the stall end safely (76); no overlap")
		f.Note("ttl/3 leaves a window of ttl - ttl/4 - ttl/3 = 2.5s at the worst phase: the 3s stall is past it")
		if every == "old" {
			f.Note("the earlier build is %s", filepath.Base(os.Getenv("LOCKCTL_CHAOS_BIN_OLD")))
		}
	}
	chaos.Publish(f)
	if !safe {
		t.Errorf("overlaps %d, accepted stale %d, porcupine %s", f.Unfenced.Overlaps, f.Fenced.AcceptedStale, verdict)
	}
	return lost
}

// ridden keeps each variant's per-mode counts for its note.
var ridden = map[string]string{}

func failoverMode(mode string) string {
	if mode == "" {
		return "graceful"
	}
	return mode
}

// rideOutage: a 5s stall, past the window. The holder must lose the lease
// (76) and stop its command before a waiter gets the lock.
func rideOutage(t *testing.T, s *rideSlot, name string) {
	e := chaos.NewEnv(t, "9.cluster-failover-outage", lockctlBin)
	flags := []string{"-w", "30s", "--ttl", rideTTL.String()}
	id := 0
	var notes []string
	bad := 0
	for _, mode := range rideModes {
		s.ready()
		a := e.Spawn(id, chaos.ProcSpec{Global: rideGlobal(s.c), Name: name, TTL: rideTTL,
			Flags: flags, Work: rideDue + rideOutageD + 3*time.Second, Writes: 10})
		if !e.WaitEntered(a.Holder, 30*time.Second) {
			t.Fatalf("holder never started: %s", a)
		}
		entered := e.Res.Entered(a.Holder)
		// The waiter asks all along: it must get the lock only after the
		// holder's command stopped.
		b := e.Spawn(id+1, chaos.ProcSpec{Global: rideGlobal(s.c), Name: name, TTL: rideTTL,
			Flags: flags, Work: 100 * time.Millisecond, Writes: 1})
		id += 2
		for e.Rec.Now() < entered+rideDue-rideLead {
			time.Sleep(time.Millisecond)
		}
		s.stall(t, e, mode, rideOutageD)
		a.Wait()
		b.Wait()
		left, got := e.Res.LeftAt(a.Holder), e.Res.Entered(b.Holder)
		notes = append(notes, fmt.Sprintf("%s: holder exit %d, its command left %s after the grant; waiter exit %d, entered %s after the holder's command left",
			failoverMode(mode), a.Exit, msOf(left-entered), b.Exit, msOf(got-left)))
		if a.Exit != 76 || b.Exit != 0 || got < left {
			bad++
			t.Errorf("%s: holder exit %d (want 76), waiter exit %d (want 0), waiter entered at %v, holder's command left at %v",
				failoverMode(mode), a.Exit, b.Exit, got, left)
		}
		s.settle(t)
	}
	f := e.Collect("lockctl run --ttl 6s, 5s stall", rideTTL, id)
	verdict := f.Check(e)
	for _, n := range notes {
		f.Note("%s", n)
	}
	ok := bad == 0 && f.Unfenced.Overlaps == 0 && f.Fenced.AcceptedStale == 0 && verdict == "ok"
	f.Verdict = verdictOf(ok, "a stall past the window loses the lease (76) before anyone else gets it; no overlap")
	chaos.Publish(f)
	if f.Unfenced.Overlaps != 0 || f.Fenced.AcceptedStale != 0 || verdict != "ok" {
		t.Errorf("overlaps %d, accepted stale %d, porcupine %s", f.Unfenced.Overlaps, f.Fenced.AcceptedStale, verdict)
	}
}

func msOf(d time.Duration) string { return d.Round(time.Millisecond).String() }
