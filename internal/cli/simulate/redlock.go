package simulate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// The Redlock scenarios: five independent masters, each its own embedded
// server with its own clock, and pkg/lock's Redlock (lock.NewRedlock, what
// `lockctl --redlock` uses) taking the lock on a majority of them. They
// teach Martin Kleppmann's critique of Redlock: a majority survives a
// master's crash, but neither a pause of the client longer than the lease
// nor a clock jump on a master; only a fence checked by the store does.

func addRedlock(register func(*scenario)) {
	register(&scenario{
		info: Info{
			Name:  "redlock-pause",
			Title: "Redlock: a pause longer than the lease",
			Summary: "A takes the lock on a majority of five independent masters (Redlock) for 10 s, then stalls " +
				"for 12 s in a GC pause. One master crashes: the majority holds. But the lease runs out on every " +
				"master, B gets a real majority, and A wakes up and writes.",
			EmbeddedOnly: true,
		},
		lanes: []string{"A", "B", "store"},
		variants: []variant{
			{name: "Redlock, unfenced writes", technique: "broken", run: redlockPauseBroken},
			{name: "Redlock plus fenced writes", technique: "correct", run: redlockPauseFenced},
		},
		knobs: []string{KnobTTL, KnobPause},
	})
	register(&scenario{
		info: Info{
			Name:  "redlock-clock",
			Title: "Redlock: a clock jump on one master",
			Summary: "A holds the lock on masters 1, 2 and 3 of five, a majority. Master 3's clock jumps ahead, so " +
				"A's key there expires early; B takes masters 3, 4 and 5, a majority too, while A still believes it " +
				"holds the lock.",
			EmbeddedOnly: true,
		},
		lanes: []string{"A", "B", "store"},
		variants: []variant{
			{name: "Redlock, unfenced writes", technique: "broken", run: redlockClockBroken},
			{name: "Redlock plus fenced writes", technique: "correct", run: redlockClockFenced},
		},
	})
}

// masters are the Redlock scenarios' five independent servers.
var masters = []string{"m1", "m2", "m3", "m4", "m5"}

const redlockTTL = 10 * time.Second

// redlocker is pkg/lock's Redlock over the five masters, its scripts
// loaded beforehand (unrecorded) and the masters emptied again.
func (e *env) redlocker() *lock.Locker {
	if e.rl != nil {
		return e.rl
	}
	clients := make([]redis.UniversalClient, len(masters))
	for i, m := range masters {
		n := e.node(m)
		e.locker(n)
		clients[i] = n.rdb
	}
	// Virtual time: a slow reply from a busy machine must not count as a
	// master that failed, so the bound on each reply is generous.
	l, err := lock.NewRedlock(clients, &lock.Options{Prefix: "lock:", NodeTimeout: 10 * time.Second})
	if err != nil {
		e.fail(fmt.Errorf("simulate: redlock: %w", err))
		return nil
	}
	// The write-back of differing fences runs a script of its own.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := l.Fences().Next(ctx, "lockctl-simulate-warmup"); err != nil {
		e.fail(fmt.Errorf("simulate: loading Redlock scripts: %w", err))
	}
	for _, m := range masters {
		if n := e.nodes[m]; n.mr != nil {
			n.mr.FlushAll()
		}
	}
	e.rl = l
	return l
}

// redlockAcquire takes the lock on a majority of the masters.
func (e *env) redlockAcquire(ctx context.Context, actor string, ttl time.Duration) int64 {
	var fence int64
	l := e.redlocker()
	if l == nil {
		return 0
	}
	e.parallel(func() {
		lease, err := l.Acquire(ctx, lockName, ttl, &lock.AcquireOptions{Token: token(actor), Owner: actor})
		if err != nil {
			e.expect(err, lock.ErrNotObtained, lock.ErrUnavailable)
			return
		}
		fence = lease.Fence()
	})
	if fence != 0 {
		e.grant(actor, ttl)
	}
	return fence
}

// jump moves master m's clock ahead by d: the keys it holds age at once.
func (e *env) jump(m string, d time.Duration) {
	n := e.node(m)
	n.skew += d
	if n.mr != nil {
		n.mr.SetTime(epoch.Add(e.now + n.skew))
	}
}

