package simulate

import (
	"context"
	"fmt"
	"sort"
	"time"
)

func addNoRenew(register func(*scenario)) {
	register(&scenario{
		info: Info{
			Name:  "no-renew",
			Title: "a job that outlives its lock's TTL",
			Summary: "A's job takes 19 s, its lock's TTL is 9 s. Without renewal the lock expires mid-job and B starts the same job. " +
				"A watchdog renews every ttl/3 here (lockctl run: ttl/6) while the job runs, and stops the job when renewal is lost.",
		},
		lanes:    []string{"A", "B", "store"},
		variants: noRenewVariants,
		knobs:    []string{KnobTTL, KnobJob, KnobRenewScript},
		forOptions: func(o *Options) []variant {
			vs := []variant{noRenewVariants[0], noRenewVariants[1]}
			if o != nil && o.RenewScript != nil {
				s := o.RenewScript
				vs = []variant{{name: "watchdog renews with your " + s.Name + ", A stalls past its lease", technique: "yours",
					run: func(ctx context.Context, e *env) Verdict { return noRenewScript(ctx, e, s) }}}
			}
			// The lost-renewal story needs a job still running when the
			// watchdog gives up.
			if t := noRenewTimes(&env{opts: o}); t.job > t.deadline {
				vs = append(vs, noRenewVariants[2])
			}
			return vs
		},
	})
}

var noRenewVariants = []variant{
	{name: "fixed TTL, no renewal", technique: "broken", run: noRenewBroken},
	{name: "watchdog renews the lease (lockctl run)", technique: "correct", run: noRenewWatchdog},
	{name: "watchdog loses renewal and stops the job", technique: "correct", run: noRenewLost},
}

// noRenewTimes is no-renew's timeline for the TTL and job length given
// (9 s and 19 s by default): the broken variant's steps fall between the
// lease's end and the job's, at the same fractions of that gap.
type noRenewTiming struct {
	ttl, job, tick, gap, w1 time.Duration
	margin, cut, deadline   time.Duration
}

func noRenewTimes(e *env) noRenewTiming {
	t := noRenewTiming{ttl: e.ttlOr(9 * time.Second), job: e.jobOr(19 * time.Second)}
	t.tick = t.ttl / 3
	t.gap = t.job - t.ttl
	t.w1 = t.ttl * 4 / 9
	t.margin = t.ttl / 9
	t.cut = 2*t.tick + t.margin
	t.deadline = 2*t.tick + t.ttl - t.margin
	return t
}

// frac is the time a fraction of the way from the lease's end to the job's.
func (t noRenewTiming) frac(tenths int64) time.Duration {
	return t.ttl + t.gap*time.Duration(tenths)/10
}

func noRenewBroken(ctx context.Context, e *env) Verdict {
	t := noRenewTimes(e)
	e.do(ctx, "A", fmt.Sprintf("takes the lock, ttl %s, and starts a %s job", secs(t.ttl), secs(t.job)), func(ctx context.Context) { e.acquire(ctx, "A", t.ttl) })
	e.at(ctx, t.w1)
	e.do(ctx, "A", "writes batch 1", func(ctx context.Context) { e.write(ctx, "A") })
	if t.job < t.ttl {
		e.at(ctx, t.job)
		e.do(ctx, "A", "writes batch 2, the job ends, and releases", func(ctx context.Context) {
			e.write(ctx, "A")
			e.release(ctx, "A")
		})
		e.note(fmt.Sprintf("The %s job ended inside its %s lease: no renewal was needed.", secs(t.job), secs(t.ttl)))
		v := noRenewVerdict(e)
		v.Summary += fmt.Sprintf(" (the %s job fits its %s TTL; a --job of %s or more shows the failure)", secs(t.job), secs(t.ttl), secs(t.ttl))
		return v
	}
	e.at(ctx, t.ttl)
	e.say("redis", "A's lease runs out mid-job: Redis deletes "+e.strip(e.lockKey()))
	e.note("Nobody renewed it. A keeps working: it only checks the lock when it starts.")
	e.at(ctx, t.frac(2))
	e.do(ctx, "B", fmt.Sprintf("takes the lock, ttl %s, and starts the same job", secs(t.ttl)), func(ctx context.Context) { e.acquire(ctx, "B", t.ttl) })
	e.at(ctx, t.frac(3))
	e.do(ctx, "B", "writes batch 1", func(ctx context.Context) { e.write(ctx, "B") })
	e.at(ctx, t.frac(5))
	e.do(ctx, "A", "writes batch 2", func(ctx context.Context) { e.write(ctx, "A") })
	e.note("Two copies of the job now write to the same data.")
	e.at(ctx, t.frac(7))
	e.do(ctx, "B", "writes batch 2 and releases", func(ctx context.Context) {
		e.write(ctx, "B")
		e.release(ctx, "B")
	})
	e.at(ctx, t.job)
	e.do(ctx, "A", "writes batch 3 and releases", func(ctx context.Context) {
		e.write(ctx, "A")
		e.release(ctx, "A")
	})
	e.note(fmt.Sprintf("Not held: the lock has been gone since %s. Only now can A tell.", secs(t.ttl)))
	return noRenewVerdict(e)
}

