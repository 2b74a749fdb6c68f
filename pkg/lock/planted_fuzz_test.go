package lock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/plant"
	"github.com/lockctl/lockctl/pkg/lock"
)

// plantTargets are the keys of a lock that data can be planted at: the lock
// key and each auxiliary key, and a fence-check record.
var plantTargets = []string{"lock", lock.KindFence, lock.KindSem, lock.KindSemVal, lock.KindQueue,
	lock.KindQueueHB, lock.KindChecked}

// typedLockErr reports whether err is one a caller can branch on: a
// sentinel of pkg/lock or a reply error of the server.
func typedLockErr(err error) bool {
	return plant.Typed(err, lock.ErrNotObtained, lock.ErrNotHeld, lock.ErrNotOwner, lock.ErrWrongType,
		lock.ErrStaleFence, lock.ErrInvalid)
}

func addPlantSeeds(f *testing.F) {
	val := plant.LockValue
	plant.AddSeeds(f, len(plantTargets), []plant.Seed{
		{0, "foreign-uuid", false}, {0, val, false}, {0, val[:30], false}, {0, "x", true}, {0, "", false},
		{0, "abc", false}, {0, "99999999999999999999", false}, {0, "-3", false}, {0, "7", false},
		{0, `{"token":"a\"b","fence":1}`, false}, {0, "\xff\x00\x1b[2J", false},
		{1, "u:1=1", false}, {1, "u:1=x,v:2=0", false}, {1, "0123456789abcdef0123456789abcdef=" + val, false},
		{1, "tok=garbage", false}, {2, "9999999999999=tok", false}, {2, "1=a,2=b,3=c", false},
		{2, "-inf=a,inf=b", false}, {2, "1e300=x", false}, {3, "a,b", false}, {4, "a", false},
		{5, "f=v", false}, {6, "", false},
	})
}

// FuzzPlantedLock plants foreign, corrupted, huge and wrong-type values at
// a lock key and at each of its auxiliary keys, then acquires (plain,
// semaphore, FIFO), renews, releases, reads and fences it: nothing panics,
// and every error is typed.
func FuzzPlantedLock(f *testing.F) {
	addPlantSeeds(f)
	c := srv.Client(f)
	f.Fuzz(func(t *testing.T, target, typ byte, payload string, huge bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		l := lock.New(c, &lock.Options{Prefix: "lock:fuzz:"})
		name := plant.Unique()
		key := l.Key(name)
		where := plantTargets[int(target)%len(plantTargets)]
		at := key
		switch where {
		case "lock":
		case lock.KindChecked:
			at = lock.AuxKey(where, name) // Check takes the resource as given
		default:
			at = lock.AuxKey(where, key)
		}
		plant.At(ctx, t, c, at, typ, payload, plant.Size(huge))
		defer func() {
			keys := []string{key, lock.AuxKey(lock.KindChecked, name)}
			for _, k := range plantTargets[1:] {
				keys = append(keys, lock.AuxKey(k, key))
			}
			c.Del(context.Background(), keys...)
		}()
		check := plant.Checker(t, plant.Describe(typ, payload, at), typedLockErr)
		for _, o := range []*lock.AcquireOptions{{}, {Limit: 2}, {FIFO: true}} {
			lease, err := l.Acquire(ctx, name, 5*time.Second, o)
			check(fmt.Sprintf("Acquire(%+v)", *o), err)
			if lease != nil {
				_, err = l.Renewer(lease).Renew(ctx, name, lease.Token(), 5*time.Second)
				check("Renew (own lease)", err)
				check("ReleaseLease", lease.Release(ctx))
			}
		}
		_, err := renewToken(ctx, l, name, "0123456789abcdef0123456789abcdef", time.Second)
		check("Renew", err)
		check("Release", releaseToken(ctx, l, name, "0123456789abcdef0123456789abcdef"))
		if h, err := l.Get(ctx, name); err == nil && (h.Key != key || h.TTL < -1) {
			t.Fatalf("Get with %q planted at %s: %+v", plant.Abbrev(payload), at, h)
		} else {
			check("Get", err)
		}
		_, err = l.Fences().Peek(ctx, name)
		check("Fences.Peek", err)
		_, err = l.Fences().Next(ctx, name)
		check("Fences.Next", err)
		check("Fences.Check", l.Fences().Check(ctx, name, 5, "0123456789abcdef0123456789abcdef"))
	})
}
