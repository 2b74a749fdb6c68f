package chaos_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/chaos"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

var lockctlBin string

// TestMain builds lockctl once for the run (the holders are the real
// binary), doubles as the critical section when lockctl starts it as a
// child, and writes the report when LOCKCTL_CHAOS_REPORT names a file.
func TestMain(m *testing.M) {
	if os.Getenv(naiveEnv) != "" {
		os.Exit(naiveMain())
	}
	if os.Getenv(chaos.ChildEnv) != "" {
		os.Exit(chaos.RunChild())
	}
	// In-process clients meet dead servers on purpose; go-redis would log
	// every failed dial.
	redis.SetLogger(quiet{})
	dir, err := os.MkdirTemp("", "lockctl-chaos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lockctlBin = filepath.Join(dir, "lockctl")
	build := exec.Command("go", "build", "-o", lockctlBin, ".")
	build.Dir = filepath.Join("..", "..", "..")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if bin := os.Getenv("LOCKCTL_CHAOS_BIN"); bin != "" {
		// Another build of lockctl (an older commit's, to compare).
		lockctlBin = bin
	} else if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build lockctl: %v\n%s", err, out)
		os.Exit(1)
	}
	if _, err := redistest.Binary(); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		os.Exit(1)
	}
	fmt.Printf("chaos: seed %d (replay with LOCKCTL_CHAOS_SEED=%d), tier %s\n", chaos.Seed(), chaos.Seed(), map[bool]string{true: "full", false: "short"}[chaos.Full()])
	code := m.Run()
	for _, f := range chaos.Failed() {
		fmt.Fprintln(os.Stderr, "FAIL: verdict of", f)
		code = 1
	}
	if p := os.Getenv("LOCKCTL_CHAOS_REPORT"); p != "" {
		if err := chaos.WriteReport(p); err != nil {
			fmt.Fprintln(os.Stderr, "write report:", err)
			code = 1
		}
	}
	_ = os.RemoveAll(dir) // a temporary directory: a leftover harms nothing
	os.Exit(code)
}

// full skips the test outside the full tier.
func full(t *testing.T) {
	t.Helper()
	if !chaos.Full() {
		t.Skip("full tier only (LOCKCTL_CHAOS=full, make chaos)")
	}
}

func startRedis(t *testing.T, args ...string) *redistest.Server {
	t.Helper()
	s, err := redistest.Start(&redistest.Options{Args: args})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// client is a go-redis client for in-process holders: short timeouts and no
// retries, so a fault reaches the lock code instead of being hidden.
func client(t *testing.T, addr string, timeout time.Duration) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1, PoolSize: 32,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout})
	t.Cleanup(func() { c.Close() })
	return c
}

func urlOf(addr string) string { return "redis://" + addr + "/0" }

// cycles runs n in-process holders for rounds cycles each and returns them.
func cycles(ctx context.Context, e *chaos.Env, holders []*chaos.Client, rounds int) {
	var wg sync.WaitGroup
	for _, h := range holders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds && ctx.Err() == nil; i++ {
				h.Cycle(ctx, e)
				time.Sleep(chaos.Jitter(h.Rng, 10*time.Millisecond, 0.9))
			}
		}()
	}
	wg.Wait()
}

// procLoop runs lockctl run holders: workers, each spawning rounds
// processes one after another.
func procLoop(e *chaos.Env, workers, rounds, firstID int, spec func(w int) chaos.ProcSpec) []*chaos.Proc {
	var mu sync.Mutex
	var all []*chaos.Proc
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				p := e.Spawn(firstID+w*rounds+i, spec(w))
				p.Wait()
				mu.Lock()
				all = append(all, p)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return all
}

func exits(ps []*chaos.Proc) map[int]int {
	m := map[int]int{}
	for _, p := range ps {
		m[p.Exit]++
	}
	return m
}

func renewalsOf(cs []*chaos.Client) (n int64, det []time.Duration) {
	for _, c := range cs {
		n += c.Stats.Renewals
		det = append(det, c.Stats.Detections...)
	}
	return n, det
}

func newClients(e *chaos.Env, n, firstID int, l *lock.Locker, name string, ttl, wait, work time.Duration) []*chaos.Client {
	var cs []*chaos.Client
	for i := 0; i < n; i++ {
		r := e.Rand(firstID + i)
		cs = append(cs, &chaos.Client{ID: firstID + i, Locker: l, Rng: r, TTL: ttl, Wait: wait,
			Work: chaos.Jitter(r, work, 0.5), Writes: 3, Name: name})
	}
	return cs
}

func unprotected(e *chaos.Env, n, firstID int, raw redis.UniversalClient, name string, ttl, wait, work time.Duration) []*chaos.Client {
	cs := newClients(e, n, firstID, nil, name, ttl, wait, work)
	for _, c := range cs {
		c.Unprotected, c.Raw = true, raw
	}
	return cs
}

func procDetail(ps []*chaos.Proc) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.String() + "\n")
	}
	return b.String()
}

func itoa(n int) string { return strconv.Itoa(n) }

type quiet struct{}

func (quiet) Printf(context.Context, string, ...interface{}) {}
