package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/internal/cli/runner"
	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// ChildEnv turns the test binary into a critical section: with it set,
// RunChild does the work and exits.
const ChildEnv = "LOCKCTL_CHAOS_CHILD"

// RunChild is the body of every lockctl-run holder's child: enter the
// resource, read the counter, write it back incremented after a pause, then
// a few more fenced writes, and leave. It writes with $LOCKCTL_FENCE and
// $LOCKCTL_TOKEN, as a real job would. A reader (CHAOS_MODE=shared) only
// reads, each time presenting its fence as `lockctl fence check --shared`
// does. With CHAOS_GATE set it waits inside, after its first fenced
// access, until the scenario opens its gate. It returns the exit status.
func RunChild() int {
	base := os.Getenv("CHAOS_RESOURCE")
	holder := os.Getenv("CHAOS_HOLDER")
	work, _ := time.ParseDuration(os.Getenv("CHAOS_WORK"))
	writes, _ := strconv.Atoi(os.Getenv("CHAOS_WRITES"))
	if writes < 1 {
		writes = 1
	}
	fence := os.Getenv("LOCKCTL_FENCE")
	token := os.Getenv("LOCKCTL_TOKEN")
	if pc, err := net.Dial("tcp", os.Getenv("CHAOS_PRESENCE")); err == nil {
		fmt.Fprintln(pc, holder)
		defer pc.Close()
	}
	c := &http.Client{Timeout: 10 * time.Second}
	get := func(path string, v url.Values) (string, int) {
		resp, err := c.Get(base + path + "?" + v.Encode())
		if err != nil {
			return "", 0
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b), resp.StatusCode
	}
	mode := os.Getenv("CHAOS_MODE")
	shared := mode == "shared"
	enter := url.Values{"holder": {holder}}
	if mode != "" {
		enter.Set("mode", mode)
		enter.Set("lockmode", os.Getenv("LOCKCTL_MODE"))
		enter.Set("waited_ms", os.Getenv("LOCKCTL_WAITED_MS"))
	}
	body, _ := get("/enter", enter)
	n, _ := strconv.Atoi(strings.TrimSpace(body))
	access := func() url.Values {
		v := url.Values{"holder": {holder}, "fence": {fence}, "token": {token}}
		if shared {
			v.Set("shared", "1")
		}
		return v
	}
	// The fence goes to the store first, so that a newer holder is known
	// there before an older one can write again.
	get("/write", access())
	if os.Getenv("CHAOS_GATE") != "" {
		for {
			if _, code := get("/hold", url.Values{"holder": {holder}}); code != http.StatusNoContent {
				break
			}
		}
	}
	for i := 0; i < writes; i++ {
		time.Sleep(work / time.Duration(writes))
		v := access()
		if i == 0 && !shared {
			v.Set("value", strconv.Itoa(n+1))
		}
		get("/write", v)
	}
	get("/leave", url.Values{"holder": {holder}})
	return 0
}

// Proc is a `lockctl ... run` holder process.
type Proc struct {
	ID     int
	Holder string
	Cmd    *exec.Cmd
	Start  time.Duration
	End    time.Duration
	Exit   int
	Stderr bytes.Buffer
	done   chan struct{}
}

// Done is closed when the process has exited and been recorded.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Wait waits for the process and returns its exit status.
func (p *Proc) Wait() int { <-p.done; return p.Exit }

// Signal sends sig to lockctl only.
func (p *Proc) Signal(sig syscall.Signal) error { return p.Cmd.Process.Signal(sig) }

// SignalGroup sends sig to lockctl's process group (lockctl alone: its
// child has a group of its own).
func (p *Proc) SignalGroup(sig syscall.Signal) error {
	return syscall.Kill(-p.Cmd.Process.Pid, sig)
}

