package inspect_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// exampleName gives each run of an example its own lock name, so that
// examples do not meet the tests' locks nor each other's (nor their own
// under -count).
func exampleName(base string) string {
	var b [4]byte
	rand.Read(b[:])
	return "example." + base + "." + hex.EncodeToString(b[:])
}

// List the locks held under the default prefix ("lock:") whose names match
// a glob: here the one a CI job holds.
func ExampleInspector_Locks() {
	ctx := context.Background()
	// srv is the redis-server the examples run against: yours has an
	// address of its own, such as "localhost:6379".
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer client.Close()
	name := exampleName("deploy")
	lease, err := lock.New(client, nil).Acquire(ctx, name, time.Minute,
		&lock.AcquireOptions{Owner: "ci@build-7:4242", Note: "release 1.4"})
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}

	in := inspect.New(client, nil)
	// name is also a glob ("deploy*", "" for every lock).
	err = in.Locks(ctx, name, nil, func(l inspect.Lock) error {
		fmt.Printf("owner %s (user %s, host %s, pid %d), note %q\n", l.Owner, l.User, l.Host, l.PID, l.Note)
		fmt.Printf("mode %s, ttl set: %v, fenced: %v\n", l.Mode(), l.TTL > 0, l.Fence > 0)
		return nil
	})
	if err != nil {
		fmt.Println("locks:", err)
	}
	if err := lease.Release(ctx); err != nil {
		fmt.Println("release:", err)
	}
	// Output:
	// owner ci@build-7:4242 (user ci, host build-7, pid 4242), note "release 1.4"
	// mode exclusive, ttl set: true, fenced: true
}

// Look at one lock in full: its holder, its fencing counter, its waiters.
// A free lock is no error.
func ExampleInspector_Lock() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer client.Close()
	name := exampleName("backup")
	lease, err := lock.New(client, nil).Acquire(ctx, name, time.Minute, &lock.AcquireOptions{Owner: "cron@db-1:77"})
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}

	in := inspect.New(client, nil)
	d, err := in.Lock(ctx, name)
	if err != nil {
		fmt.Println("lock:", err)
		return
	}
	fmt.Println("held:", d.Held(), "by", d.Lock.Owner, "mode", d.Mode())
	fmt.Println("fence issued:", d.Fence > 0, "queued waiters:", len(d.Queue))

	if err := lease.Release(ctx); err != nil {
		fmt.Println("release:", err)
		return
	}
	d, err = in.Lock(ctx, name)
	if err != nil {
		fmt.Println("lock:", err)
		return
	}
	fmt.Println("held after release:", d.Held())
	// Output:
	// held: true by cron@db-1:77 mode exclusive
	// fence issued: true queued waiters: 0
	// held after release: false
}

// Find lock keys that never expire (a SET NX whose EXPIRE never ran), then
// give each a TTL. FixOrphans acts on a key only if it still has no TTL.
func ExampleInspector_Orphans() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer client.Close()
	name := exampleName("nightly")
	// Another client's lock, set without a TTL.
	if err := client.Set(ctx, "lock:"+name, "worker-3", 0).Err(); err != nil {
		fmt.Println("set:", err)
		return
	}
	defer client.Del(ctx, "lock:"+name)

	in := inspect.New(client, nil)
	var keys []string
	err := in.Orphans(ctx, name, nil, func(o inspect.Orphan) error {
		fmt.Printf("no TTL: a %s, held by %q\n", o.Type, o.Holder.Owner)
		keys = append(keys, o.Key)
		return nil
	})
	if err != nil {
		fmt.Println("orphans:", err)
		return
	}
	done, err := in.FixOrphans(ctx, keys, inspect.Fix{Expire: 10 * time.Minute})
	if err != nil {
		fmt.Println("fix:", err)
		return
	}
	fmt.Println("expiry set:", done)
	fmt.Println("TTL now:", client.PTTL(ctx, "lock:"+name).Val() > 0)
	// Output:
	// no TTL: a string, held by "worker-3"
	// expiry set: [true]
	// TTL now: true
}

// Free a lock whose holder hung, naming the holder by the token hash a
// listing shows: a holder that took over since is left alone. The release
// is recorded in the audit stream.
func ExampleInspector_ForceRelease() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer client.Close()
	name := exampleName("migrate")
	lease, err := lock.New(client, nil).Acquire(ctx, name, time.Hour, &lock.AcquireOptions{Owner: "deploy@app-2:9001"})
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}

	in := inspect.New(client, nil)
	d, err := in.Lock(ctx, name)
	if err != nil || !d.Held() {
		fmt.Println("lock:", d, err)
		return
	}
	r, err := in.ForceRelease(ctx, name, d.Lock.TokenHash, &inspect.ReleaseOptions{Reason: "holder hung", Who: "oncall@bastion"})
	if err != nil {
		fmt.Println("force-release:", err)
		return
	}
	fmt.Println("released the hold of", r.Holder.Owner)

	// The holder finds its lease gone.
	fmt.Println("holder's release, not held:", errors.Is(lease.Release(ctx), lock.ErrNotHeld))

	// The same token hash again: nothing to release.
	_, err = in.ForceRelease(ctx, name, d.Lock.TokenHash, nil)
	fmt.Println("again, not held:", errors.Is(err, lock.ErrNotHeld))

	entries, err := in.Audit(ctx, 1)
	if err != nil || len(entries) != 1 {
		fmt.Println("audit:", entries, err)
		return
	}
	e := entries[0]
	fmt.Printf("audit: %s released %s's hold: %s\n", e.Who, e.Owner, e.Reason)
	// Output:
	// released the hold of deploy@app-2:9001
	// holder's release, not held: true
	// again, not held: true
	// audit: oncall@bastion released deploy@app-2:9001's hold: holder hung
}
