package chaos_test

import (
	"context"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/testkit/chaos"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"
)

// TestClusterSlotMigration: a lock is held and renewed by lockctl run on a
// 3-master Cluster while its slot (the lock key and every auxiliary key
// with it) migrates to another master: renewals meet ASK during the
// migration and MOVED after it. The holder must keep the lock to the end
// (exit 0), nobody else may get in, and the history must stay
// linearizable.
//
// A slow migration (each step held for TTL/2) keeps multi-key scripts
// failing with TRYAGAIN for longer than a renewal can bridge: the holder
// may then lose the lease safely (exit 76), but a waiter must keep waiting
// through TRYAGAIN, which is transient, and get the lock after.
func TestClusterSlotMigration(t *testing.T) {
	for _, slow := range []bool{false, true} {
		name := "9.cluster-slot-migration"
		if slow {
			name = "9.cluster-slot-migration-slow"
		}
		t.Run(name, func(t *testing.T) {
			if slow {
				full(t)
			}
			clusterMigration(t, name, slow)
		})
	}
}

func clusterMigration(t *testing.T, scenario string, slow bool) {
	c, err := redistest.StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	ttl := time.Second
	e := chaos.NewEnv(t, scenario, lockctlBin)
	step := ttl / 10
	if slow {
		step = ttl / 2
	}
	name := "mig"
	slot := lockwire.Slot("lock:" + name)
	per := 16384 / len(c.Nodes)
	src := slot / per
	if src >= len(c.Nodes) {
		src = len(c.Nodes) - 1
	}
	dst := (src + 1) % len(c.Nodes)
	global := []string{"--cluster", strings.Join(c.Addrs, ","), "--timeout", "500ms"}
	a := e.Spawn(0, chaos.ProcSpec{Global: global, Name: name, TTL: ttl,
		Flags: []string{"-n", "--ttl", ttl.String()}, Work: 4 * ttl, Writes: 16})
	if !e.WaitEntered(a.Holder, 10*time.Second) {
		t.Fatalf("holder a never started: %s", a)
	}
	b := e.Spawn(1, chaos.ProcSpec{Global: global, Name: name, TTL: ttl,
		Flags: []string{"-w", "30s", "--ttl", ttl.String()}, Work: ttl / 2, Writes: 2})
	time.Sleep(step)
	migAt := e.Rec.Now()
	moved, err := migrateSlot(c, slot, src, dst, step)
	if err != nil {
		t.Fatalf("migrate slot %d: %v", slot, err)
	}
	migDone := e.Rec.Now()
	a.Wait()
	b.Wait()
	f := e.Collect("lockctl --cluster", ttl, 2)
	verdict := f.Check(e)
	f.Note("slot %d (%d keys) moved from master %d to %d in %v while held; a exit %d, b exit %d",
		slot, moved, src, dst, (migDone - migAt).Round(time.Millisecond), a.Exit, b.Exit)
	f.Note("no unprotected variant: a client without cluster support fails with MOVED at once rather than unsafely")
	t.Logf("a: %s\nb: %s", a, b)
	if slow {
		ok := (a.Exit == 0 || a.Exit == 76) && (b.Exit == 0 || b.Exit == 69) && f.Unfenced.Overlaps == 0 && f.Fenced.AcceptedStale == 0 && verdict == "ok"
		f.Verdict = verdictOf(ok, "the holder keeps the lease or loses it safely (76); the waiter gets the lock or reports TRYAGAIN (69); no overlap")
		if b.Exit == 69 {
			f.Note("the waiter (-w 30s) exited 69 on TRYAGAIN, a transient reply during the migration, instead of waiting on")
		}
		chaos.Publish(f)
		if a.Exit != 0 && a.Exit != 76 || b.Exit != 0 && b.Exit != 69 {
			t.Errorf("slow migration: a exit %d (want 0 or 76), b exit %d (want 0 or 69)", a.Exit, b.Exit)
		}
		if f.Unfenced.Overlaps != 0 || f.Fenced.AcceptedStale != 0 || verdict != "ok" {
			t.Errorf("overlaps %d, accepted stale %d, porcupine %s", f.Unfenced.Overlaps, f.Fenced.AcceptedStale, verdict)
		}
		return
	}
	ok := a.Exit == 0 && b.Exit == 0 && f.Unfenced.Overlaps == 0 && f.Fenced.AcceptedStale == 0 && verdict == "ok"
	f.Verdict = verdictOf(ok, "held and renewed through ASK and MOVED; no overlap; linearizable")
	chaos.Publish(f)
	if a.Exit != 0 || b.Exit != 0 {
		t.Errorf("a exit %d, b exit %d; want 0 (the lock survives the migration)", a.Exit, b.Exit)
	}
	if f.Unfenced.Overlaps != 0 || f.Fenced.AcceptedStale != 0 || verdict != "ok" {
		t.Errorf("overlaps %d, accepted stale %d, porcupine %s", f.Unfenced.Overlaps, f.Fenced.AcceptedStale, verdict)
	}
	if moved == 0 {
		t.Errorf("the slot held no key: the lock was not where the test put it")
	}
}

