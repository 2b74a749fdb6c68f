// Command peers measures lockctl's library against its peers on one private
// redis-server: bsm/redislock and go-redsync/redsync for locks,
// go-redis/redis_rate for rate limits, each beside a floor (or, for
// contention, the ceiling of an in-process sync.Mutex). Contenders run
// interleaved in short slices (internal/testkit/benchcmp), so that the machine's
// drift hits all of them alike; every ratio is printed with its min–max
// over rounds. Output is Markdown tables on stdout.
//
//	go run . [-rounds 10] [-only lock,server,scripts,allocs,contention,procs,limit]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/benchcmp"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

func main() {
	rounds := flag.Int("rounds", 10, "rounds per workload; ratios are given with their min–max over rounds")
	only := flag.String("only", "lock,server,scripts,allocs,contention,procs,limit", "workloads to run, comma-separated")
	worker := flag.String("worker", "", "run as one worker process of the procs workload, for this contender")
	addr := flag.String("addr", "", "-worker: redis-server address")
	n := flag.Int("n", 0, "-worker: acquisitions")
	flag.StringVar(&scriptsBefore, "scripts-before", "", "scripts: also measure acquire.lua and release.lua from this directory (an earlier pkg/lock)")
	flag.Parse()
	if *worker != "" {
		if err := workerMain(*addr, *worker, *n); err != nil {
			fmt.Fprintln(os.Stderr, "peers worker:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(*rounds, strings.Split(*only, ",")); err != nil {
		fmt.Fprintln(os.Stderr, "peers:", err)
		os.Exit(1)
	}
}

func run(rounds int, only []string) error {
	srv, err := redistest.Start(nil)
	if err != nil {
		return err
	}
	defer srv.Stop()
	ctx := context.Background()
	c := newClient(srv.Addr, nil)
	defer c.Close()
	header(ctx, c)
	start := time.Now()
	for _, w := range only {
		var err error
		switch w {
		case "lock":
			err = lockWorkload(c, rounds)
		case "server":
			err = serverWorkload(ctx, srv.Addr, c, max(3, rounds/2))
		case "allocs":
			err = allocWorkload(c)
		case "contention":
			err = contentionWorkload(c, max(3, rounds/2))
		case "scripts":
			err = scriptsWorkload(ctx, c, max(3, rounds/2))
		case "procs":
			err = procsWorkload(srv.Addr, max(3, rounds/2))
		case "limit":
			err = limitWorkload(c, rounds)
		default:
			err = fmt.Errorf("unknown workload %q", w)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", w, err)
		}
	}
	fmt.Printf("\ntotal %s; load average at the end: %s\n", time.Since(start).Round(time.Second), loadavg())
	return nil
}

// newClient is the client every contender shares: enough connections for
// 64 goroutines, as in pkg/lock's own benchmarks.
func newClient(addr string, h redis.Hook) *redis.Client {
	c := redis.NewClient(&redis.Options{Addr: addr, PoolSize: 128, MinIdleConns: 64})
	if h != nil {
		c.AddHook(h)
	}
	return c
}

func loadavg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "?"
	}
	return strings.Join(f[:3], " ")
}

func header(ctx context.Context, c *redis.Client) {
	model := "?"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel, _ := exec.Command("uname", "-sr").Output()
	info, _ := c.Info(ctx, "server").Result()
	version := "?"
	for _, l := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
			version = v
		}
	}
	fmt.Printf("machine: %d CPUs (%s), %s, %s, redis-server %s on loopback; load average at the start: %s\n",
		runtime.NumCPU(), model, strings.TrimSpace(string(kernel)), runtime.Version(), version, loadavg())
}

// ratio is num's throughput over den's: overall (sums over rounds) and
// the min and max of the per-round ratios.
func ratio(wall [][]time.Duration, num, den int) (all, lo, hi float64) {
	var sn, sd time.Duration
	lo, hi = 1e9, 0
	for r := range wall[num] {
		sn += wall[num][r]
		sd += wall[den][r]
		x := float64(wall[den][r]) / float64(wall[num][r])
		lo, hi = min(lo, x), max(hi, x)
	}
	return float64(sd) / float64(sn), lo, hi
}