// renewStep is one watchdog tick.
func renewStep(ctx context.Context, e *env, t noRenewTiming, at time.Duration) {
	e.at(ctx, at)
	e.do(ctx, "A", fmt.Sprintf("watchdog renews the lease to %s (every ttl/3 = %s)", secs(t.ttl), secs(t.tick)), func(ctx context.Context) { e.renew(ctx, "A", t.ttl) })
}

// step is a moment of a story whose steps are sorted by time.
type step struct {
	at time.Duration
	fn func()
}

func playSteps(ctx context.Context, e *env, steps []step) {
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].at < steps[j].at })
	for _, s := range steps {
		e.at(ctx, s.at)
		s.fn()
	}
}

func noRenewWatchdog(ctx context.Context, e *env) Verdict {
	t := noRenewTimes(e)
	e.do(ctx, "A", fmt.Sprintf("takes the lock, ttl %s, and starts a %s job under a watchdog", secs(t.ttl), secs(t.job)), func(ctx context.Context) { e.acquire(ctx, "A", t.ttl) })
	e.note(fmt.Sprintf("Like `lockctl run --ttl %s -- job`: the job runs as a child, lockctl renews in the background.", t.ttl))
	var steps []step
	first := true
	for at := t.tick; at < t.job; at += t.tick {
		steps = append(steps, step{at, func() {
			renewStep(ctx, e, t, at)
			if first {
				e.note("Renew compares the token, then sets the TTL: it can never extend someone else's lock.")
				first = false
			}
		}})
	}
	steps = append(steps, step{t.w1, func() { e.do(ctx, "A", "writes batch 1", func(ctx context.Context) { e.write(ctx, "A") }) }})
	if t.job > t.ttl {
		steps = append(steps,
			step{t.frac(2), func() {
				e.do(ctx, "B", "tries to take the lock", func(ctx context.Context) { e.acquire(ctx, "B", t.ttl) })
				e.note("Refused: the lease is fresh, A is still working.")
			}},
			step{t.frac(5), func() { e.do(ctx, "A", "writes batch 2", func(ctx context.Context) { e.write(ctx, "A") }) }})
	}
	steps = append(steps,
		step{t.job, func() {
			e.do(ctx, "A", "writes batch 3, the job exits, lockctl releases", func(ctx context.Context) {
				e.write(ctx, "A")
				e.release(ctx, "A")
			})
		}},
		step{t.job + time.Second, func() {
			e.do(ctx, "B", "takes the lock", func(ctx context.Context) { e.acquire(ctx, "B", t.ttl) })
			e.note("B starts only after A is done.")
		}})
	playSteps(ctx, e, steps)
	return noRenewVerdict(e)
}

func noRenewLost(ctx context.Context, e *env) Verdict {
	t := noRenewTimes(e)
	e.do(ctx, "A", fmt.Sprintf("takes the lock, ttl %s, and starts a %s job under a watchdog", secs(t.ttl), secs(t.job)), func(ctx context.Context) { e.acquire(ctx, "A", t.ttl) })
	renewStep(ctx, e, t, t.tick)
	e.at(ctx, t.w1)
	e.do(ctx, "A", "writes batch 1", func(ctx context.Context) { e.write(ctx, "A") })
	renewStep(ctx, e, t, 2*t.tick)
	e.note(fmt.Sprintf("Last successful renewal, sent at %s: the lease now ends at %s at the latest.", secs(2*t.tick), secs(2*t.tick+t.ttl)))
	e.at(ctx, t.cut)
	e.say("A", "loses its network path to Redis")
	e.partitioned["A"] = true
	renewStep(ctx, e, t, 3*t.tick)
	e.note("No reply. The watchdog cannot know whether Redis still has the lease.")
	e.at(ctx, t.ttl+t.margin)
	e.do(ctx, "A", "writes batch 2", func(ctx context.Context) { e.write(ctx, "A") })
	e.note(fmt.Sprintf("Still safe: the lease sent at %s lasts until %s.", secs(2*t.tick), secs(2*t.tick+t.ttl)))
	if 4*t.tick < t.deadline {
		renewStep(ctx, e, t, 4*t.tick)
	}
	e.at(ctx, t.deadline)
	e.say("A", fmt.Sprintf("watchdog: no renewal since %s, local deadline %s + %s ttl - %s margin = %s reached; SIGTERM to the job, exit 76",
		secs(2*t.tick), secs(2*t.tick), secs(t.ttl), secs(t.margin), secs(t.deadline)))
	e.drop("A")
	e.note("lockctl counts the lock as lost by its own clock, without waiting for Redis to confirm, and stops the job before the lease can run out.")
	e.at(ctx, 2*t.tick+t.ttl)
	e.say("redis", "A's lease runs out: Redis deletes "+e.strip(e.lockKey()))
	e.at(ctx, 2*t.tick+t.ttl+t.margin)
	e.do(ctx, "B", "takes the lock and starts the job", func(ctx context.Context) { e.acquire(ctx, "B", t.ttl) })
	e.note("A's job is already stopped: one copy of the job at a time.")
	return noRenewVerdict(e)
}

