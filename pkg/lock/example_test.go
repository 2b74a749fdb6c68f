package lock_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// exampleName gives each run of an example its own lock name, so that
// examples do not meet each other's locks (nor their own under -count).
func exampleName(base string) string {
	var b [4]byte
	rand.Read(b[:])
	return "example." + base + "." + hex.EncodeToString(b[:])
}

// Take a lock, see that a second caller is refused while it is held, and
// release it.
func Example() {
	ctx := context.Background()
	// redisAddr is "localhost:6379" (the tests point it at a server of
	// their own).
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	locker := lock.New(client, nil)

	lease, err := locker.Acquire(ctx, "deploy", 30*time.Second, nil)
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	fmt.Println("acquired")

	// Someone else, meanwhile: the lock is held, no wait was asked for.
	_, err = locker.Acquire(ctx, "deploy", 30*time.Second, nil)
	fmt.Println("second caller not obtained:", errors.Is(err, lock.ErrNotObtained))

	if err := lease.Release(ctx); err != nil {
		fmt.Println("release:", err)
		return
	}
	fmt.Println("released")

	// Releasing again finds nothing to release.
	err = lease.Release(ctx)
	fmt.Println("second release not held:", errors.Is(err, lock.ErrNotHeld))
	// Output:
	// acquired
	// second caller not obtained: true
	// released
	// second release not held: true
}

// A watchdog keeps a short lease alive around a job that runs longer than
// the lease's TTL: Watch keeps the lease renewed, Done tells the job when
// it is lost, and Release stops the watchdog before it gives the lease
// back.
func ExampleLease_Watch() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	locker := lock.New(client, nil)

	lease, err := locker.Acquire(ctx, exampleName("export"), 1500*time.Millisecond, nil)
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	err = lease.Watch(ctx, nil) // renews every ttl/6
	if err != nil {
		fmt.Println("watch:", err)
		return
	}

	// The job: longer than the TTL. It stops early if the lease is lost.
	select {
	case <-lease.Done():
		fmt.Println("lost:", lease.Err())
		return
	case <-time.After(2 * time.Second):
	}
	fmt.Println("renewed during the job:", lease.Renewals() > 0)

	if err := lease.Release(ctx); err != nil {
		fmt.Println("release:", err)
		return
	}
	<-lease.Done() // closed by the release too
	fmt.Println("released")
	// Output:
	// renewed during the job: true
	// released
}

// Waiting for a held lock: AcquireOptions.Wait bounds the wait (-1 waits
// until ctx ends). A release wakes the waiter at once; a wait that runs
// out returns an error matching ErrNotObtained, which says who holds it.
func ExampleLocker_Acquire_wait() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	locker := lock.New(client, nil)
	name := exampleName("deploy")

	first, err := locker.Acquire(ctx, name, 30*time.Second, &lock.AcquireOptions{Owner: "first"})
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}

	// Held for longer than this wait.
	_, err = locker.Acquire(ctx, name, 30*time.Second, &lock.AcquireOptions{Wait: 100 * time.Millisecond})
	var held *lock.HeldError
	if errors.As(err, &held) {
		fmt.Println("not obtained:", errors.Is(err, lock.ErrNotObtained), "held by", held.Holder.Owner)
	}

	// Released while the second caller waits: it gets the lock.
	go func() {
		time.Sleep(200 * time.Millisecond)
		_ = first.Release(ctx)
	}()
	second, err := locker.Acquire(ctx, name, 30*time.Second, &lock.AcquireOptions{Wait: 10 * time.Second})
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	defer func() { _ = second.Release(ctx) }()
	fmt.Println("acquired after waiting:", second.Waited() > 0)
	// Output:
	// not obtained: true held by first
	// acquired after waiting: true
}

// Fencing a write: each holder hands its lease's fence to the storage,
// which checks it with Fences.Check before writing. A holder whose lease
// expired while it was paused comes back with an older fence than the
// current holder's, and its write is refused.
func ExampleFences_Check() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	locker := lock.New(client, nil)
	fences := locker.Fences()
	name := exampleName("ledger")
	resource := name + ".table" // the protected resource's own record

	// The first holder's lease runs out before it writes.
	old, err := locker.Acquire(ctx, name, 500*time.Millisecond, nil)
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	time.Sleep(time.Second) // a GC pause, a stopped VM, a slow disk...

	// The next holder takes the lock and writes with its fence.
	cur, err := locker.Acquire(ctx, name, 30*time.Second, nil)
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	fmt.Println("fence increased:", cur.Fence() > old.Fence())
	if err := fences.Check(ctx, resource, cur.Fence(), cur.Token()); err != nil {
		fmt.Println("check:", err)
		return
	}
	fmt.Println("current holder writes")

	// The first holder wakes up and tries to write: refused.
	err = fences.Check(ctx, resource, old.Fence(), old.Token())
	fmt.Println("old holder refused:", errors.Is(err, lock.ErrStaleFence))

	// The current holder writes again with the same fence.
	fmt.Println("current holder writes again:", fences.Check(ctx, resource, cur.Fence(), cur.Token()) == nil)

	if err := cur.Release(ctx); err != nil {
		fmt.Println("release:", err)
		return
	}
	fmt.Println("released")
	// Output:
	// fence increased: true
	// current holder writes
	// old holder refused: true
	// current holder writes again: true
	// released
}