func redlockPauseStart(ctx context.Context, e *env, t staleTimes) (fenceA, fenceB int64) {
	e.redlocker()
	e.do(ctx, "A", "takes the lock on the 5 masters (Redlock), ttl "+secs(t.ttl), func(ctx context.Context) {
		fenceA = e.redlockAcquire(ctx, "A", t.ttl)
	})
	e.note("5 of 5 granted; a majority is 3: A holds the lock. The fence is the greatest any master issued.")
	e.say("A", "stalls for "+secs(t.pause)+" (stop-the-world GC, a paused VM)")
	e.note("Redlock's own check (the lease counts only for its TTL minus the time the acquire took) catches a delay " +
		"before the grant, not a pause after it.")
	e.at(ctx, min(time.Second, t.ttl/2, t.pause/2))
	e.say("m5", "master 5 crashes")
	e.node("m5").down = true
	e.note("A's key is still on 4 of 5 masters, a majority: surviving one master's crash is what Redlock buys.")
	if !t.expires {
		return fenceA, 0
	}
	e.at(ctx, t.ttl)
	e.say("redis", "A's lease runs out: masters 1 to 4 each delete "+e.strip(e.lockKeyOn("m1"))+" on their own")
	e.note("Every master does its job. A is still stalled and has no idea.")
	e.at(ctx, t.bAt)
	e.do(ctx, "B", "takes the lock on the 5 masters (Redlock), ttl "+secs(t.ttl), func(ctx context.Context) {
		fenceB = e.redlockAcquire(ctx, "B", t.ttl)
	})
	e.note("4 of 5 granted: a real majority, and the lock is B's.")
	return fenceA, fenceB
}

// redlockInTime: A wakes before its lease ran out and writes.
func redlockInTime(ctx context.Context, e *env, t staleTimes, write func(ctx context.Context)) Verdict {
	e.at(ctx, t.pause)
	e.do(ctx, "A", "wakes up and writes the order", write)
	e.note(fmt.Sprintf("A's lease runs until %s: the write is A's to make.", secs(t.ttl)))
	v := redlockVerdict(e, "A's pause")
	v.Summary = fmt.Sprintf("never two writers: the %s pause ended inside the %s lease (a --pause of %s or more shows the failure)",
		secs(t.pause), secs(t.ttl), secs(t.ttl))
	return v
}

func redlockPauseBroken(ctx context.Context, e *env) Verdict {
	t := staleDelTimes(e)
	redlockPauseStart(ctx, e, t)
	if !t.expires {
		return redlockInTime(ctx, e, t, func(ctx context.Context) { e.write(ctx, "A") })
	}
	e.at(ctx, t.bWrite)
	e.do(ctx, "B", "writes the order", func(ctx context.Context) { e.write(ctx, "B") })
	e.at(ctx, t.pause)
	e.do(ctx, "A", "wakes up and writes the order, as if it still held the lock", func(ctx context.Context) { e.write(ctx, "A") })
	e.note(fmt.Sprintf("A's lease ended at %s: this write overwrites B's. No number of masters can stop a client that does not ask them before writing.", secs(t.ttl)))
	return redlockVerdict(e, "A's pause")
}

func redlockPauseFenced(ctx context.Context, e *env) Verdict {
	t := staleDelTimes(e)
	fenceA, fenceB := redlockPauseStart(ctx, e, t)
	if !t.expires {
		return redlockInTime(ctx, e, t, func(ctx context.Context) { e.fencedWrite(ctx, "A", fenceA) })
	}
	e.at(ctx, t.bWrite)
	e.do(ctx, "B", fmt.Sprintf("writes the order with fence %d", fenceB), func(ctx context.Context) { e.fencedWrite(ctx, "B", fenceB) })
	e.at(ctx, t.pause)
	e.do(ctx, "A", fmt.Sprintf("wakes up and writes the order with fence %d", fenceA), func(ctx context.Context) { e.fencedWrite(ctx, "A", fenceA) })
	e.note(fmt.Sprintf("Rejected: the store has seen fence %d, so fence %d comes from an expired lease. Nothing is written.", fenceB, fenceA))
	return redlockVerdict(e, "A's pause")
}

