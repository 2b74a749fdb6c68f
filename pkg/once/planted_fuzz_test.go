package once_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/plant"
	"github.com/lockctl/lockctl/pkg/once"
)

func typedOnceErr(err error) bool {
	return plant.Typed(err, once.ErrInProgress, once.ErrDone, once.ErrFingerprint, once.ErrNotOwner,
		once.ErrLost, once.ErrNotFound, once.ErrWrongType, once.ErrInvalid)
}

// FuzzPlantedOnce plants foreign, corrupted, huge and wrong-type values at
// a once key, then reads it, claims it (with and without rerunning
// failures) and completes or abandons what it claimed: nothing panics,
// every error is typed, and Get and Claim agree on whether the key holds a
// once record.
func FuzzPlantedOnce(f *testing.F) {
	for _, s := range []plant.Seed{
		{0, "foreign", false}, {0, "x", true}, {0, "", false},
		{1, "state=running,owner=o,started_ms=1767225600000,attempts=1,token=t", false},
		{1, "state=done,exit=3,owner=o,finished_ms=1767225600000,started_ms=1,duration_ms=5,attempts=2", false},
		{1, "state=done,exit=x,attempts=y,started_ms=-5,finished_ms=99999999999999999999", false},
		{1, "state=done,exit=1,attempts=abc", false}, {1, "state=done,exit=1,attempts=1e400", false},
		{1, "state=done,exit=99999999999999999999", false}, {1, "state=done,fingerprint=other", false},
		{1, "state=running", false}, {1, "state=weird", false}, {1, "u:1=1", false}, {1, "state=done,state=running", false},
		{2, "1=a", false}, {3, "a,b", false}, {4, "a", false}, {5, "state=done", false}, {6, "", false},
	} {
		f.Add(s.Typ, s.Payload, s.Huge, false)
		f.Add(s.Typ, s.Payload, s.Huge, true)
	}
	c := srv.Client(f)
	f.Fuzz(func(t *testing.T, typ byte, payload string, huge, rerun bool) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s := once.New(c, &once.Options{Prefix: "once:fuzz:" + plant.Unique() + ":", TTL: 5 * time.Second})
		key := s.Key("k")
		plant.At(ctx, t, c, key, typ, payload, plant.Size(huge))
		defer c.Del(context.Background(), key)
		what := plant.Describe(typ, payload, key)
		check := plant.Checker(t, what, typedOnceErr)
		rec, getErr := s.Get(ctx, "k")
		check("Get", getErr)
		if getErr == nil && rec.State != once.StateRunning && rec.State != once.StateDone {
			t.Fatalf("Get with %s: state %q: a record is running or done, else the key is not a once record", what, rec.State)
		}
		claim, err := s.Claim(ctx, "k", &once.ClaimOptions{RerunFailed: rerun})
		check("Claim", err)
		if errors.Is(err, once.ErrWrongType) != errors.Is(getErr, once.ErrWrongType) {
			t.Fatalf("with %s: Get says %v, Claim says %v", what, getErr, err)
		}
		if claim != nil {
			check("Renew", claim.Renew(ctx))
			if rerun {
				check("Abandon", claim.Abandon(ctx))
			} else {
				_, err := claim.Complete(ctx, 0)
				check("Complete", err)
			}
		}
	})
}
