package chaos_test

import (
	"context"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/chaos"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
)

// TestLimit3: 8 lockctl run processes and 8 pkg/lock clients share a
// --limit 3 semaphore: never more than 3 inside at once, and 3 are reached.
// The unprotected variant (GET, compare, INCR: a check and a take that are
// not atomic) lets more than 3 in.
func TestLimit3(t *testing.T) {
	srv := startRedis(t)
	ttl := 2 * time.Second
	e := chaos.NewEnv(t, "1.limit3", lockctlBin)
	rounds := 2
	if chaos.Full() {
		rounds = 6
	}
	l := lock.New(client(t, srv.Addr, 2*time.Second), &lock.Options{PollInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var wg sync.WaitGroup
	var procs []*chaos.Proc
	wg.Add(1)
	go func() {
		defer wg.Done()
		procs = procLoop(e, 8, rounds, 0, func(w int) chaos.ProcSpec {
			return chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: "sem",
				Flags: []string{"-w", "2m", "--ttl", ttl.String(), "--limit", "3"}, Work: 150 * time.Millisecond, Writes: 1, TTL: ttl}
		})
	}()
	inproc := 0
	var mu sync.Mutex
	for i := 0; i < 8; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			holder := "c" + itoa(i)
			for r := 0; r < rounds; r++ {
				lease, err := l.Acquire(ctx, "sem", ttl, &lock.AcquireOptions{Limit: 3, Wait: time.Minute})
				if err != nil {
					t.Errorf("in-process acquire: %v", err)
					return
				}
				e.Res.Enter(holder)
				time.Sleep(150 * time.Millisecond)
				e.Res.Leave(holder)
				// A lease that ran out meanwhile is no failure here: the
				// resource's records are what the test checks.
				_ = lease.Release(context.WithoutCancel(ctx))
				mu.Lock()
				inproc++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	f := e.Collect("lockctl --limit 3", ttl, 16)
	f.Succeeded += inproc
	f.Attempted += inproc
	f.Fenced = chaos.FencedStats{}
	u := f.Unfenced
	f.Note("most holders inside at once: %d; lockctl run exits %v; fenced store not applicable to a semaphore", u.MaxInside, exits(procs))
	f.Verdict = verdictOf(u.MaxInside == 3 && exits(procs)[0] == len(procs), "never more than 3 inside, and 3 reached")
	chaos.Publish(f)
	if u.MaxInside > 3 {
		t.Errorf("%d holders inside a --limit 3 semaphore at once", u.MaxInside)
	}
	if u.MaxInside < 3 {
		t.Errorf("at most %d inside: the semaphore never admitted 3", u.MaxInside)
	}
	if got := exits(procs); got[0] != len(procs) {
		t.Errorf("lockctl run exits %v\n%s", got, procDetail(procs))
	}

	ue := chaos.NewEnv(t, "1.limit3", lockctlBin)
	raw := client(t, srv.Addr, 2*time.Second)
	var uwg sync.WaitGroup
	for i := 0; i < 8; i++ {
		uwg.Add(1)
		go func() {
			defer uwg.Done()
			holder := "u" + itoa(i)
			for r := 0; r < rounds*2; r++ {
				for {
					n, _ := raw.Get(ctx, "unprotected-sem").Int()
					if n < 3 {
						break
					}
					time.Sleep(5 * time.Millisecond)
				}
				raw.Incr(ctx, "unprotected-sem")
				ue.Res.Enter(holder)
				time.Sleep(50 * time.Millisecond)
				ue.Res.Leave(holder)
				raw.Decr(ctx, "unprotected-sem")
			}
		}()
	}
	uwg.Wait()
	uf := ue.Collect("unprotected: GET, compare, INCR", ttl, 8)
	uf.Fenced = chaos.FencedStats{}
	uf.Note("most holders inside at once: %d", uf.Unfenced.MaxInside)
	uf.Verdict = verdictOf(uf.Unfenced.MaxInside > 3, "fails as it must: more than 3 inside")
	chaos.Publish(uf)
	if uf.Unfenced.MaxInside <= 3 {
		t.Errorf("the unprotected semaphore never exceeded 3 (max %d)", uf.Unfenced.MaxInside)
	}
}

// TestFIFO: while a holder holds the lock, waiters arrive one by one (6
// lockctl run --fifo processes, then 6 in-process FIFO clients); they must
// enter in arrival order.
func TestFIFO(t *testing.T) {
	srv := startRedis(t)
	ttl := 5 * time.Second
	e := chaos.NewEnv(t, "1.fifo", lockctlBin)
	l := lock.New(client(t, srv.Addr, 2*time.Second), &lock.Options{PollInterval: 20 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	first, err := l.Acquire(ctx, "fifo", ttl, nil)
	if err != nil {
		t.Fatal(err)
	}
	var procs []*chaos.Proc
	var order []string
	for i := 0; i < 6; i++ {
		procs = append(procs, e.Spawn(i, chaos.ProcSpec{Global: []string{"--url", srv.URL}, Name: "fifo",
			Flags: []string{"-w", "1m", "--ttl", ttl.String(), "--fifo"}, Work: 20 * time.Millisecond, Writes: 1, TTL: ttl}))
		order = append(order, "p"+itoa(i))
		waitQueued(t, srv, i+1)
	}
	var wg sync.WaitGroup
	for i := 0; i < 6; i++ {
		holder := "c" + itoa(i)
		order = append(order, holder)
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease, err := l.Acquire(ctx, "fifo", ttl, &lock.AcquireOptions{FIFO: true, Wait: time.Minute})
			if err != nil {
				t.Errorf("in-process FIFO acquire: %v", err)
				return
			}
			e.Res.Enter(holder)
			time.Sleep(20 * time.Millisecond)
			e.Res.Leave(holder)
			_ = lease.Release(context.WithoutCancel(ctx)) // as above: the order is what is checked
		}()
		waitQueued(t, srv, 6+i+1)
	}
	// On a loaded machine first may have run out already: either way the
	// queue moves on, and the order is what is checked.
	_ = first.Release(ctx)
	for _, p := range procs {
		p.Wait()
	}
	wg.Wait()
	got := append([]string(nil), order...)
	sort.SliceStable(got, func(i, j int) bool { return e.Res.Entered(got[i]) < e.Res.Entered(got[j]) })
	f := e.Collect("lockctl --fifo", ttl, 13)
	f.Succeeded += 6
	f.Attempted += 6
	same := true
	for i := range order {
		if order[i] != got[i] || e.Res.Entered(got[i]) < 0 {
			same = false
		}
	}
	f.Note("arrival order %v, entry order %v", order, got)
	f.Verdict = verdictOf(same && f.Unfenced.Overlaps == 0, "served in arrival order, across processes and within one")
	chaos.Publish(f)
	if !same {
		t.Errorf("entry order %v, arrival order %v", got, order)
	}
	if f.Unfenced.Overlaps != 0 {
		t.Errorf("%d overlaps", f.Unfenced.Overlaps)
	}
}

// waitQueued waits until n waiters are in the FIFO queue of lock "fifo", so
// that arrival order is the order the test started them in, however slow
// the machine is to start a process.
func waitQueued(t *testing.T, srv *redistest.Server, n int) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if got, err := srv.Do("ZCARD", "lockctl:queue:{lock:fifo}"); err == nil && got == itoa(n) {
			return
		}
	}
	t.Fatalf("%d waiters never queued", n)
}
