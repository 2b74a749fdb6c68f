package inspect_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/testkit/plant"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
)

var plantTargets = []string{"lock", lockwire.KindFence, lockwire.KindSem, lockwire.KindSemVal, lockwire.KindQueue,
	lockwire.KindQueueHB, "audit"}

func typedInspectErr(err error) bool {
	return plant.Typed(err, lock.ErrNotHeld, lock.ErrNotOwner, lock.ErrWrongType, lock.ErrInvalid)
}

// FuzzPlantedInspect plants foreign, corrupted, huge and wrong-type values
// at a lock key, its auxiliary keys and the audit stream, then lists,
// details, scans for orphans, audits and force-releases: nothing panics,
// every error is typed, and the token hash a listing shows releases the
// holder it shows.
func FuzzPlantedInspect(f *testing.F) {
	val := plant.LockValue
	plant.AddSeeds(f, len(plantTargets), []plant.Seed{
		{0, "foreign-uuid", false}, {0, val, false}, {0, val[:30], false}, {0, "x", true}, {0, "", false},
		{0, "abc", false}, {0, `{"token":"a\"b","fence":1}`, false}, {0, `{"token":"\u0061b","fence":1}`, false},
		{0, `{"token":"a","token":"b"}`, false}, {0, `{"token":"ab","owner":5}`, false}, {0, "\xff\x00\x1b[2J", false},
		{1, "u:1=1", false}, {1, "u:1=x,v:2=0", false}, {1, "0123456789abcdef0123456789abcdef=" + val, false},
		{1, "tok=garbage", false}, {1, "mode=read,u:1=1,v:2=3", false}, {1, "mode=write,u:1:write=2,u:1=1", false},
		{1, "mode=read,u:1:write=1", false}, {1, "mode=write,mode:1=1", false}, {2, "9999999999999=tok", false}, {2, "1=a,2=b,3=c", false},
		{2, "-inf=a,inf=b", false}, {2, "1e300=x", false}, {3, "a,b", false}, {4, "a", false},
		{5, "who=x,fence=abc,ttl_ms=1e9", false}, {5, "f=v", false}, {6, "", false},
	})
	c := srv.Client(f)
	f.Fuzz(func(t *testing.T, target, typ byte, payload string, huge bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		prefix := "fuzzinsp:" + plant.Unique() + ":"
		in := inspect.New(c, &inspect.Options{Prefix: prefix})
		key := in.Key("k")
		where := plantTargets[int(target)%len(plantTargets)]
		at := key
		switch where {
		case "lock":
		case "audit":
			at = inspect.AuditKey
		default:
			at = lockwire.AuxKey(where, key)
		}
		plant.At(ctx, t, c, at, typ, payload, plant.Size(huge))
		defer func() {
			keys := []string{key, inspect.AuditKey}
			for _, k := range plantTargets[1 : len(plantTargets)-1] {
				keys = append(keys, lockwire.AuxKey(k, key))
			}
			c.Del(context.Background(), keys...)
		}()
		what := plant.Describe(typ, payload, at)
		check := plant.Checker(t, what, typedInspectErr)
		d, err := in.Lock(ctx, "k")
		check("Lock", err)
		check("Locks", in.Locks(ctx, "", nil, func(inspect.Lock) error { return nil }))
		check("Orphans", in.Orphans(ctx, "", nil, func(inspect.Orphan) error { return nil }))
		_, err = in.Audit(ctx, 0)
		check("Audit", err)
		_, err = in.ForceRelease(ctx, "k", "fedcba9876543210fedcba9876543210", &inspect.ReleaseOptions{Who: "fuzz"})
		check("ForceRelease (other token)", err)
		if err == nil {
			t.Fatalf("ForceRelease by a token nobody holds succeeded with %s", what)
		}
		if d != nil && d.Lock != nil && d.Lock.TokenHash != "" {
			_, err = in.ForceRelease(ctx, "k", d.Lock.TokenHash, &inspect.ReleaseOptions{Who: "fuzz"})
			check("ForceRelease (listed hash)", err)
			if errors.Is(err, lock.ErrNotOwner) {
				t.Fatalf("with %s: the listed holder (kind %s, token %q) is not released by its listed hash %s: %v",
					what, d.Lock.Kind(), plant.Abbrev(d.Lock.Token), d.Lock.TokenHash, err)
			}
		}
	})
}
