package simulate

import (
	"context"
	"fmt"
	"time"
)

func init() {
	register(&scenario{
		info: Info{
			Name:  "stale-del",
			Title: "a plain DEL frees someone else's lock",
			Summary: "A takes the lock for 10 s and stalls for 12 s. Its lease runs out, B takes the lock, " +
				"and A, waking up, deletes it with DEL: the key now belongs to B. C walks in while B is still working.",
		},
		lanes: []string{"A", "B", "C", "store"},
		variants: []variant{
			{name: "SET NX PX, release with DEL", technique: "broken", run: staleDelPlain},
			{name: "lockctl compare-and-delete release: it fixes the DEL, not the stale write", technique: "partial", run: staleDelCAD},
			{name: "lockctl release plus fenced writes", technique: "correct", run: staleDelFenced},
		},
	})
}

const staleTTL = 10 * time.Second

// staleDelStart plays the part every variant shares: A acquires and
// stalls, its lease expires, B acquires and writes.
func staleDelStart(ctx context.Context, e *env, acquire func(ctx context.Context, actor string) int64) (fenceA, fenceB int64) {
	e.do(ctx, "A", "takes the lock, ttl 10 s", func(ctx context.Context) { fenceA = acquire(ctx, "A") })
	e.say("A", "stalls for 12 s (stop-the-world GC, a paused VM, a slow disk)")
	e.at(ctx, sec(10))
	e.say("redis", "A's lease runs out: Redis deletes "+e.strip(e.lockKey())+" on its own")
	e.note("A is still stalled and has no idea.")
	e.at(ctx, sec(11))
	e.do(ctx, "B", "takes the lock, ttl 10 s", func(ctx context.Context) { fenceB = acquire(ctx, "B") })
	return fenceA, fenceB
}

func staleDelPlain(ctx context.Context, e *env) Verdict {
	staleDelStart(ctx, e, func(ctx context.Context, actor string) int64 {
		e.rawAcquire(ctx, actor, staleTTL)
		return 0
	})
	e.at(ctx, sec(11.5))
	e.do(ctx, "B", "writes the order", func(ctx context.Context) { e.write(ctx, "B") })
	e.at(ctx, sec(12))
	e.do(ctx, "A", "wakes up and writes the order, as if it still held the lock", func(ctx context.Context) { e.write(ctx, "A") })
	e.note("A's lease ended at 10 s: this write overwrites B's.")
	e.do(ctx, "A", "releases with a plain DEL", func(ctx context.Context) { e.rawDel(ctx, "A") })
	e.note("DEL does not ask whose key it is: the 1 is B's lock, deleted.")
	e.at(ctx, sec(12.5))
	e.do(ctx, "C", "takes the lock, ttl 10 s", func(ctx context.Context) { e.rawAcquire(ctx, "C", staleTTL) })
	e.note("The key was free, so C gets it, while B is still working: two holders.")
	e.at(ctx, sec(13))
	e.do(ctx, "C", "writes the order", func(ctx context.Context) { e.write(ctx, "C") })
	e.at(ctx, sec(14))
	e.do(ctx, "B", "finishes and releases with a plain DEL", func(ctx context.Context) { e.rawDel(ctx, "B") })
	e.note("And now B deletes C's lock: the mistake passes down the line.")
	return staleDelVerdict(e)
}

func staleDelCAD(ctx context.Context, e *env) Verdict {
	staleDelStart(ctx, e, func(ctx context.Context, actor string) int64 {
		if l := e.acquire(ctx, actor, staleTTL); l != nil {
			return l.Fence
		}
		return 0
	})
	e.note("lockctl's acquire is one script: SET NX PX with a unique token, plus a fence number.")
	e.at(ctx, sec(11.5))
	e.do(ctx, "B", "writes the order", func(ctx context.Context) { e.write(ctx, "B") })
	e.at(ctx, sec(12))
	e.do(ctx, "A", "wakes up and writes the order, as if it still held the lock", func(ctx context.Context) { e.write(ctx, "A") })
	e.note("The lock cannot stop this: A does not ask Redis before writing.")
	e.do(ctx, "A", "releases with lockctl (compare token, then delete)", func(ctx context.Context) { e.release(ctx, "A") })
	e.note("The script sees B's token in the key and deletes nothing: the reply names the holder.")
	e.at(ctx, sec(12.5))
	e.do(ctx, "C", "tries to take the lock, ttl 10 s", func(ctx context.Context) { e.acquire(ctx, "C", staleTTL) })
	e.note("Refused: B still holds it. Only one holder at a time.")
	e.at(ctx, sec(14))
	e.do(ctx, "B", "finishes and releases with lockctl", func(ctx context.Context) { e.release(ctx, "B") })
	return staleDelVerdict(e)
}

func staleDelFenced(ctx context.Context, e *env) Verdict {
	var fenceB int64
	fenceA, fenceB := staleDelStart(ctx, e, func(ctx context.Context, actor string) int64 {
		if l := e.acquire(ctx, actor, staleTTL); l != nil {
			return l.Fence
		}
		return 0
	})
	e.note(fmt.Sprintf("B's lease carries fence %d, A's carried fence %d: newer leases get bigger numbers.", fenceB, fenceA))
	e.at(ctx, sec(11.5))
	e.do(ctx, "B", fmt.Sprintf("writes the order with fence %d", fenceB), func(ctx context.Context) { e.fencedWrite(ctx, "B", fenceB) })
	e.note("The store records the highest fence it has accepted.")
	e.at(ctx, sec(12))
	e.do(ctx, "A", fmt.Sprintf("wakes up and writes the order with fence %d", fenceA), func(ctx context.Context) { e.fencedWrite(ctx, "A", fenceA) })
	e.note(fmt.Sprintf("Rejected: the store has seen fence %d, so fence %d comes from an expired lease. Nothing is written.", fenceB, fenceA))
	e.do(ctx, "A", "releases with lockctl", func(ctx context.Context) { e.release(ctx, "A") })
	e.at(ctx, sec(12.5))
	e.do(ctx, "C", "tries to take the lock, ttl 10 s", func(ctx context.Context) { e.acquire(ctx, "C", staleTTL) })
	e.at(ctx, sec(14))
	e.do(ctx, "B", "finishes and releases with lockctl", func(ctx context.Context) { e.release(ctx, "B") })
	return staleDelVerdict(e)
}

func staleDelVerdict(e *env) Verdict {
	d, who := e.overlapWho()
	stale := e.staleWrites()
	var v Verdict
	switch {
	case d > 0:
		v.Summary = fmt.Sprintf("%s held the lock at the same time for %s", and(who), secs(d))
	default:
		v.Summary = "never two holders at once"
	}
	if len(stale) > 0 {
		w := stale[0]
		v.Summary += fmt.Sprintf("; %s's stale write landed %s after its lease ended", w.actor, secs(w.at-e.leases[w.actor].until))
	} else if e.refusedWrites() > 0 {
		v.Summary += "; the store refused the stale write"
	}
	v.Safe = d == 0 && len(stale) == 0
	return v
}

func (e *env) refusedWrites() int {
	n := 0
	for _, w := range e.writes {
		if !w.accepted {
			n++
		}
	}
	return n
}
