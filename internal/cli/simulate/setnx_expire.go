package simulate

import (
	"context"
	"fmt"
	"strconv"
	"time"
)

func addSetnxExpire(register func(*scenario)) {
	register(&scenario{
		info: Info{
			Name:  "setnx-expire",
			Title: "SETNX then EXPIRE: a crash in between leaves a lock that never expires",
			Summary: "A takes the lock with SETNX and means to set its TTL with EXPIRE next, but dies in between. " +
				"The key has no TTL: nothing will ever remove it, and every later job waits for ever.",
		},
		lanes: []string{"A", "B", "C", "ops"},
		variants: []variant{
			{name: "SETNX, then EXPIRE in a second command", technique: "broken", run: setnxBroken},
			{name: "one SET NX PX (lockctl acquire)", technique: "correct", run: setnxAtomic},
			{name: "finding the orphan: SCAN and PTTL", technique: "correct", run: setnxOrphanScan},
		},
	})
}

// setnxCrash is the broken acquire: SETNX succeeds, the process dies before EXPIRE.
func setnxCrash(ctx context.Context, e *env) {
	e.do(ctx, "A", "takes the lock with SETNX", func(ctx context.Context) {
		n, _ := e.lockNode().rdb.Do(ctx, "SETNX", e.lockKey(), token("A")).Int64()
		if n == 1 {
			e.grant("A", time.Duration(1<<62))
		}
	})
	e.at(ctx, sec(0.1))
	e.say("A", "is killed before it sends EXPIRE (OOM killer, deploy, kill -9)")
	e.drop("A")
	e.note("The key was written without a TTL. The next command would have set one; it never comes.")
}

// setnxTry is a later job trying the same hand-written lock, and looking at why it fails.
func setnxTry(ctx context.Context, e *env, actor string) {
	e.do(ctx, actor, "tries SETNX", func(ctx context.Context) {
		n, _ := e.lockNode().rdb.Do(ctx, "SETNX", e.lockKey(), token(actor)).Int64()
		if n == 1 {
			e.grant(actor, time.Duration(1<<62))
		}
	})
}

func setnxBroken(ctx context.Context, e *env) Verdict {
	setnxCrash(ctx, e)
	e.at(ctx, sec(15))
	setnxTry(ctx, e, "B")
	e.note("0: the key exists. B waits and retries.")
	e.at(ctx, sec(30))
	e.do(ctx, "B", "looks at the lock's remaining time", func(ctx context.Context) {
		e.lockNode().rdb.Do(ctx, "PTTL", e.lockKey())
	})
	e.note("-1 means the key exists and has no TTL: it will never expire.")
	e.at(ctx, sec(60))
	setnxTry(ctx, e, "C")
	e.note("Still held by a process that died 60 s ago, and it stays that way until someone deletes the key by hand.")
	return setnxVerdict(e, sec(60))
}

func setnxAtomic(ctx context.Context, e *env) Verdict {
	e.do(ctx, "A", "takes the lock with lockctl, ttl 10 s", func(ctx context.Context) { e.acquire(ctx, "A", 10*time.Second) })
	e.note("The script sets value and TTL in one SET NX PX: there is no moment without a TTL.")
	e.at(ctx, sec(0.1))
	e.say("A", "is killed while holding the lock (OOM killer, deploy, kill -9)")
	e.drop("A")
	e.at(ctx, sec(10))
	e.say("redis", "the lease of dead A runs out: Redis deletes "+e.strip(e.lockKey()))
	e.at(ctx, sec(15))
	e.do(ctx, "B", "takes the lock with lockctl, ttl 10 s", func(ctx context.Context) { e.acquire(ctx, "B", 10*time.Second) })
	e.note("At most one TTL after a crash, the lock is free again.")
	e.at(ctx, sec(20))
	e.do(ctx, "B", "finishes and releases", func(ctx context.Context) { e.release(ctx, "B") })
	return setnxVerdict(e, sec(60))
}

func setnxOrphanScan(ctx context.Context, e *env) Verdict {
	setnxCrash(ctx, e)
	e.at(ctx, sec(15))
	setnxTry(ctx, e, "B")
	e.at(ctx, sec(20))
	var orphans []string
	e.do(ctx, "ops", "scans the lock pattern for keys without a TTL", func(ctx context.Context) {
		n := e.lockNode()
		var cursor uint64
		for {
			keys, next, err := n.rdb.Scan(ctx, cursor, n.key("lock:*"), 100).Result()
			if err != nil {
				return
			}
			for _, k := range keys {
				if ms, _ := n.rdb.Do(ctx, "PTTL", k).Int64(); ms == -1 {
					orphans = append(orphans, k)
				}
			}
			if cursor = next; cursor == 0 {
				return
			}
		}
	})
	e.note(fmt.Sprintf("%s with PTTL -1. This is what `lockctl inspect orphans` does (SCAN, never KEYS, so a big keyspace is not blocked); `--check` exits 1 when it finds any, for monitoring.", plural(len(orphans), "orphan", "orphans")))
	e.do(ctx, "ops", "gives the orphan a TTL of 5 s instead of deleting it", func(ctx context.Context) {
		for _, k := range orphans {
			e.lockNode().rdb.Do(ctx, "PEXPIRE", k, strconv.FormatInt(e.ms(sec(5)), 10))
		}
	})
	e.note("Like `lockctl inspect orphans --fix expire:5s`: if the holder were alive after all, it keeps a few seconds to finish.")
	e.at(ctx, sec(25))
	e.say("redis", "the orphan's new TTL runs out: Redis deletes "+e.strip(e.lockKey()))
	e.at(ctx, sec(26))
	e.do(ctx, "B", "takes the lock with lockctl, ttl 10 s", func(ctx context.Context) { e.acquire(ctx, "B", 10*time.Second) })
	e.at(ctx, sec(30))
	e.do(ctx, "B", "finishes and releases", func(ctx context.Context) { e.release(ctx, "B") })
	v := setnxVerdict(e, sec(60))
	if len(orphans) > 0 {
		v.Summary = fmt.Sprintf("the scan found %s; with a TTL it freed itself and B took the lock at 26 s", plural(len(orphans), "orphan", "orphans"))
	}
	return v
}

// setnxVerdict: did anyone get the lock after A died?
func setnxVerdict(e *env, horizon time.Duration) Verdict {
	for _, a := range []string{"B", "C"} {
		if l := e.leases[a]; l != nil {
			return Verdict{Safe: true, Summary: fmt.Sprintf("the lock freed itself after A died; %s took it at %s", a, secs(l.since))}
		}
	}
	return Verdict{Safe: false, Summary: fmt.Sprintf("the dead holder's lock never expires: still held at %s, every later job waits for ever", secs(horizon))}
}
