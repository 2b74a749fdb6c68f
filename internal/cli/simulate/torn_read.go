package simulate

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

func addTornRead(register func(*scenario)) {
	register(&scenario{
		info: Info{
			Name:  "torn-read",
			Title: "a reader overlaps a writer and reads a half-written config",
			Summary: "W updates a config in two steps: its version, then the payload that goes with it. " +
				"A reader that checks that no writer holds the lock, then reads without holding anything, reads in between: version 2, payload of version 1. " +
				"Readers taking the exclusive lock too are safe but take turns; in shared mode they read together, " +
				"the writer waits until they leave, and readers who arrive while it waits are held back.",
		},
		lanes: []string{"W", "R1", "R2", "R3", "store"},
		variants: []variant{
			{name: "readers check that no writer holds the lock, then read", technique: "broken", run: tornCheck},
			{name: "readers take the exclusive lock too", technique: "correct", run: tornExclusive},
			{name: "readers shared, the writer exclusive (lockctl run --shared)", technique: "correct", run: tornShared},
		},
	})
}

// The lock and the two keys of the config: version and payload must match.
const (
	configLock = "config"
	configTTL  = 10 * time.Second
)

// tornRun is what one variant saw: the reads and the waits.
type tornRun struct {
	e       *env
	reads   []tornRead
	waiters []*waiter
}

type tornRead struct {
	actor            string
	version, payload string
}

func payloadOf(version string) string { return "rules for version " + version }

// torn reports whether a read saw a version with another version's payload.
func (r tornRead) torn() bool { return payloadOf(r.version) != r.payload }

func (t *tornRun) versionKey() string { return t.e.store().key("config:version") }
func (t *tornRun) payloadKey() string { return t.e.store().key("config:payload") }

func (t *tornRun) locker() *lock.Locker { return t.e.locker(t.e.lockNode()) }

// start writes version 1 of the config, unrecorded: the state before the story.
func (t *tornRun) start(ctx context.Context) {
	e := t.e
	if err := e.store().rdb.MSet(ctx, t.versionKey(), "1", t.payloadKey(), payloadOf("1")).Err(); err != nil {
		e.fail(fmt.Errorf("simulate: writing the config: %w", err))
	}
	e.say("store", "holds version 1 of the config: version 1, with the payload of version 1")
}

// read is a reader's one read of both keys.
func (t *tornRun) read(ctx context.Context, actor string) {
	t.e.do(ctx, actor, "reads the config", func(ctx context.Context) {
		vals, err := t.e.store().rdb.MGet(ctx, t.versionKey(), t.payloadKey()).Result()
		if err != nil || len(vals) != 2 {
			t.e.expect(err)
			return
		}
		v, _ := vals[0].(string)
		p, _ := vals[1].(string)
		t.reads = append(t.reads, tornRead{actor: actor, version: v, payload: p})
	})
}

// write is one of the writer's two steps.
func (t *tornRun) write(ctx context.Context, key, value string) {
	err := t.e.store().rdb.Set(ctx, key, value, 0).Err()
	t.e.wrote("W", err == nil)
}

func (t *tornRun) writeVersion(ctx context.Context) {
	t.e.do(ctx, "W", "writes version 2", func(ctx context.Context) { t.write(ctx, t.versionKey(), "2") })
}

func (t *tornRun) writePayload(ctx context.Context) {
	t.e.do(ctx, "W", "writes the payload of version 2", func(ctx context.Context) { t.write(ctx, t.payloadKey(), payloadOf("2")) })
}

// take acquires the config lock without waiting, shared or exclusive.
func (t *tornRun) take(ctx context.Context, actor string, shared bool) *lock.Lease {
	lease, err := t.locker().Acquire(ctx, configLock, t.e.wall(configTTL), &lock.AcquireOptions{Token: token(actor), Owner: actor, Shared: shared})
	if err != nil {
		t.e.expect(err, lock.ErrNotObtained)
		return nil
	}
	t.e.grant(actor, configTTL)
	return lease
}

// wait starts actor's waiting acquire (--wait) of the config lock.
func (t *tornRun) wait(ctx context.Context, actor string, shared bool) *waiter {
	w := t.e.waitFor(ctx, actor, configLock, configTTL, shared)
	t.waiters = append(t.waiters, w)
	return w
}

// release gives back a lease, shared or exclusive, in one compare-and-delete.
func (t *tornRun) release(ctx context.Context, actor string, lease *lock.Lease) {
	if lease != nil {
		t.e.expect(lease.Release(ctx), lock.ErrNotHeld, lock.ErrNotOwner)
	}
	t.e.drop(actor)
}

