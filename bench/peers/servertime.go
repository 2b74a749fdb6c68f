package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/benchcmp"
	"github.com/redis/go-redis/v9"
)

// nameHook counts the commands a client sends, by name. Server time is
// summed over these names only: a script's own usec already include the
// commands it calls, which INFO commandstats also counts under their own
// names (those never appear here, since the client does not send them).
type nameHook struct {
	mu    sync.Mutex
	names map[string]int64
}

func (h *nameHook) add(cmds ...redis.Cmder) {
	h.mu.Lock()
	for _, c := range cmds {
		h.names[c.Name()]++
	}
	h.mu.Unlock()
}

func (h *nameHook) reset() { h.mu.Lock(); h.names = map[string]int64{}; h.mu.Unlock() }

func (h *nameHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *nameHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error { h.add(cmd); return next(ctx, cmd) }
}

func (h *nameHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error { h.add(cmds...); return next(ctx, cmds) }
}

// cmdStat is one line of INFO commandstats.
type cmdStat struct {
	calls int64
	usec  int64
}

func commandStats(ctx context.Context, ctl *redis.Client) (map[string]cmdStat, error) {
	info, err := ctl.Info(ctx, "commandstats").Result()
	if err != nil {
		return nil, err
	}
	stats := map[string]cmdStat{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || !strings.HasPrefix(name, "cmdstat_") {
			continue
		}
		var s cmdStat
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "calls":
				s.calls, _ = strconv.ParseInt(v, 10, 64)
			case "usec":
				s.usec, _ = strconv.ParseInt(v, 10, 64)
			}
		}
		stats[strings.TrimPrefix(name, "cmdstat_")] = s
	}
	return stats, nil
}

// serverSample is the server's time per op for one contender in one round,
// and which commands made it up.
type serverSample struct {
	usecPerOp float64
	// instrPerOp is the server's instructions per op, counted by
	// callgrind (bench/instructions.sh), 0 when it does not run under it.
	instrPerOp float64
	detail     string // e.g. "evalsha 2.0×11.3µs"
}

// serverTime runs n ops of op alone on one worker (client has the hook h)
// between a CONFIG RESETSTAT and an INFO commandstats sent on ctl, a client
// of its own.
func serverTime(ctx context.Context, ctl *redis.Client, h *nameHook, op benchcmp.Op, n int) (serverSample, error) {
	if err := ctl.ConfigResetStat(ctx).Err(); err != nil {
		return serverSample{}, err
	}
	h.reset()
	cg, err := callgrindPID(ctx, ctl)
	if err != nil {
		return serverSample{}, err
	}
	if cg != "" {
		if err := exec.Command("callgrind_control", "-z", cg).Run(); err != nil {
			return serverSample{}, fmt.Errorf("callgrind_control -z: %w", err)
		}
	}
	for i := 0; i < n; i++ {
		if err := op(0); err != nil {
			return serverSample{}, err
		}
	}
	var instr float64
	if cg != "" {
		ir, err := callgrindInstructions(cg)
		if err != nil {
			return serverSample{}, err
		}
		instr = float64(ir) / float64(n)
	}
	stats, err := commandStats(ctx, ctl)
	if err != nil {
		return serverSample{}, err
	}
	h.mu.Lock()
	names := make([]string, 0, len(h.names))
	for name := range h.names {
		names = append(names, name)
	}
	sort.Strings(names)
	var total int64
	var parts []string
	for _, name := range names {
		s := stats[name]
		total += s.usec
		if s.calls > 0 {
			parts = append(parts, fmt.Sprintf("%s %.1f×%.1fµs", name, float64(s.calls)/float64(n), float64(s.usec)/float64(s.calls)))
		}
	}
	h.mu.Unlock()
	return serverSample{usecPerOp: float64(total) / float64(n), instrPerOp: instr, detail: strings.Join(parts, " + ")}, nil
}

// callgrindPID is the server's process ID when PEERS_CALLGRIND is set (the
// server runs under valgrind's callgrind, bench/instructions.sh), else "".
func callgrindPID(ctx context.Context, ctl *redis.Client) (string, error) {
	if os.Getenv("PEERS_CALLGRIND") == "" {
		return "", nil
	}
	info, err := ctl.Info(ctx, "server").Result()
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "process_id:"); ok {
			return v, nil
		}
	}
	return "", errors.New("INFO server has no process_id")
}

// callgrindInstructions is the instructions the server's main thread ran
// since callgrind's counters were last zeroed (callgrind_control -e: the
// line "Th 1  <count>").
func callgrindInstructions(pid string) (int64, error) {
	out, err := exec.Command("callgrind_control", "-e", pid).Output()
	if err != nil {
		return 0, fmt.Errorf("callgrind_control -e: %w", err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 3 && f[0] == "Th" && f[1] == "1" {
			return strconv.ParseInt(strings.ReplaceAll(f[2], ",", ""), 10, 64)
		}
	}
	return 0, fmt.Errorf("callgrind_control -e gave no count for thread 1: %q", out)
}

// cpuTime is this process's user+system CPU time so far: the client's side
// of every op (redis-server is another process).
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru) // RUSAGE_SELF into a valid struct cannot fail
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// allocs is what one op allocates, counted over n ops on one worker (every
// goroutine's allocations count, as in testing.AllocsPerRun: a contender
// that starts goroutines per op pays for them).
// The client CPU per op comes with it (including the GC those allocations
// cause, and whatever else the process does meanwhile, which is nothing).
func allocs(op benchcmp.Op, n int) (mallocs, bytes float64, cpu time.Duration, err error) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	c0 := cpuTime()
	for i := 0; i < n; i++ {
		if err := op(0); err != nil {
			return 0, 0, 0, err
		}
	}
	cpu = (cpuTime() - c0) / time.Duration(n)
	runtime.ReadMemStats(&after)
	return float64(after.Mallocs-before.Mallocs) / float64(n), float64(after.TotalAlloc-before.TotalAlloc) / float64(n), cpu, nil
}
