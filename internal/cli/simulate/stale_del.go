package simulate

import (
	"context"
	"fmt"
	"strings"
	"time"
)

func addStaleDel(register func(*scenario)) {
	register(&scenario{
		info: Info{
			Name:  "stale-del",
			Title: "a plain DEL frees someone else's lock",
			Summary: "A takes the lock for 10 s and stalls for 12 s. Its lease runs out, B takes the lock, " +
				"and A, waking up, deletes it with DEL: the key now belongs to B. C walks in while B is still working.",
		},
		lanes:    []string{"A", "B", "C", "store"},
		variants: staleDelVariants,
		knobs:    []string{KnobTTL, KnobPause, KnobReleaseScript},
		forOptions: func(o *Options) []variant {
			if o == nil || o.ReleaseScript == nil {
				return staleDelVariants
			}
			s := o.ReleaseScript
			return []variant{
				{name: "SET NX PX, release with your " + s.Name, technique: "yours", run: func(ctx context.Context, e *env) Verdict {
					return staleDelScript(ctx, e, s)
				}},
				staleDelVariants[2],
			}
		},
	})
}

var staleDelVariants = []variant{
	{name: "SET NX PX, release with DEL", technique: "broken", run: staleDelPlain},
	{name: "lockctl compare-and-delete release: it fixes the DEL, not the stale write", technique: "partial", run: staleDelCAD},
	{name: "lockctl release plus fenced writes", technique: "correct", run: staleDelFenced},
}

// staleTimes is stale-del's timeline for the TTL and pause given: B comes
// a second after A's lease ran out (or halfway to A's waking), writes, and
// is still working when A wakes up; C comes after A's release.
type staleTimes struct {
	ttl, pause     time.Duration
	expires        bool // the pause outlasts the lease: the failure
	bAt, bWrite    time.Duration
	cAt, cWrite, b time.Duration // b: B finishes
}

func staleDelTimes(e *env) staleTimes {
	t := staleTimes{ttl: e.ttlOr(10 * time.Second), pause: e.pauseOr(12 * time.Second)}
	T, P := t.ttl, t.pause
	t.expires = P >= T
	if t.expires {
		t.bAt = max(T+min(time.Second, (P-T)/2), P-T/2)
		t.bWrite = t.bAt + min(500*time.Millisecond, (P-t.bAt)/2)
	} else {
		t.bAt = P + 500*time.Millisecond
		t.bWrite = P + time.Second
	}
	// What is left of B's lease when A wakes paces the rest.
	left := t.bAt + T - P
	t.cAt = P + min(500*time.Millisecond, left/4)
	t.cWrite = P + min(time.Second, left/2)
	t.b = P + min(2*time.Second, left*3/4)
	if !t.expires {
		t.b = P + 2*time.Second
	}
	return t
}

// staleDelStart plays the part every variant shares: A acquires and
// stalls; if the pause outlasts the lease, A's lease expires and B acquires.
func staleDelStart(ctx context.Context, e *env, t staleTimes, acquire func(ctx context.Context, actor string) int64) (fenceA, fenceB int64) {
	e.do(ctx, "A", "takes the lock, ttl "+secs(t.ttl), func(ctx context.Context) { fenceA = acquire(ctx, "A") })
	e.say("A", "stalls for "+secs(t.pause)+" (stop-the-world GC, a paused VM, a slow disk)")
	if !t.expires {
		e.note(fmt.Sprintf("The pause is shorter than the %s TTL: A wakes up with its lease still running.", secs(t.ttl)))
		return fenceA, 0
	}
	e.at(ctx, t.ttl)
	e.say("redis", "A's lease runs out: Redis deletes "+e.strip(e.lockKey())+" on its own")
	e.note("A is still stalled and has no idea.")
	e.at(ctx, t.bAt)
	e.do(ctx, "B", "takes the lock, ttl "+secs(t.ttl), func(ctx context.Context) { fenceB = acquire(ctx, "B") })
	return fenceA, fenceB
}