// leaseFence is l's fence, 0 for no lease.
func leaseFence(l *lock.Lease) int64 {
	if l == nil {
		return 0
	}
	return l.Fence()
}

func tornCheck(ctx context.Context, e *env) Verdict {
	t := &tornRun{e: e}
	t.start(ctx)
	lockKey := e.lockNode().key("lock:" + configLock)
	check := func(actor string) {
		e.do(ctx, actor, "checks that no writer holds the lock", func(ctx context.Context) { e.lockNode().rdb.Exists(ctx, lockKey) })
	}
	check("R1")
	e.note("0: free, no writer at work. Reading changes nothing, so readers take no lock of their own; R1 goes on to read.")
	e.at(ctx, sec(0.5))
	var lw *lock.Lease
	e.do(ctx, "W", "takes the lock, ttl 10 s", func(ctx context.Context) { lw = t.take(ctx, "W", false) })
	e.note("Granted: the lock keeps other writers out. Nothing makes W wait for R1, which holds nothing.")
	e.at(ctx, sec(1))
	t.writeVersion(ctx)
	e.note("The config is now half-written: version 2, with the payload of version 1 until W's second step. " +
		"(One MSET would cover these two keys; they stand for any update made in steps: a file and a row, two services, a payload computed after the version is claimed.)")
	e.at(ctx, sec(1.5))
	t.read(ctx, "R1")
	e.note("Torn: version 2 with the payload of version 1. MGET reads both keys at one instant; the instant is the problem. R1's check is 1.5 s old.")
	check("R2")
	e.note("1: a writer is at work, so R2 waits. The check helps only a reader that comes while the writer already holds the lock.")
	e.at(ctx, sec(2))
	t.writePayload(ctx)
	e.do(ctx, "W", "releases", func(ctx context.Context) { t.release(ctx, "W", lw) })
	e.at(ctx, sec(2.5))
	check("R2")
	t.read(ctx, "R2")
	return t.verdict()
}

func tornExclusive(ctx context.Context, e *env) Verdict {
	t := &tornRun{e: e}
	t.start(ctx)
	var l1 *lock.Lease
	e.do(ctx, "R1", "takes the lock, ttl 10 s", func(ctx context.Context) { l1 = t.take(ctx, "R1", false) })
	e.at(ctx, sec(0.5))
	var r2, w *waiter
	e.do(ctx, "R2", "takes the lock, waiting if held (--wait)", func(ctx context.Context) { r2 = t.wait(ctx, "R2", false) })
	e.note("Refused: R2 only wants to read, as R1 does, but an exclusive lock cannot tell readers from writers.")
	e.at(ctx, sec(1))
	t.read(ctx, "R1")
	e.do(ctx, "W", "takes the lock, waiting if held (--wait)", func(ctx context.Context) { w = t.wait(ctx, "W", false) })
	e.at(ctx, sec(1.5))
	e.do(ctx, "R1", "releases", func(ctx context.Context) { t.release(ctx, "R1", l1) })
	e.note("The release publishes on the lock's channel: the waiters wake and try again at once.")
	e.do(ctx, "R2", "is woken and tries again", func(ctx context.Context) { r2.again() })
	e.do(ctx, "W", "is woken and tries again", func(ctx context.Context) { w.again() })
	e.note("Refused: R2 got there first. Readers and the writer all take turns.")
	e.at(ctx, sec(2))
	t.read(ctx, "R2")
	e.at(ctx, sec(2.5))
	e.do(ctx, "R2", "releases", func(ctx context.Context) { t.release(ctx, "R2", r2.lease) })
	e.do(ctx, "W", "is woken and tries again", func(ctx context.Context) { w.again() })
	e.at(ctx, sec(3))
	t.writeVersion(ctx)
	e.note("Half-written, but every reader would have to take the lock first, and W holds it.")
	e.at(ctx, sec(3.5))
	t.writePayload(ctx)
	e.do(ctx, "W", "releases", func(ctx context.Context) { t.release(ctx, "W", w.lease) })
	return t.verdict()
}