// migrateSlot moves slot from node src to node dst the way redis-cli
// --cluster reshard does, pausing between steps so that renewals meet the
// importing/migrating state.
func migrateSlot(c *redistest.Cluster, slot, src, dst int, step time.Duration) (int, error) {
	ctx := context.Background()
	node := func(i int) *redis.Client { return redis.NewClient(&redis.Options{Addr: c.Addrs[i]}) }
	s, d := node(src), node(dst)
	defer s.Close()
	defer d.Close()
	srcID, err := s.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return 0, err
	}
	dstID, err := d.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return 0, err
	}
	sl := strconv.Itoa(slot)
	if err := d.Do(ctx, "CLUSTER", "SETSLOT", sl, "IMPORTING", srcID).Err(); err != nil {
		return 0, err
	}
	if err := s.Do(ctx, "CLUSTER", "SETSLOT", sl, "MIGRATING", dstID).Err(); err != nil {
		return 0, err
	}
	time.Sleep(step)
	keys, err := s.Do(ctx, "CLUSTER", "GETKEYSINSLOT", sl, "100").StringSlice()
	if err != nil {
		return 0, err
	}
	if len(keys) > 0 {
		args := []any{"MIGRATE", "127.0.0.1", strconv.Itoa(c.Nodes[dst].Port), "", 0, 5000, "KEYS"}
		for _, k := range keys {
			args = append(args, k)
		}
		if err := s.Do(ctx, args...).Err(); err != nil {
			return 0, err
		}
	}
	// Keys on the target, slot still MIGRATING: clients get ASK.
	time.Sleep(step)
	// The owner is announced to the target first, then the source, then
	// the rest, as CLUSTER SETSLOT's documentation asks: the target bumps
	// its config epoch so that its claim wins, and at no moment do the
	// source and the target each point at the other (clients would bounce
	// between them with MOVED until their redirects run out).
	order := []int{dst, src}
	for i := range c.Nodes {
		if i != dst && i != src {
			order = append(order, i)
		}
	}
	for _, i := range order {
		n := node(i)
		err := n.Do(ctx, "CLUSTER", "SETSLOT", sl, "NODE", dstID).Err()
		_ = n.Close() // err, the SETSLOT's, is the one that matters
		if err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}