// staleDelInTime is the story when A wakes before its lease ran out: A
// writes and releases, then B takes its turn.
func staleDelInTime(ctx context.Context, e *env, t staleTimes, write func(ctx context.Context, actor string, fence int64), release func(ctx context.Context, actor string),
	acquire func(ctx context.Context, actor string) int64, fenceA int64, how string) {
	e.at(ctx, t.pause)
	e.do(ctx, "A", "wakes up and writes the order", func(ctx context.Context) { write(ctx, "A", fenceA) })
	e.note(fmt.Sprintf("A's lease runs until %s: the write is A's to make.", secs(t.ttl)))
	e.do(ctx, "A", "releases "+how, func(ctx context.Context) { release(ctx, "A") })
	e.at(ctx, t.bAt)
	var fenceB int64
	e.do(ctx, "B", "takes the lock, ttl "+secs(t.ttl), func(ctx context.Context) { fenceB = acquire(ctx, "B") })
	e.at(ctx, t.bWrite)
	e.do(ctx, "B", "writes the order", func(ctx context.Context) { write(ctx, "B", fenceB) })
	e.at(ctx, t.b)
	e.do(ctx, "B", "finishes and releases "+how, func(ctx context.Context) { release(ctx, "B") })
}

func unfenced(e *env) func(ctx context.Context, actor string, _ int64) {
	return func(ctx context.Context, actor string, _ int64) { e.write(ctx, actor) }
}

func (e *env) rawAcquireFence(ctx context.Context, actor string) int64 {
	e.rawAcquire(ctx, actor, e.ttlOr(10*time.Second))
	return 0
}

func (e *env) lockctlAcquire(ctx context.Context, actor string) int64 {
	if l := e.acquire(ctx, actor, e.ttlOr(10*time.Second)); l != nil {
		return l.Fence()
	}
	return 0
}

func staleDelPlain(ctx context.Context, e *env) Verdict {
	t := staleDelTimes(e)
	staleDelStart(ctx, e, t, e.rawAcquireFence)
	if !t.expires {
		staleDelInTime(ctx, e, t, unfenced(e), e.rawDel, e.rawAcquireFence, 0, "with a plain DEL")
		return staleDelVerdict(e, t)
	}
	e.at(ctx, t.bWrite)
	e.do(ctx, "B", "writes the order", func(ctx context.Context) { e.write(ctx, "B") })
	e.at(ctx, t.pause)
	e.do(ctx, "A", "wakes up and writes the order, as if it still held the lock", func(ctx context.Context) { e.write(ctx, "A") })
	e.note(fmt.Sprintf("A's lease ended at %s: this write overwrites B's.", secs(t.ttl)))
	e.do(ctx, "A", "releases with a plain DEL", func(ctx context.Context) { e.rawDel(ctx, "A") })
	e.note("DEL does not ask whose key it is: the 1 is B's lock, deleted.")
	e.at(ctx, t.cAt)
	e.do(ctx, "C", "takes the lock, ttl "+secs(t.ttl), func(ctx context.Context) { e.rawAcquire(ctx, "C", t.ttl) })
	e.note("The key was free, so C gets it, while B is still working: two holders.")
	e.at(ctx, t.cWrite)
	e.do(ctx, "C", "writes the order", func(ctx context.Context) { e.write(ctx, "C") })
	e.at(ctx, t.b)
	e.do(ctx, "B", "finishes and releases with a plain DEL", func(ctx context.Context) { e.rawDel(ctx, "B") })
	e.note("And now B deletes C's lock: the mistake passes down the line.")
	return staleDelVerdict(e, t)
}

func staleDelCAD(ctx context.Context, e *env) Verdict {
	t := staleDelTimes(e)
	staleDelStart(ctx, e, t, e.lockctlAcquire)
	if !t.expires {
		staleDelInTime(ctx, e, t, unfenced(e), e.release, e.lockctlAcquire, 0, "with lockctl")
		return staleDelVerdict(e, t)
	}
	e.note("lockctl's acquire is one script: SET NX PX with a unique token, plus a fence number.")
	e.at(ctx, t.bWrite)
	e.do(ctx, "B", "writes the order", func(ctx context.Context) { e.write(ctx, "B") })
	e.at(ctx, t.pause)
	e.do(ctx, "A", "wakes up and writes the order, as if it still held the lock", func(ctx context.Context) { e.write(ctx, "A") })
	e.note("The lock cannot stop this: A does not ask Redis before writing.")
	e.do(ctx, "A", "releases with lockctl (compare token, then delete)", func(ctx context.Context) { e.release(ctx, "A") })
	e.note("The script sees B's token in the key and deletes nothing: the reply names the holder.")
	e.at(ctx, t.cAt)
	e.do(ctx, "C", "tries to take the lock, ttl "+secs(t.ttl), func(ctx context.Context) { e.acquire(ctx, "C", t.ttl) })
	e.note("Refused: B still holds it. Only one holder at a time.")
	e.at(ctx, t.b)
	e.do(ctx, "B", "finishes and releases with lockctl", func(ctx context.Context) { e.release(ctx, "B") })
	return staleDelVerdict(e, t)
}