func tornShared(ctx context.Context, e *env) Verdict {
	t := &tornRun{e: e}
	t.start(ctx)
	var l1, l2 *lock.Lease
	e.do(ctx, "R1", "takes the lock shared, ttl 10 s (--shared)", func(ctx context.Context) { l1 = t.take(ctx, "R1", true) })
	e.note(fmt.Sprintf("A slot among the shared holders (lockctl:sem:{lock:config}), with fence %d: a shared holder gets the counter's current value "+
		"and does not increment it (this counter was new, so it starts from the server's clock in µs).", leaseFence(l1)))
	e.at(ctx, sec(0.5))
	e.do(ctx, "R2", "takes the lock shared, ttl 10 s", func(ctx context.Context) { l2 = t.take(ctx, "R2", true) })
	e.note(fmt.Sprintf("Granted at once, with the same fence %d: shared holders do not exclude each other, so readers read together.", leaseFence(l2)))
	e.at(ctx, sec(1))
	t.read(ctx, "R1")
	var w, r3 *waiter
	e.do(ctx, "W", "takes the lock exclusive, waiting if held (--wait)", func(ctx context.Context) { w = t.wait(ctx, "W", false) })
	e.note("Refused: 2 shared holders. Being refused while it waits puts W on the list of exclusive waiters (lockctl:writers:{lock:config}); each attempt keeps it there a few seconds more, so a writer that dies drops off.")
	e.at(ctx, sec(1.5))
	e.do(ctx, "R3", "takes the lock shared, waiting if held", func(ctx context.Context) { r3 = t.wait(ctx, "R3", true) })
	e.note("Refused, though the lock is only held shared: 1 exclusive waiter goes first. Without that, readers arriving one after another could keep W out for ever.")
	t.read(ctx, "R2")
	e.note("R1 and R2 read at the same time.")
	e.at(ctx, sec(2))
	e.do(ctx, "R1", "releases", func(ctx context.Context) { t.release(ctx, "R1", l1) })
	e.do(ctx, "W", "is woken and tries again", func(ctx context.Context) { w.again() })
	e.note("Refused: R2 is still reading.")
	e.do(ctx, "R3", "is woken and tries again", func(ctx context.Context) { r3.again() })
	e.at(ctx, sec(2.5))
	e.do(ctx, "R2", "releases", func(ctx context.Context) { t.release(ctx, "R2", l2) })
	e.do(ctx, "W", "is woken and tries again", func(ctx context.Context) { w.again() })
	if w.lease != nil {
		e.note(fmt.Sprintf("Granted, with fence %d: an exclusive acquisition increments the counter, so W's fence is above every reader's before it. "+
			"W leaves the list of exclusive waiters.", w.lease.Fence()))
	}
	e.do(ctx, "R3", "is woken and tries again", func(ctx context.Context) { r3.again() })
	e.note("Refused: W holds the lock exclusive.")
	e.at(ctx, sec(3))
	t.writeVersion(ctx)
	e.note("Half-written, and no reader holds the lock or can take it.")
	e.at(ctx, sec(3.5))
	e.do(ctx, "R3", "polls again (every 1 s, or when woken)", func(ctx context.Context) { r3.again() })
	e.note("Refused while the config is half-written.")
	e.at(ctx, sec(4))
	t.writePayload(ctx)
	e.do(ctx, "W", "releases", func(ctx context.Context) { t.release(ctx, "W", w.lease) })
	e.do(ctx, "R3", "is woken and tries again", func(ctx context.Context) { r3.again() })
	if r3.lease != nil && w.lease != nil {
		e.note(fmt.Sprintf("Granted, with W's fence %d: the current one. A store can check a reader's fence with `lockctl fence check --shared`.", r3.lease.Fence()))
	}
	e.at(ctx, sec(4.5))
	t.read(ctx, "R3")
	e.at(ctx, sec(5))
	e.do(ctx, "R3", "releases", func(ctx context.Context) { t.release(ctx, "R3", r3.lease) })
	return t.verdict()
}

// readersTogether is how long two or more readers held the lock at once,
// and which.
func (t *tornRun) readersTogether() (time.Duration, []string) {
	var ivs []interval
	for _, iv := range t.e.allIntervals() {
		if iv.actor != "W" {
			ivs = append(ivs, iv)
		}
	}
	return overlapOf(ivs)
}

func (t *tornRun) verdict() Verdict {
	for _, r := range t.reads {
		if r.torn() {
			return Verdict{Summary: fmt.Sprintf("%s read version %s with the payload of version %s: a half-written config, read while W was between its two writes",
				r.actor, r.version, strings.TrimPrefix(r.payload, payloadOf("")))}
		}
	}
	s := fmt.Sprintf("nobody read a half-written config (%s, all whole)", plural(len(t.reads), "read", "reads"))
	if d, who := t.readersTogether(); d > 0 {
		s += fmt.Sprintf("; %s read together for %s", and(who), secs(d))
	} else {
		s += "; but never two readers at once"
	}
	var waits []string
	for _, w := range t.waiters {
		if w.lease != nil && w.waited() > 0 {
			waits = append(waits, fmt.Sprintf("%s waited %s", w.actor, secs(w.waited())))
		}
	}
	if len(waits) > 0 {
		s += "; " + strings.Join(waits, ", ")
	}
	return Verdict{Safe: true, Summary: s}
}