func redlockClockStart(ctx context.Context, e *env) (fenceA, fenceB int64) {
	e.redlocker()
	e.cut["A/m4"], e.cut["A/m5"] = true, true
	e.say("A", "reaches masters 1, 2 and 3 only: 4 and 5 are behind a broken link")
	e.do(ctx, "A", "takes the lock on the 5 masters (Redlock), ttl 10 s", func(ctx context.Context) {
		fenceA = e.redlockAcquire(ctx, "A", redlockTTL)
	})
	e.note("3 of 5 granted, a majority: A holds the lock until 10 s.")
	e.at(ctx, sec(2))
	e.say("m3", "master 3's clock jumps 10 s ahead (an NTP step, a hand-set date)")
	e.jump("m3", 10*time.Second)
	e.note("By master 3's clock A's key is 12 s old: master 3 deletes it. A's lease has 8 s left, and A believes it holds a majority.")
	e.at(ctx, sec(3))
	e.do(ctx, "B", "takes the lock on the 5 masters (Redlock), ttl 10 s", func(ctx context.Context) {
		fenceB = e.redlockAcquire(ctx, "B", redlockTTL)
	})
	e.note("Masters 1 and 2 refuse (A holds them), 3, 4 and 5 grant: 3 of 5, a majority too. Two majorities share master 3, " +
		"whose clock jumped. Their fences differ, so Redlock writes the greatest back to B's three masters.")
	return fenceA, fenceB
}

func redlockClockBroken(ctx context.Context, e *env) Verdict {
	redlockClockStart(ctx, e)
	e.at(ctx, sec(3.5))
	e.do(ctx, "B", "writes the order", func(ctx context.Context) { e.write(ctx, "B") })
	e.at(ctx, sec(5))
	e.do(ctx, "A", "writes the order, its lease still valid by its own clock", func(ctx context.Context) { e.write(ctx, "A") })
	e.note("A's write overwrites B's: both hold a lock granted by a majority.")
	return redlockVerdict(e, "the clock jump")
}

func redlockClockFenced(ctx context.Context, e *env) Verdict {
	fenceA, fenceB := redlockClockStart(ctx, e)
	e.at(ctx, sec(3.5))
	e.do(ctx, "B", fmt.Sprintf("writes the order with fence %d", fenceB), func(ctx context.Context) { e.fencedWrite(ctx, "B", fenceB) })
	e.at(ctx, sec(5))
	e.do(ctx, "A", fmt.Sprintf("writes the order with fence %d, its lease still valid by its own clock", fenceA), func(ctx context.Context) {
		e.fencedWrite(ctx, "A", fenceA)
	})
	e.note(fmt.Sprintf("Rejected: the store has seen fence %d. Both still hold a majority-granted lock, but only the newer one may write.", fenceB))
	return redlockVerdict(e, "the clock jump")
}

// lockKeyOn is the lock's key on master m.
func (e *env) lockKeyOn(m string) string { return e.node(m).key("lock:" + lockName) }

// redlockVerdict names what a majority buys (one master's crash) and what
// it does not (cause: a pause, a clock jump), and what the fence does.
func redlockVerdict(e *env, cause string) Verdict {
	d, who := e.overlapWho()
	writers := map[string]bool{}
	for _, w := range e.writes {
		if w.accepted {
			writers[w.actor] = true
		}
	}
	var parts []string
	if stale := e.staleWrites(); len(stale) > 0 {
		w := stale[0]
		parts = append(parts, fmt.Sprintf("%s's stale write landed %s after its lease ended", w.actor, secs(w.at-e.leases[w.actor].until)))
	} else if d > 0 && len(writers) >= 2 {
		parts = append(parts, fmt.Sprintf("%s held majority-granted leases at once for %s and both wrote the order", and(who), secs(d)))
	}
	if len(parts) > 0 {
		return Verdict{Summary: strings.Join(parts, "; ") + fmt.Sprintf(". A majority survives one master's crash, not %s: without a fence nothing stops the write", cause)}
	}
	s := "never two writers"
	if n := e.refusedWrites(); n > 0 {
		s = "the store refused " + plural(n, "write with a stale fence", "writes with stale fences")
	}
	if d > 0 {
		s = fmt.Sprintf("%s held majority-granted leases at once for %s, but %s", and(who), secs(d), s)
	}
	return Verdict{Safe: true, Summary: s + fmt.Sprintf(". The majority did not survive %s; the fence kept the data safe", cause)}
}
