package simulate

import (
	"context"
	"fmt"
	"time"
)

func init() {
	register(&scenario{
		info: Info{
			Name:  "no-renew",
			Title: "a job that outlives its lock's TTL",
			Summary: "A's job takes 19 s, its lock's TTL is 9 s. Without renewal the lock expires mid-job and B starts the same job. " +
				"A watchdog renews every ttl/3 while the job runs, and stops the job when renewal is lost.",
		},
		lanes: []string{"A", "B", "store"},
		variants: []variant{
			{name: "fixed TTL, no renewal", technique: "broken", run: noRenewBroken},
			{name: "watchdog renews every ttl/3 (lockctl run)", technique: "correct", run: noRenewWatchdog},
			{name: "watchdog loses renewal and stops the job", technique: "correct", run: noRenewLost},
		},
	})
}

const jobTTL = 9 * time.Second

func noRenewBroken(ctx context.Context, e *env) Verdict {
	e.do(ctx, "A", "takes the lock, ttl 9 s, and starts a 19 s job", func(ctx context.Context) { e.acquire(ctx, "A", jobTTL) })
	e.at(ctx, sec(4))
	e.do(ctx, "A", "writes batch 1", func(ctx context.Context) { e.write(ctx, "A") })
	e.at(ctx, sec(9))
	e.say("redis", "A's lease runs out mid-job: Redis deletes "+e.strip(e.lockKey()))
	e.note("Nobody renewed it. A keeps working: it only checks the lock when it starts.")
	e.at(ctx, sec(11))
	e.do(ctx, "B", "takes the lock, ttl 9 s, and starts the same job", func(ctx context.Context) { e.acquire(ctx, "B", jobTTL) })
	e.at(ctx, sec(12))
	e.do(ctx, "B", "writes batch 1", func(ctx context.Context) { e.write(ctx, "B") })
	e.at(ctx, sec(14))
	e.do(ctx, "A", "writes batch 2", func(ctx context.Context) { e.write(ctx, "A") })
	e.note("Two copies of the job now write to the same data.")
	e.at(ctx, sec(16))
	e.do(ctx, "B", "writes batch 2 and releases", func(ctx context.Context) {
		e.write(ctx, "B")
		e.release(ctx, "B")
	})
	e.at(ctx, sec(19))
	e.do(ctx, "A", "writes batch 3 and releases", func(ctx context.Context) {
		e.write(ctx, "A")
		e.release(ctx, "A")
	})
	e.note("Not held: the lock has been gone since 9 s. Only now can A tell.")
	return noRenewVerdict(e)
}

// renewStep is one watchdog tick.
func renewStep(ctx context.Context, e *env, t float64) {
	e.at(ctx, sec(t))
	e.do(ctx, "A", "watchdog renews the lease to 9 s (every ttl/3 = 3 s)", func(ctx context.Context) { e.renew(ctx, "A", jobTTL) })
}

func noRenewWatchdog(ctx context.Context, e *env) Verdict {
	e.do(ctx, "A", "takes the lock, ttl 9 s, and starts a 19 s job under a watchdog", func(ctx context.Context) { e.acquire(ctx, "A", jobTTL) })
	e.note("Like `lockctl run --ttl 9s -- job`: the job runs as a child, lockctl renews in the background.")
	renewStep(ctx, e, 3)
	e.note("Renew compares the token, then sets the TTL: it can never extend someone else's lock.")
	e.at(ctx, sec(4))
	e.do(ctx, "A", "writes batch 1", func(ctx context.Context) { e.write(ctx, "A") })
	renewStep(ctx, e, 6)
	renewStep(ctx, e, 9)
	e.at(ctx, sec(11))
	e.do(ctx, "B", "tries to take the lock", func(ctx context.Context) { e.acquire(ctx, "B", jobTTL) })
	e.note("Refused: the lease is fresh, A is still working.")
	renewStep(ctx, e, 12)
	e.at(ctx, sec(14))
	e.do(ctx, "A", "writes batch 2", func(ctx context.Context) { e.write(ctx, "A") })
	renewStep(ctx, e, 15)
	renewStep(ctx, e, 18)
	e.at(ctx, sec(19))
	e.do(ctx, "A", "writes batch 3, the job exits, lockctl releases", func(ctx context.Context) {
		e.write(ctx, "A")
		e.release(ctx, "A")
	})
	e.at(ctx, sec(20))
	e.do(ctx, "B", "takes the lock", func(ctx context.Context) { e.acquire(ctx, "B", jobTTL) })
	e.note("B starts only after A is done.")
	return noRenewVerdict(e)
}

func noRenewLost(ctx context.Context, e *env) Verdict {
	e.do(ctx, "A", "takes the lock, ttl 9 s, and starts a 19 s job under a watchdog", func(ctx context.Context) { e.acquire(ctx, "A", jobTTL) })
	renewStep(ctx, e, 3)
	e.at(ctx, sec(4))
	e.do(ctx, "A", "writes batch 1", func(ctx context.Context) { e.write(ctx, "A") })
	renewStep(ctx, e, 6)
	e.note("Last successful renewal, sent at 6 s: the lease now ends at 15 s at the latest.")
	e.at(ctx, sec(7))
	e.say("A", "loses its network path to Redis")
	e.partitioned["A"] = true
	renewStep(ctx, e, 9)
	e.note("No reply. The watchdog cannot know whether Redis still has the lease.")
	e.at(ctx, sec(10))
	e.do(ctx, "A", "writes batch 2", func(ctx context.Context) { e.write(ctx, "A") })
	e.note("Still safe: the lease sent at 6 s lasts until 15 s.")
	renewStep(ctx, e, 12)
	e.at(ctx, sec(14))
	e.say("A", "watchdog: no renewal since 6 s, local deadline 6 s + 9 s ttl - 1 s margin = 14 s reached; SIGTERM to the job, exit 76")
	e.drop("A")
	e.note("lockctl counts the lock as lost by its own clock, without waiting for Redis to confirm, and stops the job before the lease can run out.")
	e.at(ctx, sec(15))
	e.say("redis", "A's lease runs out: Redis deletes "+e.strip(e.lockKey()))
	e.at(ctx, sec(16))
	e.do(ctx, "B", "takes the lock and starts the job", func(ctx context.Context) { e.acquire(ctx, "B", jobTTL) })
	e.note("A's job is already stopped: one copy of the job at a time.")
	return noRenewVerdict(e)
}

func noRenewVerdict(e *env) Verdict {
	stale := e.staleWrites()
	var worked time.Duration
	for _, w := range stale {
		if d := w.at - e.leases[w.actor].until; d > worked {
			worked = d
		}
	}
	if len(stale) > 0 {
		return Verdict{Summary: fmt.Sprintf("A kept working %s past its lease: %s landed after it ran out, while B ran the same job",
			secs(worked), plural(len(stale), "write", "writes"))}
	}
	if d, who := e.overlapWho(); d > 0 {
		return Verdict{Summary: fmt.Sprintf("%s held the lock at the same time for %s", and(who), secs(d))}
	}
	return Verdict{Safe: true, Summary: "every write happened under a live lease; never two copies of the job at once"}
}
