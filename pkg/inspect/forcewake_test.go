package inspect_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// waiterPoll is the waiters' PollInterval in the hand-off tests: a waiter
// stays listed 3× that and sleeps up to 2× that on its wake-up stream, so
// a forced release that wakes nobody hands off only when the waiter renews
// its listing, seconds after a release that wakes it.
const waiterPoll = 2 * time.Second

// handOffMode is one way of holding and waiting for a lock.
type handOffMode struct {
	name string
	// hold and wait are the holder's and the waiter's options; holders
	// is how many take the lock before the waiter comes (a semaphore's
	// limit fills up).
	hold, wait lock.AcquireOptions
	holders    int
	// listed is the waiters' list the waiter must appear in before the
	// release: then it sleeps on its wake-up stream.
	listed string
}

var handOffModes = []handOffMode{
	{name: "plain", holders: 1, listed: lockwire.KindWriters},
	{name: "fifo", hold: lock.AcquireOptions{FIFO: true}, wait: lock.AcquireOptions{FIFO: true}, holders: 1, listed: lockwire.KindQueue},
	{name: "shared-holder", hold: lock.AcquireOptions{Shared: true}, holders: 1, listed: lockwire.KindWriters},
	{name: "shared-waiter", wait: lock.AcquireOptions{Shared: true}, holders: 1, listed: lockwire.KindWaiting},
	{name: "semaphore", hold: lock.AcquireOptions{Limit: 2}, wait: lock.AcquireOptions{Limit: 2}, holders: 2, listed: lockwire.KindWaiting},
}

// handOff measures one hand-off of name in mode m on c: the holders take
// the lock, a waiter (a Locker of its own) waits until it is listed, then
// free releases the first holder's lease; it returns how long after free
// began the waiter had the lock. The waiter's lease is released before it
// returns, the other holders' are left to the test's end.
func handOff(t *testing.T, c redis.UniversalClient, prefix, name string, m handOffMode, free func(*lock.Lease) error) time.Duration {
	t.Helper()
	ctx := context.Background()
	holders := lock.New(c, &lock.Options{Prefix: prefix})
	var first *lock.Lease
	for i := range m.holders {
		o := m.hold
		o.Owner = fmt.Sprintf("holder-%d@%s", i, m.name)
		le, err := holders.Acquire(ctx, name, time.Minute, &o)
		if err != nil {
			t.Fatalf("%s: holder %d: %v", m.name, i, err)
		}
		if first == nil {
			first = le
		}
	}
	waiter := lock.New(c, &lock.Options{Prefix: prefix, PollInterval: waiterPoll})
	wo := m.wait
	wo.Owner, wo.Wait = "waiter@"+m.name, 30*time.Second
	wo.Token = token(t)
	type got struct {
		le *lock.Lease
		at time.Time
	}
	done := make(chan got, 1)
	errs := make(chan error, 1)
	go func() {
		le, err := waiter.Acquire(ctx, name, time.Minute, &wo)
		if err != nil {
			errs <- err
			return
		}
		done <- got{le, time.Now()}
	}()
	list := lockwire.AuxKey(m.listed, prefix+name)
	waitFor(t, func() bool { return c.ZScore(ctx, list, wo.Token).Err() == nil })
	start := time.Now()
	if err := free(first); err != nil {
		t.Fatalf("%s: freeing the holder: %v", m.name, err)
	}
	select {
	case g := <-done:
		if err := g.le.Release(ctx); err != nil {
			t.Errorf("%s: the waiter's release: %v", m.name, err)
		}
		return g.at.Sub(start)
	case err := <-errs:
		t.Fatalf("%s: the waiter: %v", m.name, err)
	case <-time.After(20 * time.Second):
		t.Fatalf("%s: the waiter never got the lock", m.name)
	}
	return 0
}

// handOffBound is how long a forced release's hand-off may take given a
// plain release's measured beside it: a few times as long plus room for a
// loaded machine, well under the waiter's sleep until it renews its
// listing (2× waiterPoll), which is when a waiter nobody woke gets in.
func handOffBound(plain time.Duration) time.Duration {
	return 4*plain + 700*time.Millisecond
}

