package inspect_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
)

// The one staleness rule: more than two periods without a renewal; no
// period (renewed by hand) is never stale.
func TestNotRenewing(t *testing.T) {
	for _, c := range []struct {
		age, every time.Duration
		want       bool
	}{
		{0, time.Second, false},
		{time.Second, time.Second, false},
		{2 * time.Second, time.Second, false},
		{2*time.Second + time.Millisecond, time.Second, true},
		{time.Hour, time.Second, true},
		{time.Hour, 0, false},
	} {
		if got := inspect.NotRenewing(c.age, c.every); got != c.want {
			t.Errorf("NotRenewing(age %v, every %v) = %v, want %v", c.age, c.every, got, c.want)
		}
	}
}

// What the stored values record reaches a listing and a detail: a holder
// whose last renewal is older than two periods is Stale, one renewed by
// hand never is, a foreign lock records nothing; a detail checks a local
// owner's pid against the recorded start time.
func TestRenewalListed(t *testing.T) {
	ctx := context.Background()
	c := clientFor(t, srv.URL)
	prefix := fmt.Sprintf("rn%d:", time.Now().UnixNano())
	in := inspect.New(c, &inspect.Options{Prefix: prefix})
	now, err := c.Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	ms := func(d time.Duration) string { return strconv.FormatInt(now.Add(-d).UnixMilli(), 10) }
	self := identity.OwnerWithPID(os.Getpid())
	start := strconv.FormatInt(identity.PIDStart(), 10)
	val := func(token, owner, pidStart, every, renewedAgo string) string {
		v := `{"token":"` + token + `","fence":1,"owner":"` + owner + `"`
		if pidStart != "" {
			v += `,"pid_start":` + pidStart
		}
		v += `,"ttl_ms":60000`
		if every != "" {
			v += `,"renew_every_ms":` + every
		}
		return v + `,"acquired_ms":` + ms(time.Minute) + `,"renewed_ms":` + renewedAgo + `}`
	}
	for name, v := range map[string]string{
		"dead":    val("t1", self, start, "100", ms(10*time.Second)),
		"live":    val("t2", self, start, "10000", ms(time.Second)),
		"byhand":  val("t3", self, start, "", ms(50*time.Second)),
		"reused":  val("t4", self, "1", "100", ms(10*time.Second)),
		"foreign": "0f3b8a52-5c1e-4d0e-9a4b-2f1f6a1c9e77",
	} {
		do(t, c, "SET", prefix+name, v, "PX", "60000")
	}
	got := map[string]inspect.Lock{}
	if err := in.Locks(ctx, "", nil, func(l inspect.Lock) error { got[l.Name] = l; return nil }); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]struct {
		recorded, stale bool
		every           time.Duration
		ageAbout        time.Duration
	}{
		"dead":    {true, true, 100 * time.Millisecond, 10 * time.Second},
		"live":    {true, false, 10 * time.Second, time.Second},
		"byhand":  {true, false, 0, 50 * time.Second},
		"foreign": {false, false, 0, 0},
	} {
		r := got[name].Renewal
		if r.Recorded != want.recorded || r.Stale != want.stale || r.Every != want.every {
			t.Errorf("%s: renewal %+v, want %+v", name, r, want)
		}
		if want.recorded && (r.Age < want.ageAbout || r.Age > want.ageAbout+5*time.Second) {
			t.Errorf("%s: renewal age %v, want about %v", name, r.Age, want.ageAbout)
		}
		if got[name].Process != inspect.ProcessUnknown {
			t.Errorf("%s: a listing checked the pid: %q", name, got[name].Process)
		}
	}
	for name, want := range map[string]inspect.Process{
		"dead":    inspect.ProcessAlive, // this test's own pid and start time
		"reused":  inspect.ProcessReused,
		"foreign": inspect.ProcessUnknown,
	} {
		d, err := in.Lock(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if d.Lock.Process != want {
			t.Errorf("%s: process %q, want %q", name, d.Lock.Process, want)
		}
	}
	// A holder on another host is never checked here.
	do(t, c, "SET", prefix+"remote", val("t5", "ci@elsewhere:"+strconv.Itoa(os.Getpid()), start, "100", ms(time.Second)), "PX", "60000")
	if d, err := in.Lock(ctx, "remote"); err != nil || d.Lock.Process != inspect.ProcessUnknown {
		t.Errorf("remote holder: %v %+v", err, d)
	}
	// Semaphore slots carry the same record.
	l := lock.New(c, &lock.Options{Prefix: prefix})
	lease, err := l.Acquire(ctx, "sem", time.Minute, &lock.AcquireOptions{Limit: 2, RenewEvery: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lease.Release(ctx) }()
	d, err := in.Lock(ctx, "sem")
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Holders) != 1 || !d.Holders[0].Renewal.Recorded || d.Holders[0].Renewal.Every != 10*time.Second ||
		d.Holders[0].Renewal.Stale || d.Holders[0].Process != inspect.ProcessAlive {
		t.Errorf("semaphore holders %+v", d.Holders)
	}
}