// ProcSpec describes one lockctl run holder.
type ProcSpec struct {
	Global []string      // flags before "run": --url, --timeout, ...
	Name   string        // lock name
	Flags  []string      // run flags: --ttl, -n, --on-lost, ...
	Work   time.Duration // the child's critical section
	Writes int
	TTL    time.Duration // for the history's ghost bound
	// Mode is what the child is, whatever lock it runs under: "shared"
	// for a reader, "exclusive" for a writer, "" for a writer that does
	// not tell the store its lock's mode.
	Mode string
	// Gate: the child waits inside, after its first fenced access, until
	// the scenario calls Resource.OpenGate for it.
	Gate bool
	// Stderr, when set, is lockctl's stderr (a broken pipe, say) in place
	// of the buffer Proc.Stderr.
	Stderr *os.File
	// Bin, when set, runs in place of lockctl with the same arguments: a
	// stand-in holder for an unprotected variant.
	Bin string
	// Env is added to the process's environment.
	Env []string
}

// Spawn starts holder id as a lockctl run process; its operations are
// recorded when it exits.
func (e *Env) Spawn(id int, s ProcSpec) *Proc {
	holder := "p" + strconv.Itoa(id)
	args := []string{"run", s.Name}
	args = append(args, s.Global...)
	args = append(args, s.Flags...)
	report := filepath.Join(e.dir, holder+".json")
	if !hasFlag(s.Flags, "--report-file") {
		args = append(args, "--report-file", report)
	}
	args = append(args, "--", e.TestBin)
	bin := e.Lockctl
	if s.Bin != "" {
		bin = s.Bin
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(append(os.Environ(), s.Env...), ChildEnv+"=1", "CHAOS_RESOURCE="+e.Res.URL(), "CHAOS_PRESENCE="+e.Res.PresenceAddr(), "CHAOS_HOLDER="+holder,
		"CHAOS_WORK="+s.Work.String(), "CHAOS_WRITES="+strconv.Itoa(s.Writes), "CHAOS_MODE="+s.Mode)
	if s.Gate {
		cmd.Env = append(cmd.Env, "CHAOS_GATE=1")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	p := &Proc{ID: id, Holder: holder, Cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &p.Stderr
	if s.Stderr != nil {
		cmd.Stderr = s.Stderr
	}
	p.Start = e.Rec.Now()
	if err := cmd.Start(); err != nil {
		e.T.Fatalf("start lockctl: %v", err)
	}
	e.track(p)
	go func() {
		err := cmd.Wait()
		p.End = e.Rec.Now()
		p.Exit = exitCode(err)
		e.recordProc(p, s)
		e.readReport(report)
		close(p.done)
	}()
	return p
}

func exitCode(err error) int {
	if err == nil {
		return 0
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return 128 + int(ws.Signal())
		}
		return ee.ExitCode()
	}
	return -1
}

// recordProc turns a finished process into history: its child entering the
// resource proves the grant, the child leaving (or dying) ends its belief.
func (e *Env) recordProc(p *Proc, s ProcSpec) {
	entered := e.Res.Entered(p.Holder)
	// The holder believes in its lease while its child is inside: until
	// the child left or died (the presence connection tells), else now.
	last := e.Res.LeftAt(p.Holder)
	if last < 0 {
		last = p.End
	}
	// lockctl never exits while its child lives: the child is out now.
	e.Res.Leave(p.Holder)
	if entered >= 0 {
		e.Rec.Add(Op{Lock: s.Name, Holder: p.ID, Kind: Acquire, Result: OK, Call: p.Start, Return: entered})
		kind := Release
		if p.Exit == 76 || p.Exit == 69 || p.Exit >= 128 {
			kind = Lost
		}
		e.Rec.Add(Op{Lock: s.Name, Holder: p.ID, Kind: kind, Result: OK, Call: last, Return: p.End, Ghost: s.TTL})
		return
	}
	switch p.Exit {
	case 75:
		e.Rec.Add(Op{Lock: s.Name, Holder: p.ID, Kind: Acquire, Result: Busy, Call: p.Start, Return: p.End})
	case 69, 124, 129, 130, 143, 137:
		e.Rec.Add(Op{Lock: s.Name, Holder: p.ID, Kind: Acquire, Result: Unknown, Call: p.Start, Return: p.End, Ghost: s.TTL})
	default:
		e.Rec.Add(Op{Lock: s.Name, Holder: p.ID, Kind: Acquire, Result: Fail, Call: p.Start, Return: p.End})
	}
}

// Client is an in-process pkg/lock holder.
type Client struct {
	ID     int
	Locker *lock.Locker
	Rng    *rand.Rand
	TTL    time.Duration
	Wait   time.Duration
	Work   time.Duration
	Writes int
	// Unprotected: no watchdog and a plain DEL release; the holder works as
	// long as it likes, as a naive SET NX PX client does.
	Unprotected bool
	Raw         redis.UniversalClient // for the unprotected variant
	Name        string

	Stats ClientStats
}

// ClientStats count one in-process holder's lease events.
type ClientStats struct {
	Renewals   int64
	Losses     int
	Detections []time.Duration // from the local deadline to the holder's notice
}

// Cycle is one acquire, critical section, release of an in-process holder.
func (c *Client) Cycle(ctx context.Context, e *Env) {
	holder := "c" + strconv.Itoa(c.ID)
	id := 1000 + c.ID
	if c.Unprotected {
		c.unprotectedCycle(ctx, e, holder, id)
		return
	}
	call := e.Rec.Now()
	lease, err := c.Locker.Acquire(ctx, c.Name, c.TTL, &lock.AcquireOptions{Wait: c.Wait, Owner: holder})
	ret := e.Rec.Now()
	switch {
	case err == nil:
		e.Rec.Add(Op{Lock: c.Name, Holder: id, Kind: Acquire, Result: OK, Call: call, Return: ret, Fence: lease.Fence()})
	case errors.Is(err, lock.ErrNotObtained):
		e.Rec.Add(Op{Lock: c.Name, Holder: id, Kind: Acquire, Result: Busy, Call: call, Return: ret})
		return
	default:
		e.Rec.Add(Op{Lock: c.Name, Holder: id, Kind: Acquire, Result: Unknown, Call: call, Return: ret, Ghost: c.TTL})
		return
	}
	wd, err := runner.Watch(ctx, lease, nil)
	if err != nil {
		e.T.Errorf("watchdog: %v", err)
		return
	}
	defer wd.Stop()
	n := e.Res.Enter(holder)
	e.Res.Write(holder, lease.Token(), lease.Fence(), 0, false)
	last := e.Rec.Now()
	lost := false
	for i := 0; i < c.Writes; i++ {
		select {
		case <-time.After(c.Work / time.Duration(c.Writes)):
		case <-wd.Lost(): //nolint:errcheck // the loss is the event; its LostError's detail is not used
			lost = true
		}
		if lost || !wd.Held() {
			lost = true
			break
		}
		last = e.Rec.Now()
		e.Res.Write(holder, lease.Token(), lease.Fence(), n+1, i == 0)
	}
	c.Stats.Renewals += wd.Renewals()
	if lost {
		notice := e.Rec.Now()
		e.Res.Leave(holder)
		c.Stats.Losses++
		c.Stats.Detections = append(c.Stats.Detections, time.Since(wd.Deadline()))
		e.Rec.Add(Op{Lock: c.Name, Holder: id, Kind: Lost, Result: OK, Call: last, Return: notice, Ghost: c.TTL})
		return
	}
	e.Res.Leave(holder)
	wd.Stop()
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
	err = lease.Release(rctx)
	cancel()
	kind := Release
	if err != nil {
		kind = Lost
	}
	e.Rec.Add(Op{Lock: c.Name, Holder: id, Kind: kind, Result: OK, Call: last, Return: e.Rec.Now(), Ghost: c.TTL})
}

// unprotectedCycle is SET NX PX, work without renewal, DEL.
func (c *Client) unprotectedCycle(ctx context.Context, e *Env, holder string, id int) {
	key := "lock:" + c.Name
	call := e.Rec.Now()
	deadline := time.Now().Add(c.Wait)
	var ok bool
	var err error
	for {
		ok, err = c.Raw.SetNX(ctx, key, holder, c.TTL).Result()
		if ok || err != nil || !time.Now().Before(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	ret := e.Rec.Now()
	if err != nil {
		e.Rec.Add(Op{Lock: c.Name, Holder: id, Kind: Acquire, Result: Unknown, Call: call, Return: ret, Ghost: c.TTL})
		return
	}
	if !ok {
		e.Rec.Add(Op{Lock: c.Name, Holder: id, Kind: Acquire, Result: Busy, Call: call, Return: ret})
		return
	}
	e.Rec.Add(Op{Lock: c.Name, Holder: id, Kind: Acquire, Result: OK, Call: call, Return: ret})
	// A fence taken by hand, as a careful client without lockctl would.
	fence, _ := c.Raw.Incr(ctx, "chaos:unprotected:fence:"+c.Name).Result()
	n := e.Res.Enter(holder)
	e.Res.Write(holder, holder, fence, 0, false)
	last := e.Rec.Now()
	for i := 0; i < c.Writes; i++ {
		time.Sleep(c.Work / time.Duration(c.Writes))
		last = e.Rec.Now()
		e.Res.Write(holder, holder, fence, n+1, i == 0)
	}
	e.Res.Leave(holder)
	c.Raw.Del(context.WithoutCancel(ctx), key)
	e.Rec.Add(Op{Lock: c.Name, Holder: id, Kind: Release, Result: OK, Call: last, Return: e.Rec.Now()})
}

func (p *Proc) String() string {
	return fmt.Sprintf("%s exit %d [%v..%v] %s", p.Holder, p.Exit, p.Start, p.End, strings.TrimSpace(p.Stderr.String()))
}

// Children are the pids of lockctl's children (its CMD), from /proc.
func (p *Proc) Children() []int {
	var out []int
	tasks, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", p.Cmd.Process.Pid))
	for _, t := range tasks {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/children", p.Cmd.Process.Pid, t.Name()))
		for _, f := range strings.Fields(string(b)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out
}

// GroupGone reports whether process group pgid has no live member left
// (zombies nobody reaped yet do not count).
func GroupGone(pgid int) bool {
	ents, _ := os.ReadDir("/proc")
	for _, d := range ents {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		// state ppid pgrp ...: the fields after the command name.
		f, ok := identity.StatFields("/proc", pid)
		if !ok || len(f) < 3 || f[0] == "Z" {
			continue
		}
		if g, _ := strconv.Atoi(f[2]); g == pgid {
			return false
		}
	}
	return true
}

// isGuard reports whether pid is lockctl's guard process (internal/cli/support/child):
// a child of lockctl that is not CMD, a shell or lockctl's own binary.
func isGuard(pid int) bool {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	return strings.Contains(string(b), "__lockctl-guard") || strings.Contains(string(b), "read p || exit 0")
}

// Commands is the process groups of CMD: those of Children without
// lockctl's helper, which leads CMD's group.
func (p *Proc) Commands() []int {
	var out []int
	for _, k := range p.Children() {
		if g := pgrpOf(k); !isGuard(k) && g > 0 && !slices.Contains(out, g) {
			out = append(out, g)
		}
	}
	return out
}

// pgrpOf is pid's process group, or 0 when pid is gone.
func pgrpOf(pid int) int {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 3 {
		return 0
	}
	g, _ := strconv.Atoi(f[2])
	return g
}

// Alive counts the process groups among pgids that have a live member.
func Alive(pgids []int) int {
	n := 0
	for _, g := range pgids {
		if !GroupGone(g) {
			n++
		}
	}
	return n
}

// SignalChildren sends sig to the process group of each of lockctl's
// children (CMD's group, which lockctl's helper leads).
func (p *Proc) SignalChildren(sig syscall.Signal) int {
	kids := p.Children()
	var groups []int
	for _, k := range kids {
		if g := pgrpOf(k); g > 0 && !slices.Contains(groups, g) {
			groups = append(groups, g)
			_ = syscall.Kill(-g, sig) // a child that exited meanwhile is no error
		}
	}
	return len(kids)
}

// WaitEntered waits until holder's child entered the resource.
func (e *Env) WaitEntered(holder string, limit time.Duration) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		if e.Res.Entered(holder) >= 0 {
			return true
		}
		time.Sleep(5 * time.Millisecond)
	}
	return false
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == flag || strings.HasPrefix(a, flag+"=") {
			return true
		}
	}
	return false
}

// readReport adds a finished run's renewals (from its --report-file) to
// the scenario's count.
func (e *Env) readReport(path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		return
	}
	var rep struct {
		Renewals int64 `json:"renewals"`
	}
	if json.Unmarshal(b, &rep) == nil {
		e.mu.Lock()
		e.renewals += rep.Renewals
		e.mu.Unlock()
	}
}