func sum(ds []time.Duration) (t time.Duration) {
	for _, d := range ds {
		t += d
	}
	return t
}

func fmtRatio(all, lo, hi float64) string { return fmt.Sprintf("%.2f (%.2f–%.2f)", all, lo, hi) }

// interleaved builds every contender on c, warms each up and runs them
// interleaved, returning wall[contender][round] and ops per contender.
func interleaved(c *redis.Client, cs []contender, g, rounds int) ([][]time.Duration, int, error) {
	ops := make([]benchcmp.Op, len(cs))
	for i, ct := range cs {
		ops[i] = ct.make(c)
	}
	// Slices of about 5–20ms: short against the machine's drift.
	sliceOps, slices := 20, 25
	if g > 1 {
		sliceOps, slices = 5, 10
	}
	if _, err := benchcmp.Interleave(g, 10, 1, 1, ops...); err != nil {
		return nil, 0, err
	}
	wall, err := benchcmp.Interleave(g, sliceOps, slices, rounds, ops...)
	return wall, g * sliceOps * slices * rounds, err
}

func lockWorkload(c *redis.Client, rounds int) error {
	cs := lockContenders()
	fmt.Printf("\n### Acquire + release, distinct keys (%d rounds, interleaved)\n\n", rounds)
	fmt.Println("| goroutines | contender | µs/op | lockctl throughput ÷ this (min–max over rounds) |")
	fmt.Println("|---|---|---|---|")
	for _, g := range []int{1, 64} {
		wall, n, err := interleaved(c, cs, g, rounds)
		if err != nil {
			return err
		}
		for i, ct := range cs {
			us := float64(sum(wall[i]).Microseconds()) / float64(n)
			fmt.Printf("| %d | %s | %.1f | %s |\n", g, ct.name, us, fmtRatio(ratio(wall, 0, i)))
		}
	}
	return nil
}

func limitWorkload(c *redis.Client, rounds int) error {
	fmt.Printf("\n### Rate-limit decisions (%d rounds, interleaved)\n\n", rounds)
	fmt.Println("| goroutines | keys | contender | decisions/s | ÷ redis_rate (min–max) | ÷ floor (min–max) |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, g := range []int{1, 64} {
		for _, hot := range []bool{true, false} {
			cs := limitContenders(hot)
			rr, floor := len(cs)-2, len(cs)-1
			wall, n, err := interleaved(c, cs, g, rounds)
			if err != nil {
				return err
			}
			keys := "distinct"
			if hot {
				keys = "hot"
			}
			for i, ct := range cs {
				perSec := float64(n) / sum(wall[i]).Seconds()
				fmt.Printf("| %d | %s | %s | %.0f | %s | %s |\n", g, keys, ct.name, perSec,
					fmtRatio(ratio(wall, i, rr)), fmtRatio(ratio(wall, i, floor)))
			}
		}
	}
	return nil
}