// noRenewScript: A's watchdog renews with the learner's script; A stalls
// past its lease, B takes the lock, and A's watchdog, waking, renews.
func noRenewScript(ctx context.Context, e *env, s *Script) Verdict {
	t := noRenewTimes(e)
	var runs []scriptRun
	renewed := false
	renew := func(at time.Duration) {
		e.at(ctx, at)
		e.do(ctx, "A", fmt.Sprintf("watchdog renews the lease to %s with your %s", secs(t.ttl), s.Name), func(ctx context.Context) {
			n := e.lockNode()
			r := e.runScript(ctx, n, s, []string{e.lockKey()}, []string{token("A"), fmt.Sprint(e.ms(t.ttl))})
			e.record(Event{Actor: "A", Action: e.action, Command: e.showCommand(n, []interface{}{"eval", "<" + s.Name + ">", 1, e.lockKey(), token("A"), e.ms(t.ttl)}), Reply: r.reply})
			*e.stepCount++
			if len(r.trace) > 0 {
				e.note("Inside the script: " + joinTrace(r.trace) + ".")
			}
			renewed = r.failed == "" && r.reply != "0" && r.reply != "(nil)"
			runs = append(runs, r)
		})
		if renewed {
			e.extend("A", t.ttl)
		}
	}
	e.do(ctx, "A", fmt.Sprintf("takes the lock, ttl %s, and starts a %s job under a watchdog", secs(t.ttl), secs(t.job)), func(ctx context.Context) { e.rawAcquire(ctx, "A", t.ttl) })
	e.note("Taken with SET key token NX PX ttl: the key's value is the token itself. The watchdog counts a reply other than 0, nil or an error as renewed.")
	renew(t.tick)
	e.at(ctx, t.w1)
	e.do(ctx, "A", "writes batch 1", func(ctx context.Context) { e.write(ctx, "A") })
	renew(2 * t.tick)
	stall := t.ttl + t.margin*2
	e.at(ctx, t.cut)
	e.say("A", fmt.Sprintf("stalls for %s, its watchdog too (stop-the-world GC)", secs(stall)))
	end := 2*t.tick + t.ttl
	e.at(ctx, end)
	e.say("redis", "A's lease runs out: Redis deletes "+e.strip(e.lockKey()))
	e.at(ctx, end+t.margin/2)
	e.do(ctx, "B", "takes the lock and starts the job", func(ctx context.Context) { e.rawAcquire(ctx, "B", t.ttl) })
	renew(t.cut + stall)
	wake := t.cut + stall
	if renewed {
		e.note("The reply says renewed, but the key is B's: A's watchdog just extended B's lock and carries on.")
		e.at(ctx, wake+t.margin/2)
		e.do(ctx, "A", "writes batch 2", func(ctx context.Context) { e.write(ctx, "A") })
		e.note("Two copies of the job write to the same data.")
	} else {
		e.say("A", "watchdog: renewal refused, the lock is lost; SIGTERM to the job, exit 76")
		e.drop("A")
		e.note("A's job stops before writing again: B's job is the only one.")
	}
	e.at(ctx, wake+t.margin)
	e.do(ctx, "B", "writes batch 1", func(ctx context.Context) { e.write(ctx, "B") })
	v := noRenewVerdict(e)
	var what string
	for _, r := range runs {
		if r.failed != "" {
			what = failedText(s, r) + ": a renewal that fails leaves the lease to run out"
			break
		}
	}
	switch {
	case what != "":
	case renewed:
		what = fmt.Sprintf("your %s renewed B's lock for A", s.Name)
	default:
		what = fmt.Sprintf("your %s refused to renew a lock that was no longer A's", s.Name)
	}
	v.Summary = what + "; " + v.Summary
	return v
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
