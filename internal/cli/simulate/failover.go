package simulate

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

func addFailover(register func(*scenario)) {
	register(&scenario{
		info: Info{
			Name:  "failover",
			Title: "the master dies before its replica has the lock",
			Summary: "Redis replicates asynchronously: the master acknowledges A's lock, then dies before the replica has it. " +
				"The replica is promoted and grants the same lock to B. Master and replica are two separate servers here " +
				"(two key prefixes on a real server), and replication is modelled: it simply never happens before the crash.",
		},
		lanes: []string{"A", "B", "store"},
		variants: []variant{
			{name: "asynchronous replication, nothing else", technique: "broken", run: failoverBroken},
			{name: "WAIT for a replica before using the lock", technique: "correct", run: failoverWait},
			{name: "fenced writes", technique: "correct", run: failoverFenced},
		},
	})
}

const failoverTTL = 10 * time.Second

// failoverCrash kills the master and promotes the replica, which never
// received the lock nor the fence counter.
func failoverCrash(ctx context.Context, e *env, writeA func(ctx context.Context)) {
	e.at(ctx, sec(0.5))
	e.say("master", "crashes before it has sent "+e.strip(e.lockKey())+" to the replica")
	e.lockNode().down = true
	if writeA != nil {
		e.at(ctx, sec(1))
		e.do(ctx, "A", "holds a lease it believes in, and writes the order", writeA)
	}
	e.at(ctx, sec(2))
	e.say("sentinel", "promotes the replica to master; clients follow it")
	e.lockOn = "replica"
	e.note("The new master never saw A's lock, nor the fence counter behind it.")
}

func failoverBroken(ctx context.Context, e *env) Verdict {
	e.locker(e.node("replica"))
	e.do(ctx, "A", "takes the lock on the master, ttl 10 s", func(ctx context.Context) { e.acquire(ctx, "A", failoverTTL) })
	e.note("The master replies at once and replicates afterwards, asynchronously.")
	failoverCrash(ctx, e, func(ctx context.Context) { e.write(ctx, "A") })
	e.at(ctx, sec(3))
	e.do(ctx, "B", "takes the lock on the new master", func(ctx context.Context) { e.acquire(ctx, "B", failoverTTL) })
	e.note("Granted: for the new master the lock is free. A's lease is still running: two holders.")
	e.at(ctx, sec(3.5))
	e.do(ctx, "B", "writes the order", func(ctx context.Context) { e.write(ctx, "B") })
	e.at(ctx, sec(5))
	e.do(ctx, "A", "writes the order again", func(ctx context.Context) { e.write(ctx, "A") })
	e.at(ctx, sec(6))
	e.do(ctx, "A", "finishes and releases", func(ctx context.Context) { e.release(ctx, "A") })
	e.note("Refused, B holds it: the first moment A could have noticed anything.")
	e.at(ctx, sec(8))
	e.do(ctx, "B", "finishes and releases", func(ctx context.Context) { e.release(ctx, "B") })
	return failoverVerdict(e)
}

func failoverWait(ctx context.Context, e *env) Verdict {
	e.locker(e.node("replica"))
	waiting := func() *lock.Locker {
		n := e.lockNode()
		return lock.New(n.rdb, &lock.Options{Prefix: n.prefix + "lock:", WaitReplicas: 1, WaitReplicasTimeout: e.wall(100 * time.Millisecond)})
	}
	e.do(ctx, "A", "takes the lock on the master and WAITs for 1 replica (--wait-replicas 1)", func(ctx context.Context) {
		e.acquireWith(ctx, waiting(), "A", failoverTTL)
	})
	e.note("WAIT 1 asks the master to wait up to 100 ms until one replica has A's write. None has it yet (the master dies before sending it), " +
		"so WAIT says 0, and lockctl gives the lock back at once: A does not start.")
	failoverCrash(ctx, e, nil)
	e.at(ctx, sec(3))
	e.do(ctx, "B", "takes the lock on the new master, also with WAIT", func(ctx context.Context) {
		e.acquireWith(ctx, waiting(), "B", failoverTTL)
	})
	e.note("The new master has no replica yet, so B is refused as well: with WAIT, lockctl prefers no lock to a lock a failover can lose. " +
		"WAIT narrows the window but does not close it (a replica that acknowledged can still lose the race in some failovers); fencing closes it.")
	return failoverVerdict(e)
}

func failoverFenced(ctx context.Context, e *env) Verdict {
	e.locker(e.node("replica"))
	var fenceA, fenceB int64
	e.do(ctx, "A", "takes the lock on the master, ttl 10 s", func(ctx context.Context) {
		if l := e.acquire(ctx, "A", failoverTTL); l != nil {
			fenceA = l.Fence()
		}
	})
	failoverCrash(ctx, e, func(ctx context.Context) { e.fencedWrite(ctx, "A", fenceA) })
	e.at(ctx, sec(3))
	e.do(ctx, "B", "takes the lock on the new master", func(ctx context.Context) {
		if l := e.acquire(ctx, "B", failoverTTL); l != nil {
			fenceB = l.Fence()
		}
	})
	e.note(fmt.Sprintf("Fence %d, above A's %d although the counter was lost with the master: a fence is the counter plus one "+
		"or the server's clock in µs, whichever is greater, so a counter that starts again starts above every fence issued before.", fenceB, fenceA))
	e.at(ctx, sec(3.5))
	e.do(ctx, "B", fmt.Sprintf("writes the order with fence %d", fenceB), func(ctx context.Context) { e.fencedWrite(ctx, "B", fenceB) })
	e.at(ctx, sec(5))
	e.do(ctx, "A", fmt.Sprintf("writes the order again with fence %d", fenceA), func(ctx context.Context) { e.fencedWrite(ctx, "A", fenceA) })
	e.note("Refused: B's newer fence got there first. The store, not the lock, decides who may write.")
	e.at(ctx, sec(6))
	e.do(ctx, "A", "finishes and releases", func(ctx context.Context) { e.release(ctx, "A") })
	e.at(ctx, sec(8))
	e.do(ctx, "B", "finishes and releases", func(ctx context.Context) { e.release(ctx, "B") })
	return failoverVerdict(e)
}

// failoverVerdict: two holders matter when both of their writes landed
// while they overlapped.
func failoverVerdict(e *env) Verdict {
	d, who := e.overlapWho()
	if d == 0 {
		if len(e.writes) == 0 && len(e.intervals) == 0 {
			return Verdict{Safe: true, Summary: "never two holders: nobody used a lock the replica did not have (and without a replica, nobody gets one)"}
		}
		return Verdict{Safe: true, Summary: "never two holders at once"}
	}
	ivs := e.allIntervals()
	start := time.Duration(1 << 62)
	for _, iv := range ivs {
		if iv.start > 0 && iv.start < start {
			start = iv.start
		}
	}
	writers := map[string]bool{}
	for _, w := range e.writes {
		if w.accepted && w.at >= start {
			writers[w.actor] = true
		}
	}
	refused := e.refusedWrites()
	if len(writers) >= 2 {
		return Verdict{Summary: fmt.Sprintf("%s held the lock at the same time for %s and both wrote the order", and(who), secs(d))}
	}
	return Verdict{Safe: true, Summary: fmt.Sprintf("%s held the lock at the same time for %s, but the store refused %s: writes landed strictly in fence order",
		and(who), secs(d), plural(refused, "write with a stale fence", "writes with stale fences"))}
}