func serverWorkload(ctx context.Context, addr string, ctl *redis.Client, rounds int) error {
	const n = 1000
	fmt.Printf("\n### Server time per op (INFO commandstats, %d ops × %d rounds, one goroutine)\n\n", n, rounds)
	fmt.Println("| workload | contender | server µs/op (min–max) | server instructions/op (callgrind) | commands per op × µs per call (last round) |")
	fmt.Println("|---|---|---|---|---|")
	groups := []struct {
		name string
		cs   []contender
	}{{"acquire+release", lockContenders()}, {"rate limit, hot key", limitContenders(true)}}
	for _, grp := range groups {
		hooks := make([]*nameHook, len(grp.cs))
		ops := make([]benchcmp.Op, len(grp.cs))
		for i, ct := range grp.cs {
			hooks[i] = &nameHook{names: map[string]int64{}}
			cl := newClient(addr, hooks[i])
			defer cl.Close()
			ops[i] = ct.make(cl)
			for j := 0; j < 20; j++ {
				if err := ops[i](0); err != nil {
					return err
				}
			}
		}
		samples := make([][]serverSample, len(grp.cs))
		for r := 0; r < rounds; r++ {
			for k := range grp.cs {
				i := (k + r) % len(grp.cs)
				s, err := serverTime(ctx, ctl, hooks[i], ops[i], n)
				if err != nil {
					return err
				}
				samples[i] = append(samples[i], s)
			}
		}
		for i, ct := range grp.cs {
			us := make([]float64, len(samples[i]))
			for j, s := range samples[i] {
				us[j] = s.usecPerOp
			}
			slices.Sort(us)
			fmt.Printf("| %s | %s | %.1f (%.1f–%.1f) | %s | %s |\n", grp.name, ct.name, us[len(us)/2], us[0], us[len(us)-1],
				instructions(samples[i]), samples[i][len(samples[i])-1].detail)
		}
	}
	if err := splitServerTime(ctx, addr, ctl, rounds, n); err != nil {
		return err
	}
	fmt.Println("\n(middle value of the rounds, then min–max)")
	return nil
}

// instructions is the middle of the samples' instructions per op, "—"
// when the server did not run under callgrind.
func instructions(s []serverSample) string {
	ir := make([]float64, len(s))
	for j, x := range s {
		ir[j] = x.instrPerOp
	}
	slices.Sort(ir)
	if ir[len(ir)-1] == 0 {
		return "—"
	}
	return fmt.Sprintf("%.0f", ir[len(ir)/2])
}

// splitServerTime is lockctl's acquire and release scripts apart: n
// acquisitions of distinct names, then their n releases.
func splitServerTime(ctx context.Context, addr string, ctl *redis.Client, rounds, n int) error {
	h := &nameHook{names: map[string]int64{}}
	cl := newClient(addr, h)
	defer cl.Close()
	l := lock.New(cl, nil)
	var acq, rel []serverSample
	for r := 0; r < rounds; r++ {
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("peers.split.%d.%d", r, i)
		}
		leases := make([]*lock.Lease, n)
		i := 0
		s, err := serverTime(ctx, ctl, h, func(int) error {
			lease, err := l.Acquire(ctx, names[i], ttl, nil)
			if err == nil {
				leases[i] = lease
			}
			i++
			return err
		}, n)
		if err != nil {
			return err
		}
		acq = append(acq, s)
		i = 0
		if s, err = serverTime(ctx, ctl, h, func(int) error {
			err := leases[i].Release(ctx)
			i++
			return err
		}, n); err != nil {
			return err
		}
		rel = append(rel, s)
	}
	for _, x := range []struct {
		name string
		s    []serverSample
	}{{"lockctl acquire alone", acq}, {"lockctl release alone", rel}} {
		us := make([]float64, len(x.s))
		for j, s := range x.s {
			us[j] = s.usecPerOp
		}
		slices.Sort(us)
		fmt.Printf("| acquire+release | %s | %.1f (%.1f–%.1f) | %s | %s |\n", x.name, us[len(us)/2], us[0], us[len(us)-1],
			instructions(x.s), x.s[len(x.s)-1].detail)
	}
	return nil
}

