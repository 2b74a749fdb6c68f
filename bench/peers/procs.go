package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Contention across processes: the same loop as contentionWorkload, but
// every worker is a process of its own (this binary, re-run with -worker),
// so lockctl's in-process waiter queue plays no part and every hand-off goes
// through Redis. The ceiling is flock(2) on one file: the kernel's lock
// between processes.

// procWaiters are the contenders that work between processes.
func procWaiters() []waiter {
	ws := waiters()
	ws = slices.DeleteFunc(ws, func(w waiter) bool {
		return w.name == "sync.Mutex" || w.name == "lockctl --fifo, a Locker per worker"
	})
	return append(ws, waiter{"flock(2)", func(*redis.Client) lockFunc {
		path := filepath.Join(os.TempDir(), "lockctl-peers.flock")
		return func(int) (func() error, error) {
			f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
			if err != nil {
				return nil, err
			}
			if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
				_ = f.Close() // err, the flock's, is the one to report
				return nil, err
			}
			return f.Close, nil
		}
	}})
}

// workerMain is one worker process: connect, say "ready", wait for a line
// on stdin, take the lock n times, then print one wait in ns per line and a
// last line "done START_NS END_NS" (wall clock, comparable across processes
// on one machine).
func workerMain(addr, name string, n int) error {
	var lf lockFunc
	c := newClient(addr, nil)
	defer c.Close()
	for _, w := range procWaiters() {
		if w.name == name {
			lf = w.make(c)
		}
	}
	if lf == nil {
		return fmt.Errorf("no contender %q", name)
	}
	if err := c.Ping(context.Background()).Err(); err != nil {
		return err
	}
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		return err
	}
	waits := make([]time.Duration, 0, n)
	start := time.Now()
	for i := 0; i < n; i++ {
		t := time.Now()
		unlock, err := lf(0)
		if err != nil {
			return err
		}
		waits = append(waits, time.Since(t))
		time.Sleep(time.Millisecond)
		if err := unlock(); err != nil {
			return err
		}
	}
	end := time.Now()
	w := bufio.NewWriter(os.Stdout)
	for _, d := range waits {
		fmt.Fprintln(w, int64(d))
	}
	fmt.Fprintln(w, "done", start.UnixNano(), end.UnixNano())
	return w.Flush()
}

// procRound starts workers processes for one contender, releases them at
// once and collects their waits and the span from the first start to the
// last end.
func procRound(addr, name string, workers, each int) (contendResult, error) {
	self, err := os.Executable()
	if err != nil {
		return contendResult{}, err
	}
	type proc struct {
		cmd *exec.Cmd
		in  *os.File
		out *bufio.Scanner
	}
	ps := make([]proc, workers)
	for i := range ps {
		cmd := exec.Command(self, "-worker", name, "-addr", addr, "-n", strconv.Itoa(each))
		cmd.Stderr = os.Stderr
		r, w, err := os.Pipe()
		if err != nil {
			return contendResult{}, err
		}
		cmd.Stdin = r
		out, err := cmd.StdoutPipe()
		if err != nil {
			return contendResult{}, err
		}
		if err := cmd.Start(); err != nil {
			return contendResult{}, err
		}
		_ = r.Close() // the worker has its own copy of the read end
		ps[i] = proc{cmd, w, bufio.NewScanner(out)}
		if !ps[i].out.Scan() || ps[i].out.Text() != "ready" {
			return contendResult{}, fmt.Errorf("worker %d of %s did not start", i, name)
		}
	}
	for i, p := range ps {
		if _, err := p.in.WriteString("go\n"); err != nil {
			return contendResult{}, fmt.Errorf("worker %d of %s: %w", i, name, err)
		}
	}
	res := contendResult{counts: make([]int, workers)}
	var first, last int64
	for i, p := range ps {
		for p.out.Scan() {
			line := p.out.Text()
			if rest, ok := strings.CutPrefix(line, "done "); ok {
				f := strings.Fields(rest)
				s, _ := strconv.ParseInt(f[0], 10, 64)
				e, _ := strconv.ParseInt(f[1], 10, 64)
				if first == 0 || s < first {
					first = s
				}
				last = max(last, e)
				continue
			}
			d, _ := strconv.ParseInt(line, 10, 64)
			res.waits = append(res.waits, time.Duration(d))
			res.counts[i]++
		}
		_ = p.in.Close() // the worker has read its one line
		if err := p.cmd.Wait(); err != nil {
			return res, fmt.Errorf("worker %d of %s: %w", i, name, err)
		}
	}
	res.elapsed = time.Duration(last - first)
	return res, nil
}

func procsWorkload(addr string, rounds int) error {
	const workers, each = 16, 20
	ws := procWaiters()
	res := make([][]contendResult, len(ws))
	for r := 0; r < rounds; r++ {
		for k := range ws {
			i := (k + r) % len(ws)
			cr, err := procRound(addr, ws[i].name, workers, each)
			if err != nil {
				return err
			}
			res[i] = append(res[i], cr)
		}
	}
	fmt.Printf("\n### Contention across processes: %d processes, one key, 1ms hold (%d rounds of %d acquisitions each, interleaved)\n\n", workers, rounds, each)
	printContention(ws, res, workers, len(ws)-1, "flock(2)", false)
	return nil
}