func staleDelFenced(ctx context.Context, e *env) Verdict {
	t := staleDelTimes(e)
	fenceA, fenceB := staleDelStart(ctx, e, t, e.lockctlAcquire)
	if !t.expires {
		staleDelInTime(ctx, e, t, e.fencedWrite, e.release, e.lockctlAcquire, fenceA, "with lockctl")
		return staleDelVerdict(e, t)
	}
	e.note(fmt.Sprintf("B's lease carries fence %d, A's carried fence %d: newer leases get bigger numbers.", fenceB, fenceA))
	e.at(ctx, t.bWrite)
	e.do(ctx, "B", fmt.Sprintf("writes the order with fence %d", fenceB), func(ctx context.Context) { e.fencedWrite(ctx, "B", fenceB) })
	e.note("The store records the highest fence it has accepted.")
	e.at(ctx, t.pause)
	e.do(ctx, "A", fmt.Sprintf("wakes up and writes the order with fence %d", fenceA), func(ctx context.Context) { e.fencedWrite(ctx, "A", fenceA) })
	e.note(fmt.Sprintf("Rejected: the store has seen fence %d, so fence %d comes from an expired lease. Nothing is written.", fenceB, fenceA))
	e.do(ctx, "A", "releases with lockctl", func(ctx context.Context) { e.release(ctx, "A") })
	e.at(ctx, t.cAt)
	e.do(ctx, "C", "tries to take the lock, ttl "+secs(t.ttl), func(ctx context.Context) { e.acquire(ctx, "C", t.ttl) })
	e.at(ctx, t.b)
	e.do(ctx, "B", "finishes and releases with lockctl", func(ctx context.Context) { e.release(ctx, "B") })
	return staleDelVerdict(e, t)
}