// A force-release wakes exactly whom a release would, in every mode: the
// waiter gets the lock about as soon after it as after a plain release,
// not when it next renews its listing.
func TestForceReleaseHandsOff(t *testing.T) {
	for _, m := range handOffModes {
		t.Run(m.name, func(t *testing.T) {
			in, c, prefix, _ := fixture(t)
			plain := handOff(t, c, prefix, "plain-"+m.name, m, func(le *lock.Lease) error {
				return le.Release(context.Background())
			})
			forced := handOff(t, c, prefix, "forced-"+m.name, m, func(le *lock.Lease) error {
				_, err := in.ForceRelease(context.Background(), "forced-"+m.name, inspect.TokenHash(le.Token()),
					&inspect.ReleaseOptions{Reason: "hand-off test"})
				return err
			})
			t.Logf("%s: release hands off in %v, force-release in %v", m.name, plain, forced)
			if bound := handOffBound(plain); forced > bound {
				t.Errorf("%s: force-release handed off in %v, a release in %v: want within %v (the waiter was not woken)",
					m.name, forced, plain, bound)
			}
		})
	}
}

// On a Cluster the audit record goes to another slot between the check and
// the release, and the waiters' lists and wake-up streams are in the
// lock's slot: the force-release still wakes the waiter at once.
func TestForceReleaseHandsOffOnCluster(t *testing.T) {
	cl := redistest.StartClusterTest(t)
	c := cl.Client(t)
	in := inspect.New(c, nil)
	for _, m := range []handOffMode{handOffModes[0], handOffModes[4]} {
		t.Run(m.name, func(t *testing.T) {
			plain := handOff(t, c, "lock:", "plain-"+m.name, m, func(le *lock.Lease) error {
				return le.Release(context.Background())
			})
			forced := handOff(t, c, "lock:", "forced-"+m.name, m, func(le *lock.Lease) error {
				_, err := in.ForceRelease(context.Background(), "forced-"+m.name, inspect.TokenHash(le.Token()), nil)
				return err
			})
			t.Logf("%s on a Cluster: release hands off in %v, force-release in %v", m.name, plain, forced)
			if bound := handOffBound(plain); forced > bound {
				t.Errorf("%s on a Cluster: force-release handed off in %v, a release in %v: want within %v (the waiter was not woken)",
					m.name, forced, plain, bound)
			}
		})
	}
}

// A waiters' list that someone else wrote with another type cannot stop a
// force-release after its audit record and delete: the release stands,
// reported as a wake-up whose pick was refused, and the waiters are woken
// on the release channel instead.
func TestForceReleaseWakeOverForeignWaitersList(t *testing.T) {
	in, c, prefix, leases := fixture(t)
	ctx := context.Background()
	d := leases["deploy"]
	do(t, c, "SET", lockwire.AuxKey(lockwire.KindWriters, prefix+"deploy"), "not a zset")
	ps := c.Subscribe(ctx, lockwire.Channel(prefix+"deploy"))
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	r, err := in.ForceRelease(ctx, "deploy", inspect.TokenHash(d.Token()), nil)
	if err != nil {
		t.Fatalf("force-release: %v", err)
	}
	var we *lock.WakeError
	if !errors.As(r.Wake, &we) || we.Command == "" || !strings.Contains(we.Reason, "WRONGTYPE") {
		t.Errorf("wake: %#v, want the pick's refusal", r.Wake)
	}
	if n := c.Exists(ctx, prefix+"deploy").Val(); n != 0 || r.AuditID == "" {
		t.Errorf("lock left %d, audit %q: want released and recorded", n, r.AuditID)
	}
	select {
	case m := <-ps.Channel():
		if m.Payload != "released" {
			t.Errorf("message %q", m.Payload)
		}
	case <-time.After(5 * time.Second):
		t.Error("waiters were not woken on the release channel")
	}
}
