package chaos_test

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/chaos"
	"github.com/redis/go-redis/v9"
)

// Redisson's holders and waiters, as its clients name them.
const (
	rsReader1 = "8f6f3e2a-6b7e-4f5e-9a51-0c1d2e3f4a5b:1"
	rsReader2 = "8f6f3e2a-6b7e-4f5e-9a51-0c1d2e3f4a5b:7"
	rsOwner   = "8743c9c0-0795-4907-87fd-6c719a6b4586:1"
	rsWaiter  = "5d1c7a4e-1b2a-4c3d-9e8f-0a1b2c3d4e5f:11"
)

// TestForeignLocks: locks a Redis shop already has, written by Redisson and
// planted here with its raw commands, while lockctl processes contend.
//
//   - A read-write lock held by two Redisson readers for a 5s lease (and
//     their rwlock_timeout keys): lockctl run -n processes exit 75 and run
//     nothing; lockctl run -w processes wait and get in one at a time after
//     the readers' lease, never while it lives; ls lists the two readers and
//     no rwlock_timeout key.
//   - force-release with a field of a hash as the token: an application's
//     hash (user:42) and one reader of the read-write lock are refused (65)
//     and nothing is deleted.
//   - A fair lock with a Redisson waiter in its queue and a 60s lease:
//     force-release wakes that waiter on its own channel, as Redisson's
//     forceUnlock does, and a waiting lockctl run gets in long before the
//     lease would have let it.
//
// The unprotected variant is a force-release that deletes a hash holding the
// token as a field and checks the shape afterwards: the application's data and
// the other reader are gone.
func TestForeignLocks(t *testing.T) {
	srv := startRedis(t)
	ctx := context.Background()
	rc := client(t, srv.Addr, 5*time.Second)
	// Long enough that the run -n processes start within it on a loaded
	// machine.
	lease := 5 * time.Second
	t.Run("unprotected: force-release by field, shape checked after the DEL", func(t *testing.T) {
		e := chaos.NewEnv(t, "14.foreign-locks", lockctlBin)
		rc.HSet(ctx, "u:user:42", "name", "alice", "email", "a@x")
		rc.HSet(ctx, "u:rw", "mode", "read", rsReader1, 1, rsReader2, 1)
		rc.PExpire(ctx, "u:rw", 30*time.Second)
		del := redis.NewScript(`if redis.call('type', KEYS[1])['ok'] == 'hash' and redis.call('hexists', KEYS[1], ARGV[1]) == 1 then
  redis.call('del', KEYS[1]); return 1 end return 0`)
		del.Run(ctx, rc, []string{"u:user:42"}, "email")
		del.Run(ctx, rc, []string{"u:rw"}, rsReader1)
		userGone := rc.Exists(ctx, "u:user:42").Val() == 0
		otherGone := !rc.HExists(ctx, "u:rw", rsReader2).Val()
		f := e.Collect("unprotected: force-release by field, shape checked after the DEL", lease, 0)
		f.Note("an application's hash with the token as a field: deleted %v; releasing one Redisson reader: the other reader deleted %v", userGone, otherGone)
		f.Verdict = verdictOf(userGone && otherGone, "fails as it must: the application's hash and the other Redisson reader are deleted")
		chaos.Publish(f)
		if !userGone || !otherGone {
			t.Errorf("the unprotected force-release did not delete (user:42 gone %v, other reader gone %v): the scenario did not bite", userGone, otherGone)
		}
	})
	t.Run("lockctl", func(t *testing.T) {
		e := chaos.NewEnv(t, "14.foreign-locks", lockctlBin)
		glob := []string{"--url", srv.URL}
		lockctl := func(args ...string) (int, string, string) {
			cmd := exec.Command(lockctlBin, append(append([]string{}, glob...), args...)...)
			var out, errb strings.Builder
			cmd.Stdout, cmd.Stderr = &out, &errb
			err := cmd.Run()
			return exitOf(err), out.String(), errb.String()
		}

		// The read-write lock, held by two Redisson readers for the lease.
		// The test stands in for their work on the resource: inside from
		// before the lock is planted until just before its lease ends.
		e.Res.EnterAs("redisson-r1", true, "shared", 0)
		e.Res.EnterAs("redisson-r2", true, "shared", 0)
		rwKey := "lock:{rw}"
		// Half a second of room before the key expires: the timer may fire
		// late on a loaded machine, and a holder entering then would be
		// counted as an overlap that is the timer's, not the lock's.
		leaveAt := time.AfterFunc(lease-500*time.Millisecond, func() {
			e.Res.Leave("redisson-r1")
			e.Res.Leave("redisson-r2")
		})
		rc.HSet(ctx, rwKey, "mode", "read", rsReader1, 2, rsReader2, 1)
		rc.PExpire(ctx, rwKey, lease)
		rc.Set(ctx, rwKey+":"+rsReader1+":rwlock_timeout:1", 1, lease)
		rc.Set(ctx, rwKey+":"+rsReader1+":rwlock_timeout:2", 1, lease)
		rc.Set(ctx, rwKey+":"+rsReader2+":rwlock_timeout:1", 1, lease)
		defer leaveAt.Stop()

		lsExit, lsOut, _ := lockctl("ls", "-o", "json")
		lsReaders := strings.Count(lsOut, `"mode": "read"`)
		lsTimeouts := strings.Contains(lsOut, "rwlock_timeout")

		var skipped []*chaos.Proc
		for i := range 4 {
			skipped = append(skipped, e.Spawn(i, chaos.ProcSpec{Global: glob, Name: "{rw}", TTL: 2 * time.Second,
				Flags: []string{"-n", "--ttl", "2s"}, Work: 200 * time.Millisecond, Writes: 1}))
		}
		var waiters []*chaos.Proc
		for i := range 2 {
			waiters = append(waiters, e.Spawn(10+i, chaos.ProcSpec{Global: glob, Name: "{rw}", TTL: 2 * time.Second,
				Flags: []string{"-w", "30s", "--ttl", "2s"}, Work: 300 * time.Millisecond, Writes: 2}))
		}
		for _, p := range skipped {
			p.Wait()
		}
		for _, p := range waiters {
			p.Wait()
		}
		// The readers' work ends with their lease, or now if lockctl
		// returned before it (the fair lock below is another lock).
		leaveAt.Stop()
		e.Res.Leave("redisson-r1")
		e.Res.Leave("redisson-r2")
		skippedOK := true
		for _, p := range skipped {
			if p.Exit != 75 || e.Res.Entered(p.Holder) >= 0 {
				skippedOK = false
				t.Errorf("run -n against the Redisson read lock: %s, entered %v; want 75, never in", p, e.Res.Entered(p.Holder) >= 0)
			}
		}
		waitedOK := true
		var firstIn time.Duration = -1
		for _, p := range waiters {
			in := e.Res.Entered(p.Holder)
			if p.Exit != 0 || in < 0 {
				waitedOK = false
				t.Errorf("run -w against the Redisson read lock: %s, entered at %v; want 0, in after the lease", p, in)
			}
			if firstIn < 0 || (in >= 0 && in < firstIn) {
				firstIn = in
			}
		}

		// force-release with a hash's field as the token: refused, nothing
		// deleted. The read-write lock again, live for the check.
		rc.HSet(ctx, "user:42", "name", "alice", "email", "a@x")
		frUser, _, frUserErr := lockctl("--prefix=", "inspect", "force-release", "user:42", "--token", "email")
		userKept := rc.HLen(ctx, "user:42").Val() == 2
		rc.HSet(ctx, "rw", "mode", "read", rsReader1, 1, rsReader2, 1)
		rc.PExpire(ctx, "rw", 30*time.Second)
		frRW, _, _ := lockctl("--prefix=", "inspect", "force-release", "rw", "--token", rsReader1)
		// One reader's hold is freed, the other reader keeps its own.
		rwKept := rc.HLen(ctx, "rw").Val() == 2 && !rc.HExists(ctx, "rw", rsReader1).Val() &&
			rc.HExists(ctx, "rw", rsReader2).Val()
		if frUser != 65 || !userKept {
			t.Errorf("force-release of an application's hash by a field: exit %d (%s), kept %v; want 65, kept", frUser, frUserErr, userKept)
		}
		if frRW != 0 || !rwKept {
			t.Errorf("force-release of one reader of a read-write lock: exit %d, the other reader alone kept %v; want 0, the other reader kept", frRW, rwKept)
		}

		// The fair lock: a 60s lease, a Redisson waiter at the head of its
		// queue listening on its own channel, and a waiting lockctl run.
		fairLease := 60 * time.Second
		rc.HSet(ctx, "lock:fair", rsOwner, 1)
		rc.PExpire(ctx, "lock:fair", fairLease)
		rc.RPush(ctx, "redisson_lock_queue:{lock:fair}", rsWaiter)
		rc.ZAdd(ctx, "redisson_lock_timeout:{lock:fair}", redis.Z{Score: 32503680000000, Member: rsWaiter})
		sub := rc.Subscribe(ctx, "redisson_lock__channel:{lock:fair}:"+rsWaiter)
		defer sub.Close()
		if _, err := sub.Receive(ctx); err != nil {
			t.Fatal(err)
		}
		fw := e.Spawn(20, chaos.ProcSpec{Global: glob, Name: "fair", TTL: 2 * time.Second,
			Flags: []string{"-w", "45s", "--ttl", "2s"}, Work: 200 * time.Millisecond, Writes: 1})
		time.Sleep(500 * time.Millisecond)
		released := time.Now()
		frFair, _, frFairErr := lockctl("inspect", "force-release", "fair", "--token", rsOwner)
		woke := time.Duration(-1)
		select {
		case m := <-sub.Channel():
			if m.Payload == "0" {
				woke = time.Since(released)
			}
		case <-time.After(20 * time.Second):
		}
		fw.Wait()
		fairIn := time.Since(released)
		if frFair != 0 {
			t.Errorf("force-release of the fair lock: exit %d: %s", frFair, frFairErr)
		}
		if woke < 0 {
			t.Errorf("the Redisson waiter at the head of the fair queue was not woken by force-release")
		}
		// Well inside the 60s lease the waiter would otherwise wait out.
		if fw.Exit != 0 || e.Res.Entered(fw.Holder) < 0 || fairIn > fairLease/2 {
			t.Errorf("the waiting lockctl run after force-release: %s, done %v after it; want 0, in long before the %v lease", fw, fairIn, fairLease)
		}

		f := e.Collect("lockctl", 2*time.Second, 9)
		f.Note("read-write lock held by 2 Redisson readers for %v: ls exit %d lists %d read holds, rwlock_timeout keys shown %v; run -n exits %v; run -w 30s exits %v, first in at %v of the scenario (the readers left at %v)",
			lease, lsExit, lsReaders, lsTimeouts, exits(skipped), exits(waiters), firstIn.Round(time.Millisecond), (lease - 500*time.Millisecond))
		f.Note("force-release by a field: an application's hash exit %d, kept %v; one Redisson reader exit %d, that reader freed and the other kept %v", frUser, userKept, frRW, rwKept)
		f.Note("fair lock with a %v lease: force-release exit %d; the Redisson waiter at the head woken after %v; the waiting lockctl run exit %d, done %v after the release",
			fairLease, frFair, woke.Round(time.Millisecond), fw.Exit, fairIn.Round(time.Millisecond))
		ok := skippedOK && waitedOK && f.Unfenced.Overlaps == 0 && f.Fenced.AcceptedStale == 0 &&
			lsReaders == 2 && !lsTimeouts && frUser == 65 && userKept && frRW == 0 && rwKept &&
			frFair == 0 && woke >= 0 && fw.Exit == 0 && fairIn <= fairLease/2
		f.Verdict = verdictOf(ok, "Redisson's locks are held locks: run -n 75, run -w waits out their lease with no overlap; force-release refuses what is not a lock, frees one reader's hold alone, and wakes the fair queue's head")
		chaos.Publish(f)
		t.Logf("skipped: %s\nwaiters: %s\nfair waiter: %s\nfigures: %+v", procDetail(skipped), procDetail(waiters), fw, f)
		if f.Unfenced.Overlaps > 0 {
			t.Errorf("a lockctl holder was inside with the Redisson readers: %d overlaps", f.Unfenced.Overlaps)
		}
		if lsReaders != 2 || lsTimeouts {
			t.Errorf("ls: %d read holds, rwlock_timeout shown %v; want 2, not shown:\n%s", lsReaders, lsTimeouts, lsOut)
		}
	})
}
