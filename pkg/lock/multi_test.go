package lock_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// setNames are n lock names no other test uses.
func setNames(t *testing.T, n int) []string {
	base := uniqueName(t)
	names := make([]string, n)
	for i := range names {
		names[i] = base + "." + string(rune('a'+i))
	}
	return names
}

// exists counts which of the lock names' keys exist.
func exists(t *testing.T, c redis.Cmdable, l *lock.Locker, names ...string) int64 {
	t.Helper()
	var n int64
	for _, name := range names {
		n += c.Exists(context.Background(), l.Key(name)).Val()
	}
	return n
}

// One name of the set held by someone else: nothing is taken, not a single
// name, and no fence is burnt; acquiring the same names one by one, as a
// caller without AcquireMulti would, leaves a partial hold behind.
func TestAcquireMultiAllOrNothing(t *testing.T) {
	ctx := context.Background()
	l, c := newLocker(t, nil)
	names := setNames(t, 3)
	other, err := l.Acquire(ctx, names[1], time.Minute, &lock.AcquireOptions{Owner: "other"})
	if err != nil {
		t.Fatal(err)
	}
	lease, err := l.AcquireMulti(ctx, names, time.Minute, nil)
	var held *lock.HeldError
	if lease != nil || !errors.Is(err, lock.ErrNotObtained) || !errors.As(err, &held) {
		t.Fatalf("AcquireMulti with %s held elsewhere = %v, %v; want a *HeldError", names[1], lease, err)
	}
	if held.Holder.Key != l.Key(names[1]) || held.Holder.Owner != "other" {
		t.Errorf("refusal names %s (owner %q), want %s held by other", held.Holder.Key, held.Holder.Owner, l.Key(names[1]))
	}
	if n := exists(t, c, l, names[0], names[2]); n != 0 {
		t.Fatalf("%d of the free names taken by a refused set", n)
	}
	for _, name := range []string{names[0], names[2]} {
		if f, err := l.Fences().Peek(ctx, name); err != nil || f != 0 {
			t.Errorf("%s's fence counter is %d (%v) after a refused set: a fence was burnt", name, f, err)
		}
	}
	// defer lease.Release(ctx) before err is checked is safe.
	if err := lease.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("nil set lease's Release = %v, want ErrNotHeld", err)
	}

	// The unprotected way: one by one.
	var taken []*lock.Lease
	for _, name := range names {
		one, err := l.Acquire(ctx, name, time.Minute, nil)
		if err != nil {
			break
		}
		taken = append(taken, one)
	}
	if len(taken) != 1 || exists(t, c, l, names[0]) != 1 {
		t.Fatalf("one by one took %d name(s); want the partial hold of %s the set avoids", len(taken), names[0])
	}
	for _, one := range taken {
		_ = one.Release(ctx)
	}

	if err := other.Release(ctx); err != nil {
		t.Fatal(err)
	}
	lease, err = l.AcquireMulti(ctx, names, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n := exists(t, c, l, names...); n != 3 {
		t.Fatalf("%d of 3 names held after AcquireMulti", n)
	}
	if lease.Name() != names[0] || lease.Key() != l.Key(names[0]) || lease.Fence() != lease.FenceOf(names[0]) {
		t.Errorf("set lease %s %s fence %d: want the first name's", lease.Name(), lease.Key(), lease.Fence())
	}
	// Taken: a single Acquire of any of them is refused.
	for _, name := range names {
		if _, err := l.Acquire(ctx, name, time.Minute, nil); !errors.Is(err, lock.ErrNotObtained) {
			t.Errorf("Acquire(%s) inside a held set = %v", name, err)
		}
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if n := exists(t, c, l, names...); n != 0 {
		t.Fatalf("%d names still held after the set's Release", n)
	}
}

// Each name's fence comes from its own counter, the one Acquire of that
// name uses: it grows with every acquisition of that name, by a set or alone.
func TestAcquireMultiFencesPerName(t *testing.T) {
	ctx := context.Background()
	l, c := newLocker(t, nil)
	names := setNames(t, 3)
	first, err := l.AcquireMulti(ctx, names, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		f := first.FenceOf(name)
		h, err := l.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if f <= 0 || h.Fence != f || h.Token != first.Token() {
			t.Errorf("%s: FenceOf %d, stored fence %d token %q; want one fence, the set's token %q", name, f, h.Fence, h.Token, first.Token())
		}
		if peek, _ := l.Fences().Peek(ctx, name); peek != f {
			t.Errorf("%s: counter %d, fence %d", name, peek, f)
		}
	}
	if first.FenceOf("not-in-the-set") != 0 {
		t.Error("FenceOf a name outside the set is not 0")
	}
	if err := first.Release(ctx); err != nil {
		t.Fatal(err)
	}
	// One name alone in between: its counter moves, the others' do not.
	alone, err := l.Acquire(ctx, names[1], time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if alone.Fence() <= first.FenceOf(names[1]) {
		t.Errorf("Acquire after the set: fence %d, not above the set's %d", alone.Fence(), first.FenceOf(names[1]))
	}
	if err := alone.Release(ctx); err != nil {
		t.Fatal(err)
	}
	second, err := l.AcquireMulti(ctx, names, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = second.Release(ctx) }()
	for _, name := range names {
		if second.FenceOf(name) <= first.FenceOf(name) {
			t.Errorf("%s: second set's fence %d not above the first's %d", name, second.FenceOf(name), first.FenceOf(name))
		}
	}
	if second.FenceOf(names[1]) <= alone.Fence() {
		t.Errorf("%s: set's fence %d not above the lone acquisition's %d", names[1], second.FenceOf(names[1]), alone.Fence())
	}
	// A storage guard takes each name's fence, and refuses the old one.
	res := uniqueName(t)
	if err := l.Fences().Check(ctx, res, second.FenceOf(names[2]), second.Token()); err != nil {
		t.Fatal(err)
	}
	if err := l.Fences().Check(ctx, res, first.FenceOf(names[2]), first.Token()); !errors.Is(err, lock.ErrStaleFence) {
		t.Errorf("the first set's fence after the second's: %v, want ErrStaleFence", err)
	}
	_ = c
}

// Refresh renews every key of the set, and a Watchdog keeps them all
// alive past the TTL.
func TestAcquireMultiRenewKeepsAll(t *testing.T) {
	ctx := context.Background()
	l, c := newLocker(t, nil)
	names := setNames(t, 3)
	lease, err := l.AcquireMulti(ctx, names, 2*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lease.Release(ctx) }()
	if err := lease.Refresh(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if ttl := c.PTTL(ctx, l.Key(name)).Val(); ttl < 30*time.Second {
			t.Errorf("%s: pttl %v after Refresh(1m)", name, ttl)
		}
	}
	if lease.TTL() != time.Minute {
		t.Errorf("lease TTL %v after Refresh(1m)", lease.TTL())
	}

	shortNames := setNames(t, 2)
	short, err := l.AcquireMulti(ctx, shortNames, 600*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := short.StartWatch(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond)
	if !w.Held() || w.Renewals() < 2 {
		t.Fatalf("watchdog held %v after %d renewals: %v", w.Held(), w.Renewals(), w.Err())
	}
	for _, name := range shortNames {
		if exists(t, c, l, name) != 1 {
			t.Errorf("%s expired under a watchdog", name)
		}
	}
	if err := short.Release(ctx); err != nil {
		t.Fatal(err)
	}
}

// Losing any one key loses the set: Refresh renews none of them and says
// which is gone, a Watchdog reports the loss and Done closes, and Release
// frees the keys still held.
func TestAcquireMultiLosingOneKeyLosesTheSet(t *testing.T) {
	ctx := context.Background()
	l, c := newLocker(t, nil)
	names := setNames(t, 3)
	lease, err := l.AcquireMulti(ctx, names, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Del(ctx, l.Key(names[1]))
	err = lease.Refresh(ctx, time.Minute)
	if !errors.Is(err, lock.ErrNotHeld) || !strings.Contains(err.Error(), l.Key(names[1])) {
		t.Fatalf("Refresh with %s deleted = %v, want ErrNotHeld naming it", names[1], err)
	}
	for _, name := range []string{names[0], names[2]} {
		if ttl := c.PTTL(ctx, l.Key(name)).Val(); ttl > 10*time.Second {
			t.Errorf("%s renewed (pttl %v) although the set was lost", name, ttl)
		}
	}
	select {
	case <-lease.Done():
	default:
		t.Error("Done still open after the set was found lost")
	}
	// Another holder took the name meanwhile: Release frees the set's own
	// keys and leaves that holder alone.
	thief, err := l.Acquire(ctx, names[1], time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = lease.Release(ctx)
	if !errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("Release of a set one key of which another holds = %v, want ErrNotOwner", err)
	}
	if n := exists(t, c, l, names[0], names[2]); n != 0 {
		t.Errorf("%d keys of the lost set left held", n)
	}
	if h, err := l.Get(ctx, names[1]); err != nil || h.Token != thief.Token() {
		t.Errorf("the other holder's lock: %+v %v", h, err)
	}
	_ = thief.Release(ctx)

	// A watchdog finds the loss of one key.
	two := setNames(t, 2)
	lease, err = l.AcquireMulti(ctx, two, 600*time.Millisecond, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := lease.StartWatch(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Del(ctx, l.Key(two[1]))
	select {
	case err := <-w.Lost():
		if !errors.Is(err, lock.ErrLost) || !errors.Is(err, lock.ErrNotHeld) {
			t.Errorf("watchdog's loss: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("watchdog did not report the loss of one key of the set")
	}
	<-lease.Done()
	if err := lease.Release(ctx); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("Release after the loss = %v, want ErrNotHeld", err)
	}
	if exists(t, c, l, two[0]) != 0 {
		t.Error("the key still held was not released")
	}
}

// A waiter on a set gets in once the release of the name that kept it out
// lets it, woken by that release and not by polling (the poll interval is
// an hour), and sends only a few commands while it waits.
func TestAcquireMultiWaiterGetsInAfterRelease(t *testing.T) {
	ctx := redistest.Context(t)
	holderLocker, _ := newLocker(t, nil)
	hook := &countingHook{}
	wc := newClient(t)
	wc.AddHook(hook)
	waiter := lock.New(wc, &lock.Options{PollInterval: time.Hour})
	names := setNames(t, 3)

	for _, setHolder := range []bool{false, true} {
		var held *lock.Lease
		var err error
		if setHolder {
			held, err = holderLocker.AcquireMulti(ctx, names[1:], time.Hour, nil)
		} else {
			held, err = holderLocker.Acquire(ctx, names[2], time.Hour, nil)
		}
		if err != nil {
			t.Fatal(err)
		}
		busy := make(chan struct{}, 1)
		type result struct {
			lease *lock.Lease
			err   error
		}
		got := make(chan result, 1)
		go func() {
			lease, err := waiter.AcquireMulti(ctx, names, time.Minute, &lock.AcquireOptions{Wait: 30 * time.Second,
				Observer: func(lock.AcquireEvent) {
					select {
					case busy <- struct{}{}:
					default:
					}
				}})
			got <- result{lease, err}
		}()
		<-busy
		time.Sleep(300 * time.Millisecond) // subscribed, and waiting
		before := hook.n.Load()
		time.Sleep(500 * time.Millisecond)
		if n := hook.n.Load() - before; n > 2 {
			t.Errorf("the waiter sent %d commands in 500ms while waiting: a busy loop", n)
		}
		if err := held.Release(ctx); err != nil {
			t.Fatal(err)
		}
		r := <-got
		if r.err != nil {
			t.Fatalf("waiter (holder a set: %v): %v", setHolder, r.err)
		}
		if r.lease.Waited() < 700*time.Millisecond {
			t.Errorf("waited only %v", r.lease.Waited())
		}
		if err := r.lease.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// A waiter that gives up leaves no trace: nothing held, and new shared
// holders of its names are not kept out.
func TestAcquireMultiWaitTimesOut(t *testing.T) {
	ctx := context.Background()
	l, c := newLocker(t, nil)
	names := setNames(t, 2)
	held, err := l.Acquire(ctx, names[1], time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Release(ctx) }()
	_, err = l.AcquireMulti(ctx, names, time.Minute, &lock.AcquireOptions{Wait: 300 * time.Millisecond})
	if !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("bounded wait on a held set = %v", err)
	}
	if exists(t, c, l, names[0]) != 0 {
		t.Error("a name taken by a set whose wait ran out")
	}
	// No waiting exclusive acquirer is left listed on the free name.
	sh, err := l.Acquire(ctx, names[0], time.Minute, &lock.AcquireOptions{Shared: true})
	if err != nil {
		t.Fatalf("shared acquire after the set's waiter left: %v", err)
	}
	_ = sh.Release(ctx)
	// ctx's deadline ends the wait as ErrNotObtained too.
	dctx, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := l.AcquireMulti(dctx, names, time.Minute, &lock.AcquireOptions{Wait: -1}); !errors.Is(err, lock.ErrNotObtained) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("wait ended by ctx's deadline = %v", err)
	}
}

// Shared holders and semaphore slots of a name keep a set out as they
// keep out an exclusive Acquire.
func TestAcquireMultiRefusedBySharedAndSemaphore(t *testing.T) {
	ctx := context.Background()
	l, c := newLocker(t, nil)
	names := setNames(t, 3)
	sh, err := l.Acquire(ctx, names[0], time.Minute, &lock.AcquireOptions{Shared: true})
	if err != nil {
		t.Fatal(err)
	}
	slot, err := l.Acquire(ctx, names[2], time.Minute, &lock.AcquireOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	var held *lock.HeldError
	if _, err := l.AcquireMulti(ctx, names, time.Minute, nil); !errors.As(err, &held) || held.Holder.Reason != lock.ReasonShared {
		t.Fatalf("set with a shared holder on %s = %v", names[0], err)
	}
	_ = sh.Release(ctx)
	if _, err := l.AcquireMulti(ctx, names, time.Minute, nil); !errors.As(err, &held) || held.Holder.Reason != lock.ReasonSemaphore {
		t.Fatalf("set with a semaphore slot on %s = %v", names[2], err)
	}
	if n := exists(t, c, l, names...); n != 0 {
		t.Fatalf("%d names taken by refused sets", n)
	}
	_ = slot.Release(ctx)
}

// Arguments a set cannot take are refused before anything is sent.
func TestAcquireMultiInvalid(t *testing.T) {
	ctx := context.Background()
	l, _ := newLocker(t, nil)
	n := setNames(t, 2)
	for what, call := range map[string]func() (*lock.Lease, error){
		"no names": func() (*lock.Lease, error) { return l.AcquireMulti(ctx, nil, time.Minute, nil) },
		"empty":    func() (*lock.Lease, error) { return l.AcquireMulti(ctx, []string{n[0], ""}, time.Minute, nil) },
		"twice":    func() (*lock.Lease, error) { return l.AcquireMulti(ctx, []string{n[0], n[1], n[0]}, time.Minute, nil) },
		"ttl":      func() (*lock.Lease, error) { return l.AcquireMulti(ctx, n, 0, nil) },
		"limit": func() (*lock.Lease, error) {
			return l.AcquireMulti(ctx, n, time.Minute, &lock.AcquireOptions{Limit: 2})
		},
		"fifo": func() (*lock.Lease, error) {
			return l.AcquireMulti(ctx, n, time.Minute, &lock.AcquireOptions{FIFO: true})
		},
		"shared": func() (*lock.Lease, error) {
			return l.AcquireMulti(ctx, n, time.Minute, &lock.AcquireOptions{Shared: true})
		},
		"bad token": func() (*lock.Lease, error) {
			return l.AcquireMulti(ctx, n, time.Minute, &lock.AcquireOptions{Token: `a"b`})
		},
	} {
		if lease, err := call(); lease != nil || !errors.Is(err, lock.ErrInvalid) {
			t.Errorf("%s: %v, %v; want ErrInvalid", what, lease, err)
		}
	}
}

// A nil lease is safe: FenceOf is 0, Release and Refresh match ErrNotHeld,
// Done is closed.
func TestNilLeaseFenceOf(t *testing.T) {
	var lease *lock.Lease
	if lease.FenceOf("x") != 0 {
		t.Error("nil lease has a fence")
	}
	if err := lease.Refresh(context.Background(), 0); !errors.Is(err, lock.ErrNotHeld) {
		t.Errorf("nil Refresh = %v", err)
	}
	<-lease.Done()
}

// On a Cluster, names in different slots are refused before anything is
// sent, with the fix (a common hash tag); names that share a tag are taken,
// renewed and released as a set.
func TestAcquireMultiOnCluster(t *testing.T) {
	cl := redistest.StartClusterTest(t)
	ctx := context.Background()
	c := cl.Client(t)
	l := lock.New(c, nil)

	names := []string{"a", "b", "c"} // three slots
	_, err := l.AcquireMulti(ctx, names, time.Minute, nil)
	if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "{tag}") || !strings.Contains(err.Error(), "slot") {
		t.Fatalf("cross-slot set = %v, want ErrInvalid naming the fix", err)
	}
	for _, name := range names {
		if n := c.Exists(ctx, l.Key(name)).Val(); n != 0 {
			t.Errorf("%s written by a refused cross-slot set", name)
		}
		if f, _ := l.Fences().Peek(ctx, name); f != 0 {
			t.Errorf("%s's fence counter written by a refused cross-slot set", name)
		}
	}

	// The same set through a client of one node (redis-cli's habit, a
	// --url): the node refuses keys of several slots (CROSSSLOT), and the
	// refusal is the same, with the server's reply.
	node := redis.NewClient(&redis.Options{Addr: cl.Addrs[0]})
	t.Cleanup(func() { _ = node.Close() })
	_, err = lock.New(node, nil).AcquireMulti(ctx, names, time.Minute, nil)
	if !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "{tag}") || !strings.Contains(err.Error(), "CROSSSLOT") {
		t.Fatalf("cross-slot set through one node = %v, want ErrInvalid naming the fix and CROSSSLOT", err)
	}

	tagged := []string{"{job}a", "{job}b", "{job}c"}
	other, err := l.Acquire(ctx, tagged[2], time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AcquireMulti(ctx, tagged, time.Minute, nil); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatalf("tagged set with one name held = %v", err)
	}
	if c.Exists(ctx, l.Key(tagged[0])).Val() != 0 {
		t.Fatal("partial hold on a Cluster")
	}
	_ = other.Release(ctx)
	lease, err := l.AcquireMulti(ctx, tagged, time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Refresh(ctx, time.Minute); err != nil {
		t.Fatal(err)
	}
	for _, name := range tagged {
		if lease.FenceOf(name) <= 0 || c.PTTL(ctx, l.Key(name)).Val() < 30*time.Second {
			t.Errorf("%s: fence %d pttl %v", name, lease.FenceOf(name), c.PTTL(ctx, l.Key(name)).Val())
		}
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	for _, name := range tagged {
		if c.Exists(ctx, l.Key(name)).Val() != 0 {
			t.Errorf("%s held after the set's release", name)
		}
	}
}

// A set waiter that a release wakes for nothing (another name of its set
// is still held) passes the wake-up on: the next waiter of the released
// name gets it at once, not at its poll (an hour here).
func TestAcquireMultiWaiterPassesOnAWakeUpItCannotUse(t *testing.T) {
	ctx := redistest.Context(t)
	l := lock.New(newClient(t), &lock.Options{PollInterval: time.Hour})
	names := setNames(t, 2)
	ha, err := l.Acquire(ctx, names[0], time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	hb, err := l.Acquire(ctx, names[1], time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = hb.Release(ctx) }()
	busy := func() (func(lock.AcquireEvent), chan struct{}) {
		ch := make(chan struct{}, 1)
		return func(lock.AcquireEvent) {
			select {
			case ch <- struct{}{}:
			default:
			}
		}, ch
	}
	onSet, setBusy := busy()
	setDone := make(chan error, 1)
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		lease, err := lock.New(newClient(t), &lock.Options{PollInterval: time.Hour}).AcquireMulti(wctx, names, time.Minute,
			&lock.AcquireOptions{Wait: -1, Observer: onSet})
		if lease != nil {
			_ = lease.Release(context.Background())
		}
		setDone <- err
	}()
	<-setBusy // listed first on names[0]
	onOne, oneBusy := busy()
	oneDone := make(chan error, 1)
	// Bounded by its context, whose end is no last attempt (a bounded
	// Wait tries once more at its deadline).
	octx, ocancel := context.WithTimeout(ctx, 10*time.Second)
	defer ocancel()
	go func() {
		lease, err := lock.New(newClient(t), &lock.Options{PollInterval: time.Hour}).Acquire(octx, names[0], time.Minute,
			&lock.AcquireOptions{Wait: -1, Observer: onOne})
		if lease != nil {
			_ = lease.Release(context.Background())
		}
		oneDone <- err
	}()
	<-oneBusy
	time.Sleep(200 * time.Millisecond)
	if err := ha.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-oneDone; err != nil {
		t.Fatalf("the lone waiter of %s after its release: %v (the set waiter kept the wake-up)", names[0], err)
	}
	cancel()
	if err := <-setDone; !errors.Is(err, context.Canceled) {
		t.Errorf("set waiter: %v", err)
	}
}

// Redlock's masters each decide alone: a set cannot be taken in one step
// there, and is refused before anything is written.
func TestAcquireMultiRefusedByRedlock(t *testing.T) {
	l, nodes := redlockNodes(t, nil)
	names := setNames(t, 2)
	lease, err := l.AcquireMulti(context.Background(), names, time.Minute, nil)
	if lease != nil || !errors.Is(err, lock.ErrInvalid) || !strings.Contains(err.Error(), "Redlock") {
		t.Fatalf("AcquireMulti on Redlock = %v, %v", lease, err)
	}
	for _, s := range nodes {
		for _, name := range names {
			if v := get(t, s, l.Key(name)); v != "" {
				t.Errorf("%s written on %s by a refused set", name, s.Addr)
			}
		}
	}
}

// eventLog collects the events a Locker records.
type eventLog struct {
	mu sync.Mutex
	ev []events.Event
}

func (e *eventLog) Record(_ context.Context, ev events.Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.ev = append(e.ev, ev)
}

func (e *eventLog) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []string
	for _, ev := range e.ev {
		out = append(out, ev.Kind+" "+ev.Name)
	}
	e.ev = nil
	return out
}

// Each name of a set records its own outcome: acquired and released for
// every name, busy only for the name that refused the set.
func TestAcquireMultiEvents(t *testing.T) {
	ctx := context.Background()
	log := &eventLog{}
	l, _ := newLocker(t, &lock.Options{Events: log})
	names := setNames(t, 3)
	other, err := lock.New(newClient(t), nil).Acquire(ctx, names[1], time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.AcquireMulti(ctx, names, time.Minute, nil); !errors.Is(err, lock.ErrNotObtained) {
		t.Fatal(err)
	}
	if got, want := strings.Join(log.take(), "; "), events.Busy+" "+names[1]; got != want {
		t.Errorf("refused set recorded %q, want %q", got, want)
	}
	_ = other.Release(ctx)
	lease, err := l.AcquireMulti(ctx, names, time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := lease.Release(ctx); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, kind := range []string{events.Acquired, events.Released} {
		for _, name := range names {
			want = append(want, kind+" "+name)
		}
	}
	if got := log.take(); strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Errorf("set recorded %q, want %q", got, want)
	}
}

// BenchmarkAcquireMultiRelease: a set of n names taken and released, one
// script each, beside one lock (n=1 through Acquire) on the same server.
func BenchmarkAcquireMultiRelease(b *testing.B) {
	ctx := context.Background()
	l := lock.New(benchClient(b), nil)
	b.Run("acquire", func(b *testing.B) {
		name := uniqueName(b)
		for i := 0; i < b.N; i++ {
			lease, err := l.Acquire(ctx, name, 30*time.Second, nil)
			if err != nil {
				b.Fatal(err)
			}
			if err := lease.Release(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	for _, n := range []int{1, 3, 10} {
		b.Run(fmt.Sprintf("set=%d", n), func(b *testing.B) {
			base := uniqueName(b)
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("%s.%d", base, i)
			}
			for i := 0; i < b.N; i++ {
				lease, err := l.AcquireMulti(ctx, names, 30*time.Second, nil)
				if err != nil {
					b.Fatal(err)
				}
				if err := lease.Release(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
