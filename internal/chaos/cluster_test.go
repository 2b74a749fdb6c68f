package chaos_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/chaos"
	"github.com/lockctl/lockctl/internal/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
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
	slot := lock.Slot("lock:" + name)
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
		ok := (a.Exit == 0 || a.Exit == 76) && b.Exit == 0 && f.Unfenced.Overlaps == 0 && f.Fenced.AcceptedStale == 0 && verdict == "ok"
		f.Verdict = verdictOf(ok, "the holder keeps the lease or loses it safely (76); the waiter waits through TRYAGAIN and gets the lock; no overlap")
		chaos.Publish(f)
		if !(a.Exit == 0 || a.Exit == 76) || b.Exit != 0 {
			t.Errorf("slow migration: a exit %d (want 0 or 76), b exit %d (want 0: TRYAGAIN is transient, the waiter has -w 30s)", a.Exit, b.Exit)
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
	for i := range c.Nodes {
		n := node(i)
		err := n.Do(ctx, "CLUSTER", "SETSLOT", sl, "NODE", dstID).Err()
		n.Close()
		if err != nil {
			return 0, err
		}
	}
	return len(keys), nil
}