// A semaphore: AcquireOptions.Limit lets up to Limit holders in at once.
func Example_semaphore() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	locker := lock.New(client, nil)
	name := exampleName("workers")
	opts := &lock.AcquireOptions{Limit: 2}

	var leases []*lock.Lease
	for i := 1; i <= 3; i++ {
		lease, err := locker.Acquire(ctx, name, 30*time.Second, opts)
		switch {
		case err == nil:
			fmt.Printf("worker %d: acquired a slot\n", i)
			leases = append(leases, lease)
		case errors.Is(err, lock.ErrNotObtained):
			fmt.Printf("worker %d: all slots taken\n", i)
		default:
			fmt.Println("acquire:", err)
			return
		}
	}

	// A slot given back lets the next worker in.
	if err := leases[0].Release(ctx); err != nil {
		fmt.Println("release:", err)
		return
	}
	lease, err := locker.Acquire(ctx, name, 30*time.Second, opts)
	fmt.Println("worker 3 after a release: acquired", err == nil)
	if err == nil {
		leases = append(leases[1:], lease)
	}
	for _, l := range leases {
		if err := l.Release(ctx); err != nil {
			fmt.Println("release:", err)
			return
		}
	}
	fmt.Println("released")
	// Output:
	// worker 1: acquired a slot
	// worker 2: acquired a slot
	// worker 3: all slots taken
	// worker 3 after a release: acquired true
	// released
}

// Shared locks: any number of shared holders at once (readers), none while
// an exclusive holder (a writer) has the lock, and no exclusive holder while
// a shared one does.
func Example_shared() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	locker := lock.New(client, nil)
	name := exampleName("catalog")
	shared := &lock.AcquireOptions{Shared: true}

	r1, err := locker.Acquire(ctx, name, 30*time.Second, shared)
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	r2, err := locker.Acquire(ctx, name, 30*time.Second, shared)
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	fmt.Println("two readers acquired")

	_, err = locker.Acquire(ctx, name, 30*time.Second, nil)
	fmt.Println("writer while readers hold it, not obtained:", errors.Is(err, lock.ErrNotObtained))

	for _, r := range []*lock.Lease{r1, r2} {
		if err := r.Release(ctx); err != nil {
			fmt.Println("release:", err)
			return
		}
	}
	fmt.Println("readers released")

	w, err := locker.Acquire(ctx, name, 30*time.Second, nil)
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	fmt.Println("writer acquired")
	_, err = locker.Acquire(ctx, name, 30*time.Second, shared)
	fmt.Println("reader while the writer holds it, not obtained:", errors.Is(err, lock.ErrNotObtained))
	if err := w.Release(ctx); err != nil {
		fmt.Println("release:", err)
		return
	}
	fmt.Println("writer released")
	// Output:
	// two readers acquired
	// writer while readers hold it, not obtained: true
	// readers released
	// writer acquired
	// reader while the writer holds it, not obtained: true
	// writer released
}

// Redlock: the lock is held when a majority of independent Redis servers
// granted it. Here, three servers started for the example.
func ExampleNewRedlock() {
	ctx := context.Background()
	var clients []redis.UniversalClient
	for range 3 {
		s, err := redistest.Start(nil)
		if err != nil {
			fmt.Println("start redis:", err)
			return
		}
		defer s.Stop()
		c := redis.NewClient(&redis.Options{Addr: s.Addr})
		defer c.Close()
		clients = append(clients, c)
	}
	locker, err := lock.NewRedlock(clients, nil)
	if err != nil {
		fmt.Println("redlock:", err)
		return
	}
	name := exampleName("migration")

	lease, err := locker.Acquire(ctx, name, 30*time.Second, nil)
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	fmt.Println("acquired on a quorum")

	_, err = locker.Acquire(ctx, name, 30*time.Second, nil)
	fmt.Println("second caller not obtained:", errors.Is(err, lock.ErrNotObtained))

	if err := lease.Release(ctx); err != nil {
		fmt.Println("release:", err)
		return
	}
	fmt.Println("released")
	// Output:
	// acquired on a quorum
	// second caller not obtained: true
	// released
}

// A lease taken by another process (`lockctl lock` printed its token) is
// resumed by name and token, renewed, and given back one hold at a time.
func ExampleLocker_Resume() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: redisAddr})
	defer client.Close()
	name := exampleName("handover")

	// The first process takes the lock, re-enters it once, and hands over
	// the token.
	first := lock.New(client, nil)
	lease, err := first.Acquire(ctx, name, 30*time.Second, nil)
	if err != nil {
		fmt.Println("acquire:", err)
		return
	}
	if _, err := first.Reenter(ctx, name, lease.Token()); err != nil {
		fmt.Println("re-enter:", err)
		return
	}
	token := lease.Token()

	// Another process knows only the name and the token.
	locker := lock.New(client, nil)
	resumed, err := locker.Resume(ctx, name, token)
	if err != nil {
		fmt.Println("resume:", err)
		return
	}
	fmt.Println("holds:", resumed.Holds(), "same fence:", resumed.Fence() == lease.Fence())
	if err := resumed.Refresh(ctx, 0); err != nil {
		fmt.Println("refresh:", err)
		return
	}
	for resumed.Holds() > 0 {
		if err := resumed.Release(ctx); err != nil {
			fmt.Println("release:", err)
			return
		}
		fmt.Println("released one hold, left:", resumed.Holds())
	}

	_, err = locker.Resume(ctx, name, token)
	fmt.Println("resumed again:", !errors.Is(err, lock.ErrNotHeld))
	// Output:
	// holds: 2 same fence: true
	// released one hold, left: 1
	// released one hold, left: 0
	// resumed again: false
}