// TestClusterMasterFailover: the master that owns a held lock's slot is
// killed and the cluster fails over to its replica (after the node timeout,
// longer than the lease). The holder loses the lease safely (exit 76); the
// waiter gets the lock from the promoted replica with a newer fence; no
// overlap, no stale write.
func TestClusterMasterFailover(t *testing.T) {
	full(t)
	c, err := redistest.StartCluster(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	if err := c.AddReplicas(); err != nil {
		t.Fatal(err)
	}
	ttl := 2 * time.Second
	e := chaos.NewEnv(t, "9.cluster-master-failover", lockctlBin)
	name := "cf"
	slot := lockwire.Slot("lock:" + name)
	src := slot / (16384 / len(c.Nodes))
	if src >= len(c.Nodes) {
		src = len(c.Nodes) - 1
	}
	global := []string{"--cluster", strings.Join(c.Addrs, ","), "--timeout", "500ms"}
	for i := 0; i < 2; i++ {
		e.Spawn(10+i, chaos.ProcSpec{Global: global, Name: name, TTL: ttl,
			Flags: []string{"-n", "--ttl", ttl.String()}, Work: 10 * time.Millisecond, Writes: 1}).Wait()
	}
	a := e.Spawn(0, chaos.ProcSpec{Global: global, Name: name, TTL: ttl,
		Flags: []string{"-n", "--ttl", ttl.String()}, Work: 3 * ttl, Writes: 12})
	if !e.WaitEntered(a.Holder, 10*time.Second) {
		t.Fatalf("holder a never started: %s", a)
	}
	// Best effort, as WAIT's timeout is: the scenario holds whether or
	// not the replica acknowledged.
	_, _ = c.Nodes[src].Do("WAIT", "1", "1000")
	killed := e.Rec.Now()
	c.Nodes[src].Kill()
	// A waiter started while the slot has no master exits 69 at once
	// (connection refused is "Redis unavailable"); the real one starts once
	// the replica took over.
	early := exitOf(exec.Command(lockctlBin, append(append([]string{"lock", name}, global...), "-w", "30s")...).Run())
	promoted := time.Duration(-1)
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if info, _ := c.Replicas[src].Do("INFO", "replication"); strings.Contains(info, "role:master") {
			promoted = e.Rec.Now() - killed
			break
		}
	}
	if promoted < 0 {
		t.Fatal("the replica never took over")
	}
	b := e.Spawn(1, chaos.ProcSpec{Global: []string{"--cluster", c.Replicas[src].Addr, "--timeout", "500ms"}, Name: name, TTL: ttl,
		Flags: []string{"-w", "60s", "--ttl", ttl.String()}, Work: ttl / 2, Writes: 2})
	a.Wait()
	b.Wait()
	f := e.Collect("lockctl --cluster (3 masters, 3 replicas)", ttl, 4)
	f.Recover = e.Res.Entered(b.Holder) - killed
	f.Detect = []time.Duration{a.End - killed}
	if a.Exit == 76 {
		f.ChildrenKilled = 1
	}
	verdict := f.Check(e)
	fs := f.Fenced
	f.Note("master %d killed; replica promoted %v after; a exit %d %v after; a waiter during the failover exited %d; b exit %d, entered %v after",
		src, promoted, a.Exit, a.End-killed, early, b.Exit, f.Recover)
	ok := (a.Exit == 0 || a.Exit == 76) && b.Exit == 0 && f.Unfenced.Overlaps == 0 && fs.AcceptedStale == 0 && fs.Duplicates == 0 && fs.Regressions == 0 && verdict == "ok"
	f.Verdict = verdictOf(ok, "holder loses the lease safely; the waiter gets it from the promoted replica with a newer fence; no overlap")
	chaos.Publish(f)
	t.Logf("a: %s\nb: %s\nfenced %+v", a, b, fs)
	if a.Exit != 0 && a.Exit != 76 || b.Exit != 0 {
		t.Errorf("a exit %d (want 0 or 76), b exit %d (want 0)", a.Exit, b.Exit)
	}
	if f.Unfenced.Overlaps != 0 || fs.AcceptedStale != 0 || fs.Duplicates != 0 || fs.Regressions != 0 || verdict != "ok" {
		t.Errorf("overlaps %d, fenced %+v, porcupine %s", f.Unfenced.Overlaps, fs, verdict)
	}
}
