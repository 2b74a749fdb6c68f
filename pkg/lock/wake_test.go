package lock_test

import (
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	evs "github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// restrictedUser creates, on s, a user with every command and the lock
// keys but no pub/sub channel, as Redis 7 makes new users
// (acl-pubsub-default resetchannels), and returns a client for it.
func restrictedUser(t *testing.T, s *redistest.Server, name string) *redis.Client {
	t.Helper()
	if _, err := s.Do("ACL", "SETUSER", name, "on", ">pw", "+@all", "~*", "resetchannels"); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Username: name, Password: "pw", Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	return c
}

// A release whose wake-up the server refuses is a release: the lock (or
// slot) is gone and the error says only that waiters were not woken.
func TestReleaseStandsWhenTheWakeUpIsRefused(t *testing.T) {
	c := restrictedUser(t, srv, "nochan")
	events := &sink{}
	l := lock.New(c, &lock.Options{Events: events})
	name := uniqueName(t)
	a, err := l.Acquire(ctx, name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = releaseToken(ctx, l, name, a.Token())
	var we *lock.WakeError
	if !errors.Is(err, lock.ErrNotWoken) || !errors.As(err, &we) || we.Channel != lock.Channel(a.Key()) || we.Reason == "" {
		t.Fatalf("release: %v, want a *WakeError on %s", err, lock.Channel(a.Key()))
	}
	if errors.Is(err, lock.ErrNotHeld) || errors.Is(err, lock.ErrNotOwner) {
		t.Errorf("release: %v reads as a failed release", err)
	}
	if n := redisDo(t, newClient(t), "EXISTS", a.Key()).(int64); n != 0 {
		t.Fatal("the lock is still there")
	}
	if n := events.count(evs.Released); n != 1 {
		t.Errorf("events %v, want the release recorded as released", events.kinds(""))
	}

	// A semaphore slot.
	s, err := l.Acquire(ctx, name+".sem", 10*time.Second, &lock.AcquireOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx); !errors.Is(err, lock.ErrNotWoken) {
		t.Fatalf("semaphore release: %v", err)
	}
	if n := redisDo(t, newClient(t), "EXISTS", lock.AuxKey(lock.KindSem, s.Key())).(int64); n != 0 {
		t.Fatal("the slot is still there")
	}
}

// Under Redlock a node that published is enough: waiters subscribe on
// every node. Only when no node could publish is the release reported
// as not woken.
func TestRedlockReleaseWakeUpRefused(t *testing.T) {
	t.Parallel()
	var srvs []*redistest.Server
	var clients []redis.UniversalClient
	for i := range 3 {
		s := redistest.StartTest(t, nil)
		srvs = append(srvs, s)
		if i == 0 {
			// One node without channels.
			clients = append(clients, restrictedUser(t, s, "nochan"))
			continue
		}
		c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: 2, DisableIdentity: true})
		t.Cleanup(func() { c.Close() })
		clients = append(clients, c)
	}
	l, err := lock.NewRedlock(clients, nil)
	if err != nil {
		t.Fatal(err)
	}
	name := uniqueName(t)
	a, err := l.Acquire(ctx, name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := releaseToken(ctx, l, name, a.Token()); err != nil {
		t.Fatalf("release with two nodes publishing: %v", err)
	}
	// Every node without channels.
	for _, s := range srvs[1:] {
		if _, err := s.Do("ACL", "SETUSER", "default", "resetchannels"); err != nil {
			t.Fatal(err)
		}
	}
	b, err := l.Acquire(ctx, name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := releaseToken(ctx, l, name, b.Token()); !errors.Is(err, lock.ErrNotWoken) {
		t.Fatalf("release with no node publishing: %v", err)
	}
	for _, s := range srvs {
		if v := get(t, s, b.Key()); v != "" {
			t.Errorf("%s still holds %s", s.Addr, v)
		}
	}
}

// A release by a user who may not run a command that only picks the
// waiter to wake (EXISTS here) is a release too: the lock and the slot are
// gone, the *WakeError names the command, and the message still went out
// on the release channel (Channel empty), so waiters are woken.
func TestReleaseStandsWhenPickingTheWaiterIsRefused(t *testing.T) {
	admin := newClient(t)
	if _, err := srv.Do("ACL", "SETUSER", "noexists", "on", ">pw", "+@all", "-exists", "~*", "&*"); err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: srv.Addr, Username: "noexists", Password: "pw", Protocol: 2, DisableIdentity: true})
	t.Cleanup(func() { c.Close() })
	holder := lock.New(admin, nil) // acquiring needs EXISTS
	l := lock.New(c, nil)
	name := uniqueName(t)
	a, err := holder.Acquire(ctx, name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = releaseToken(ctx, l, name, a.Token())
	var we *lock.WakeError
	if !errors.As(err, &we) || we.Command != "EXISTS" || we.Channel != "" || we.Reason == "" {
		t.Fatalf("release: %v (%+v), want a *WakeError naming EXISTS", err, we)
	}
	if n := redisDo(t, admin, "EXISTS", a.Key()).(int64); n != 0 {
		t.Fatal("the lock is still there")
	}

	s, err := holder.Acquire(ctx, name+".sem", 10*time.Second, &lock.AcquireOptions{Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := releaseToken(ctx, l, name+".sem", s.Token()); !errors.As(err, &we) || we.Command != "EXISTS" {
		t.Fatalf("semaphore release: %v", err)
	}
	if n := redisDo(t, admin, "EXISTS", lock.AuxKey(lock.KindSem, s.Key())).(int64); n != 0 {
		t.Fatal("the slot is still there")
	}
}