func staleDelVerdict(e *env, t staleTimes) Verdict {
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
	if !t.expires {
		v.Summary += fmt.Sprintf(": the %s pause ended inside the %s lease, so nothing overlapped (a --pause of %s or more shows the failure)",
			secs(t.pause), secs(t.ttl), secs(t.ttl))
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

// scriptRelease runs the learner's release script for actor as lockctl
// runs its own: KEYS[1] the lock key, ARGV[1] the actor's token. It
// returns whether the script deleted a lock someone else held.
func (e *env) scriptRelease(ctx context.Context, s *Script, actor string, runs *[]scriptRun) {
	n := e.lockNode()
	key, tok := e.lockKey(), token(actor)
	bare := context.WithValue(context.WithoutCancel(ctx), actorKey{}, "")
	before, _ := n.rdb.Get(bare, key).Result() // unrecorded: who held it
	r := e.runScript(ctx, n, s, []string{key}, []string{tok})
	after, _ := n.rdb.Get(bare, key).Result()
	e.record(Event{Actor: actor, Action: e.action, Command: e.showCommand(n, []interface{}{"eval", "<" + s.Name + ">", 1, key, tok}), Reply: r.reply})
	if e.stepCount != nil {
		*e.stepCount++
	}
	if len(r.trace) > 0 {
		e.note("Inside the script: " + joinTrace(r.trace) + ".")
	}
	switch {
	case r.failed != "":
		e.note("The script failed, so it freed nothing: the key waits out its TTL.")
	case before != "" && before != tok && after != before:
		owner := ownerOf(before)
		e.note(fmt.Sprintf("The key held %s's token, not %s's: your script deleted %s's lock.", owner, actor, owner))
		r.deletedOther = owner
	case before == tok && after == before:
		e.note("The key held " + actor + "'s own token, and your script left it: the lock stays taken until its TTL.")
		r.keptOwn = true
	case before != "" && before != tok:
		e.note(fmt.Sprintf("The key held %s's token: your script left it alone.", ownerOf(before)))
	}
	*runs = append(*runs, r)
	e.drop(actor)
}

func joinTrace(t []string) string {
	if len(t) > 4 {
		t = append(t[:4:4], "… and more")
	}
	out := t[0]
	for _, x := range t[1:] {
		out += "; " + x
	}
	return out
}

// ownerOf names the actor whose token tok is.
func ownerOf(tok string) string {
	for _, a := range []string{"A", "B", "C"} {
		if token(a) == tok {
			return a
		}
	}
	return "someone else"
}

// staleDelScript is the broken variant's story with the learner's release
// script in place of DEL.
func staleDelScript(ctx context.Context, e *env, s *Script) Verdict {
	t := staleDelTimes(e)
	var runs []scriptRun
	release := func(ctx context.Context, actor string) { e.scriptRelease(ctx, s, actor, &runs) }
	how := "with your " + s.Name
	staleDelStart(ctx, e, t, e.rawAcquireFence)
	if t.expires {
		e.note("Taken with SET key token NX PX ttl: the key's value is the token itself.")
		e.at(ctx, t.bWrite)
		e.do(ctx, "B", "writes the order", func(ctx context.Context) { e.write(ctx, "B") })
		e.at(ctx, t.pause)
		e.do(ctx, "A", "wakes up and writes the order, as if it still held the lock", func(ctx context.Context) { e.write(ctx, "A") })
		e.note(fmt.Sprintf("A's lease ended at %s: this write overwrites B's.", secs(t.ttl)))
		e.do(ctx, "A", "releases "+how, func(ctx context.Context) { release(ctx, "A") })
		e.at(ctx, t.cAt)
		var gotC bool
		e.do(ctx, "C", "takes the lock, ttl "+secs(t.ttl), func(ctx context.Context) { gotC = e.rawAcquire(ctx, "C", t.ttl) })
		if !gotC {
			e.note("Refused: the key is still taken. Only one holder at a time.")
		} else {
			e.note("The key was free, so C gets it: two holders if B is still working.")
			e.at(ctx, t.cWrite)
			e.do(ctx, "C", "writes the order", func(ctx context.Context) { e.write(ctx, "C") })
		}
		e.at(ctx, t.b)
		e.do(ctx, "B", "finishes and releases "+how, func(ctx context.Context) { release(ctx, "B") })
	} else {
		staleDelInTime(ctx, e, t, unfenced(e), release, e.rawAcquireFence, 0, how)
	}
	return scriptVerdict(e, s, runs, staleDelVerdict(e, t))
}

// scriptVerdict puts what the learner's script did in front of the
// story's verdict. One verdict word leads the line: what the script fixed
// is said in words, and a stale write that only fencing stops keeps the
// variant UNSAFE.
func scriptVerdict(e *env, s *Script, runs []scriptRun, v Verdict) Verdict {
	var what string
	for _, r := range runs {
		switch {
		case r.failed != "" && what == "":
			what = failedText(s, r) + ": a release that fails frees nothing"
		case r.deletedOther != "":
			what = fmt.Sprintf("your %s deleted %s's lock", s.Name, r.deletedOther)
		case r.keptOwn && what == "":
			what = fmt.Sprintf("your %s did not delete its caller's own lock", s.Name)
		}
	}
	if what == "" {
		what = fmt.Sprintf("your %s deleted only its caller's own lock, which fixes the double holder", s.Name)
	}
	v.Summary = what + "; " + v.Summary
	if len(e.staleWrites()) > 0 {
		v.Summary += ", which no release can stop: only fenced writes can (the next variant)"
	}
	return v
}

// failedText says how a learner's script failed: it raised an error, or
// it ran out of the sandbox's time or memory.
func failedText(s *Script, r scriptRun) string {
	if (r.timeout || r.oom) && strings.HasPrefix(r.failed, "ran out of ") {
		if head, rest, ok := strings.Cut(r.failed, ": "); ok {
			return fmt.Sprintf("your %s %s (%s)", s.Name, head, rest)
		}
	}
	return fmt.Sprintf("your %s failed (%s)", s.Name, r.failed)
}