func allocWorkload(c *redis.Client) error {
	const n, rounds = 1000, 5
	fmt.Printf("\n### Allocations and client CPU per op (one goroutine, %d ops × %d rounds, interleaved)\n\n", n, rounds)
	fmt.Println("| workload | contender | allocs/op | bytes/op | client CPU µs/op (min–max) |")
	fmt.Println("|---|---|---|---|---|")
	groups := []struct {
		name string
		cs   []contender
	}{{"acquire+release", lockContenders()}, {"rate limit, hot key", limitContenders(true)}}
	for _, grp := range groups {
		ops := make([]benchcmp.Op, len(grp.cs))
		for i, ct := range grp.cs {
			ops[i] = ct.make(c)
			if _, _, _, err := allocs(ops[i], 50); err != nil {
				return err
			}
		}
		mallocs := make([]float64, len(ops))
		bytes := make([]float64, len(ops))
		cpu := make([][]time.Duration, len(ops))
		for r := 0; r < rounds; r++ {
			for k := range ops {
				i := (k + r) % len(ops)
				m, b, t, err := allocs(ops[i], n)
				if err != nil {
					return err
				}
				mallocs[i], bytes[i] = m, b
				cpu[i] = append(cpu[i], t)
			}
		}
		for i, ct := range grp.cs {
			slices.Sort(cpu[i])
			us := func(d time.Duration) float64 { return float64(d) / 1e3 }
			fmt.Printf("| %s | %s | %.1f | %.0f | %.1f (%.1f–%.1f) |\n", grp.name, ct.name, mallocs[i], bytes[i],
				us(cpu[i][rounds/2]), us(cpu[i][0]), us(cpu[i][rounds-1]))
		}
	}
	fmt.Println("\n(client CPU: middle value of the rounds, then min–max)")
	return nil
}

func contentionWorkload(c *redis.Client, rounds int) error {
	const workers, perRound, hold = 16, 320, time.Millisecond
	ws := waiters()
	lfs := make([]lockFunc, len(ws))
	for i, w := range ws {
		lfs[i] = w.make(c)
		if _, err := contend(workers, workers, hold, lfs[i]); err != nil {
			return err
		}
	}
	res := make([][]contendResult, len(ws))
	for r := 0; r < rounds; r++ {
		for k := range ws {
			i := (k + r) % len(ws)
			cr, err := contend(workers, perRound, hold, lfs[i])
			if err != nil {
				return fmt.Errorf("%s: %w", ws[i].name, err)
			}
			res[i] = append(res[i], cr)
		}
	}
	fmt.Printf("\n### Contention: %d workers, one key, %s hold (%d rounds of %d acquisitions, interleaved)\n\n", workers, hold, rounds, perRound)
	printContention(ws, res, workers, len(ws)-1, "sync.Mutex", true)
	return nil
}

// printContention prints one row per contender; ceiling is the index of the
// contender the others are divided by. fair says whether workers competed
// for a shared count of acquisitions (else each had a fixed quota and
// fairness is not measured).
func printContention(ws []waiter, res [][]contendResult, workers, ceiling int, ceilingName string, fair bool) {
	fmt.Printf("| contender | acq/s | ÷ %s (min–max) | wait p50 | wait p99 (min–max per round) | wait max | fairness max/min |\n", ceilingName)
	fmt.Println("|---|---|---|---|---|---|---|")
	wall := make([][]time.Duration, len(ws))
	for i := range ws {
		for _, cr := range res[i] {
			wall[i] = append(wall[i], cr.elapsed)
		}
	}
	for i, w := range ws {
		var all []time.Duration
		counts := make([]int, workers)
		p99lo, p99hi := time.Hour, time.Duration(0)
		for _, cr := range res[i] {
			all = append(all, cr.waits...)
			for j, n := range cr.counts {
				counts[j] += n
			}
			s := slices.Sorted(slices.Values(cr.waits))
			p := percentile(s, 0.99)
			p99lo, p99hi = min(p99lo, p), max(p99hi, p)
		}
		slices.Sort(all)
		fairness := "—"
		if fair {
			fairness = fmt.Sprintf("%.2f", float64(slices.Max(counts))/float64(max(1, slices.Min(counts))))
		}
		ms := func(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/1e6) }
		fmt.Printf("| %s | %.0f | %s | %s | %s (%s–%s) | %s | %s |\n", w.name,
			float64(len(all))/sum(wall[i]).Seconds(), fmtRatio(ratio(wall, i, ceiling)),
			ms(percentile(all, 0.5)), ms(percentile(all, 0.99)), ms(p99lo), ms(p99hi), ms(all[len(all)-1]), fairness)
	}
}
