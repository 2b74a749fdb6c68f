package simulate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// epoch is the embedded server's clock at t=0, so TIME inside scripts (and
// the acquired_ms lockctl stores) is the same on every run.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// errPartition and errDown are faults the scenarios inject: the command is
// never sent, as when a network partition or a dead server swallows it.
var (
	errPartition = errors.New("i/o timeout (network partition: the command never reached Redis)")
	errDown      = errors.New("connection refused (the server is down)")
)

type actorKey struct{}

// node is one Redis server of a scenario: the lock server, a replica, the
// protected store. Embedded, each node is its own miniredis; on a real
// server, nodes are key prefixes of the one server.
type node struct {
	name   string
	prefix string // "" embedded; "lockctl:sim:<run>:<node>:" on a real server
	rdb    *redis.Client
	mr     *miniredis.Miniredis
	down   bool
	skew   time.Duration // how far this server's clock runs ahead (embedded only)
}

// key is the real key for a logical key name on this node.
func (n *node) key(name string) string { return n.prefix + name }

type lease struct {
	since, until time.Duration
	believes     bool
}

type interval struct {
	actor      string
	start, end time.Duration
}

type write struct {
	actor      string
	at         time.Duration
	accepted   bool
	leaseValid bool
}

// heldLease is a lease pkg/lock granted an actor, and the Locker that did.
type heldLease struct {
	lease *lock.Lease
	by    *lock.Locker
}

type env struct {
	real   bool
	second time.Duration
	run    string // random id of a real-server run; "" embedded
	base   *redis.Options
	nodes  map[string]*node
	emit   func(Event) error

	lockOn  string // node locks are taken on
	lockers map[string]*lock.Locker
	// held is each actor's lease as pkg/lock granted it, with the Locker
	// that did: its renewals and release go through them.
	held map[string]heldLease

	now       time.Duration
	start     time.Time // wall time of t=0 on a real server
	action    string
	stepCount *int
	pending   *Event
	err       error

	partitioned map[string]bool
	leases      map[string]*lease
	intervals   []interval
	writes      []write
	admitted    []time.Duration // calls a rate limiter let through

	waiters []*waiter
	mute    bool // stopping waiters: what they send is not part of the story

	cut  map[string]bool // "actor/node": actor cannot reach that node
	opts *Options        // the knobs; nil for the defaults

	// Redlock sends to every master at once: while par is set, the
	// recorder collects each master's commands, and endParallel records
	// them in a fixed order (first command of each master in master order,
	// then the second ...), so the timeline is the same on every run.
	parMu  sync.Mutex
	par    []parEvent
	inPar  bool
	parSeq map[string]int
	rl     *lock.Locker // the Redlock over the masters, once started
}

type parEvent struct {
	seq  int
	node string
	ev   Event
}

func newEnv(ctx context.Context, base *redis.Options, second time.Duration, emit func(Event) error) (*env, error) {
	e := &env{
		real:        base != nil,
		second:      second,
		base:        base,
		nodes:       map[string]*node{},
		emit:        emit,
		partitioned: map[string]bool{},
		leases:      map[string]*lease{},
		cut:         map[string]bool{},
	}
	if e.real {
		b := make([]byte, 4)
		if _, err := rand.Read(b); err != nil {
			return nil, err
		}
		e.run = hex.EncodeToString(b)
	}
	return e, nil
}

// node returns the named node, starting it on first use.
func (e *env) node(name string) *node {
	if n, ok := e.nodes[name]; ok {
		return n
	}
	n := &node{name: name}
	var opts redis.Options
	if e.real {
		opts = *e.base
		n.prefix = "lockctl:sim:" + e.run + ":" + name + ":"
	} else {
		n.mr = miniredis.NewMiniRedis()
		if err := n.mr.Start(); err != nil {
			e.fail(fmt.Errorf("simulate: embedded redis: %w", err))
		}
		n.mr.Seed(1)
		n.mr.ClockTTL(true)
		n.mr.SetTime(epoch.Add(e.now))
		opts = redis.Options{Addr: n.mr.Addr()}
	}
	// RESP2 and no CLIENT SETINFO: the same replies from miniredis and from
	// every server version, and no handshake commands in the timeline.
	opts.Protocol = 2
	opts.DisableIdentity = true
	opts.MaxRetries = -1
	n.rdb = redis.NewClient(&opts)
	n.rdb.AddHook(&recorder{e: e, n: n})
	e.nodes[name] = n
	return n
}

// close deletes every key a real-server run created and stops embedded servers.
func (e *env) close() error {
	e.flush()
	var first error
	names := make([]string, 0, len(e.nodes))
	for k := range e.nodes {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, name := range names {
		n := e.nodes[name]
		if e.real {
			if err := e.cleanup(n); err != nil && first == nil {
				first = fmt.Errorf("simulate: cleaning up keys *%s*: %w", e.run, err)
			}
		}
		_ = n.rdb.Close() // the run is over: nothing is left to send on it
		if n.mr != nil {
			n.mr.Close()
		}
	}
	return first
}

// cleanup removes every key containing the run id: the node's own keys and
// the auxiliary keys (fence counters, fence records) whose names embed them.
func (e *env) cleanup(n *node) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var cursor uint64
	for {
		keys, next, err := n.rdb.Scan(ctx, cursor, "*lockctl:sim:"+e.run+":"+n.name+":*", 500).Result()
		if err != nil {
			return err
		}
		if len(keys) > 0 {
			if err := n.rdb.Unlink(ctx, keys...).Err(); err != nil {
				return err
			}
		}
		if cursor = next; cursor == 0 {
			return nil
		}
	}
}

func (e *env) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *env) play(ctx context.Context, run func(context.Context, *env) Verdict) (Verdict, error) {
	// Start the servers and load the scripts before t=0, so that on a
	// real server no setup time eats into the timeline.
	e.locker(e.node("redis"))
	e.locker(e.node("store"))
	v := run(ctx, e)
	e.stopWaiters()
	e.flush()
	if e.err == nil {
		e.err = ctx.Err()
	}
	v.OverlapMS = int64(e.overlap() / time.Millisecond)
	return v, e.err
}

// at moves the clock to simulated time t: embedded servers jump there (their
// TTLs run on that clock); on a real server it sleeps until the matching
// wall time. The clock never goes back.
func (e *env) at(ctx context.Context, t time.Duration) {
	if t < e.now || e.err != nil {
		return
	}
	e.flush()
	e.now = t
	if !e.real {
		for _, n := range e.nodes {
			n.mr.SetTime(epoch.Add(t + n.skew))
		}
		return
	}
	if e.start.IsZero() {
		e.start = time.Now()
	}
	wait := time.Until(e.start.Add(e.wall(t)))
	if wait <= 0 {
		return
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-ctx.Done():
		e.fail(ctx.Err())
	case <-timer.C:
	}
}

// wall is the wall time a simulated duration takes on a real server.
func (e *env) wall(d time.Duration) time.Duration {
	if !e.real {
		return d
	}
	return time.Duration(int64(d) * int64(e.second) / int64(time.Second))
}

// ms is a simulated duration as the milliseconds sent to the server.
func (e *env) ms(d time.Duration) int64 { return int64(e.wall(d) / time.Millisecond) }

// as tags ctx with the actor whose commands it carries.
func (e *env) as(ctx context.Context, actor string) context.Context {
	if e.real && e.start.IsZero() {
		e.start = time.Now()
	}
	return context.WithValue(ctx, actorKey{}, actor)
}

// do runs one step: fn's commands are recorded under actor and action. A
// step that sends nothing is recorded as narration.
func (e *env) do(ctx context.Context, actor, action string, fn func(ctx context.Context)) {
	if e.err != nil {
		return
	}
	e.flush()
	e.action = action
	n := 0
	e.stepCount = &n
	fn(e.as(ctx, actor))
	e.stepCount = nil
	if n == 0 {
		e.record(Event{Actor: actor, Action: action})
	}
}

// say narrates something that sends no command.
func (e *env) say(actor, action string) {
	if e.err != nil {
		return
	}
	e.record(Event{Actor: actor, Action: action})
}

// note explains the last event in plain words.
func (e *env) note(s string) {
	if e.pending != nil {
		if e.pending.Note != "" {
			e.pending.Note += " "
		}
		e.pending.Note += s
	}
}

func (e *env) record(ev Event) {
	e.flush()
	ev.TMS = int64(e.now / time.Millisecond)
	e.pending = &ev
}

// flush hands the pending event on, with the holders as they stand after
// its step.
func (e *env) flush() {
	if e.pending == nil {
		return
	}
	ev := *e.pending
	e.pending = nil
	t := time.Duration(ev.TMS) * time.Millisecond
	ev.Holders = e.holders(t)
	for _, a := range e.actors() {
		l := e.leases[a]
		if l.believes && t >= l.until {
			ev.stale = append(ev.stale, a)
		}
	}
	if err := e.emit(ev); err != nil {
		e.fail(err)
	}
}

func (e *env) actors() []string {
	out := make([]string, 0, len(e.leases))
	for a := range e.leases {
		out = append(out, a)
	}
	sort.Strings(out)
	return out
}

// holders are the actors whose lease is unexpired and not given back at t.
func (e *env) holders(t time.Duration) []string {
	out := []string{}
	for _, a := range e.actors() {
		l := e.leases[a]
		if l.believes && l.since <= t && t < l.until {
			out = append(out, a)
		}
	}
	return out
}

// grant records that actor was granted a lease of ttl now.
func (e *env) grant(actor string, ttl time.Duration) {
	e.drop(actor)
	e.leases[actor] = &lease{since: e.now, until: e.now + ttl, believes: true}
}

// extend records a successful renewal of ttl sent now.
func (e *env) extend(actor string, ttl time.Duration) {
	if l := e.leases[actor]; l != nil && l.believes {
		if e.now >= l.until {
			// The lease had run out: what the renewal set (on a key
			// that may be someone else's) is a new holding, not the
			// old one going on.
			if l.until > l.since {
				e.intervals = append(e.intervals, interval{actor, l.since, l.until})
			}
			l.since = e.now
		}
		l.until = e.now + ttl
	}
}

// drop records that actor stopped believing it holds the lock: it released
// it, crashed, or was told it lost it.
func (e *env) drop(actor string) {
	l := e.leases[actor]
	if l == nil || !l.believes {
		return
	}
	l.believes = false
	end := l.until
	if e.now < end {
		end = e.now
	}
	if end > l.since {
		e.intervals = append(e.intervals, interval{actor, l.since, end})
	}
}

func (e *env) leaseValid(actor string) bool {
	l := e.leases[actor]
	return l != nil && l.believes && l.since <= e.now && e.now < l.until
}

// wrote records a write to the protected resource.
func (e *env) wrote(actor string, accepted bool) {
	e.writes = append(e.writes, write{actor: actor, at: e.now, accepted: accepted, leaseValid: e.leaseValid(actor)})
	if e.pending != nil {
		e.pending.lanes = append(e.pending.lanes, "store")
	}
}

// staleWrites are writes the resource accepted from an actor whose lease had run out.
func (e *env) staleWrites() []write {
	var out []write
	for _, w := range e.writes {
		if w.accepted && !w.leaseValid {
			out = append(out, w)
		}
	}
	return out
}

func (e *env) allIntervals() []interval {
	ivs := append([]interval(nil), e.intervals...)
	for _, a := range e.actors() {
		if l := e.leases[a]; l.believes && l.until > l.since {
			ivs = append(ivs, interval{a, l.since, l.until})
		}
	}
	return ivs
}

// overlap is how long two or more actors held unexpired leases at once.
func (e *env) overlap() time.Duration {
	d, _ := e.overlapWho()
	return d
}

// overlapWho also names the actors who overlapped.
func (e *env) overlapWho() (time.Duration, []string) { return overlapOf(e.allIntervals()) }

// overlapOf is how long two or more of ivs' actors held at once, and who.
func overlapOf(ivs []interval) (time.Duration, []string) {
	var pts []time.Duration
	for _, iv := range ivs {
		pts = append(pts, iv.start, iv.end)
	}
	sort.Slice(pts, func(i, j int) bool { return pts[i] < pts[j] })
	var total time.Duration
	who := map[string]bool{}
	for i := 0; i+1 < len(pts); i++ {
		a, b := pts[i], pts[i+1]
		if a == b {
			continue
		}
		var in []string
		for _, iv := range ivs {
			if iv.start <= a && b <= iv.end {
				in = append(in, iv.actor)
			}
		}
		if len(in) >= 2 {
			total += b - a
			for _, x := range in {
				who[x] = true
			}
		}
	}
	var names []string
	for x := range who {
		names = append(names, x)
	}
	sort.Strings(names)
	return total, names
}

// recorder is the go-redis hook that writes every command a scenario sends
// into the timeline, and injects partitions and dead servers.
type recorder struct {
	e *env
	n *node
}

func (r *recorder) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		return next(ctx, network, addr)
	}
}

func (r *recorder) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		actor, _ := ctx.Value(actorKey{}).(string)
		if actor == "" || handshake[cmd.Name()] || r.e.mute {
			return next(ctx, cmd) // setup, cleanup, connection handshakes: not part of the story
		}
		var err error
		if r.e.inPar {
			r.e.parMu.Lock()
			defer r.e.parMu.Unlock()
		}
		switch {
		case r.n.down:
			err = errDown
			cmd.SetErr(err)
		case (r.e.partitioned[actor] || r.e.cut[actor+"/"+r.n.name]) && r.n.name != "store":
			err = errPartition
			cmd.SetErr(err)
		default:
			err = next(ctx, cmd)
			if err != nil && err != redis.Nil && !isServerError(err) {
				r.e.fail(fmt.Errorf("simulate: %s: %w", strings.ToUpper(cmd.Name()), err))
			}
		}
		if r.e.inPar {
			ev := Event{Actor: actor, Action: r.e.action, Node: r.n.name, Command: r.e.showCommand(r.n, cmd.Args()), Reply: r.e.showReply(r.n, cmd)}
			r.e.par = append(r.e.par, parEvent{seq: r.e.parSeq[r.n.name], node: r.n.name, ev: ev})
			r.e.parSeq[r.n.name]++
			return err
		}
		r.e.record(Event{Actor: actor, Action: r.e.action, Command: r.e.showCommand(r.n, cmd.Args()), Reply: r.e.showReply(r.n, cmd)})
		if r.n.name == "store" {
			r.e.pending.lanes = append(r.e.pending.lanes, "store")
		}
		if r.e.stepCount != nil {
			*r.e.stepCount++
		}
		return err
	}
}

func (r *recorder) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		actor, _ := ctx.Value(actorKey{}).(string)
		if actor == "" || r.e.mute {
			return next(ctx, cmds)
		}
		// Pipelines are recorded command by command; the simulated
		// faults apply to the whole batch.
		var err error
		switch {
		case r.n.down:
			err = errDown
		case r.e.partitioned[actor] && r.n.name != "store":
			err = errPartition
		}
		if err != nil {
			for _, c := range cmds {
				c.SetErr(err)
			}
		} else if err = next(ctx, cmds); err != nil && err != redis.Nil && !isServerError(err) {
			r.e.fail(fmt.Errorf("simulate: pipeline: %w", err))
		}
		for _, c := range cmds {
			r.e.record(Event{Actor: actor, Action: r.e.action, Command: r.e.showCommand(r.n, c.Args()), Reply: r.e.showReply(r.n, c)})
			if r.e.stepCount != nil {
				*r.e.stepCount++
			}
		}
		return err
	}
}

// handshake commands go-redis sends on each new connection.
var handshake = map[string]bool{"hello": true, "auth": true, "select": true, "client": true, "readonly": true}

func isServerError(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

// parallel runs fn, whose commands go to several servers at once (a
// Redlock call), and records them in a fixed order: by their rank among
// their server's commands, then by server name.
func (e *env) parallel(fn func()) {
	e.flush()
	e.par, e.parSeq, e.inPar = nil, map[string]int{}, true
	fn()
	e.parMu.Lock()
	evs := e.par
	e.par, e.inPar = nil, false
	e.parMu.Unlock()
	sort.SliceStable(evs, func(i, j int) bool {
		if evs[i].seq != evs[j].seq {
			return evs[i].seq < evs[j].seq
		}
		return evs[i].node < evs[j].node
	})
	for _, p := range evs {
		e.record(p.ev)
		if e.stepCount != nil {
			*e.stepCount++
		}
	}
}

// knob returns the knob's value, or def when it was not given.
func knob(v, def time.Duration) time.Duration {
	if v != 0 {
		return v
	}
	return def
}

func (e *env) ttlOr(def time.Duration) time.Duration {
	if e.opts == nil {
		return def
	}
	return knob(e.opts.TTL, def)
}

func (e *env) pauseOr(def time.Duration) time.Duration {
	if e.opts == nil {
		return def
	}
	return knob(e.opts.Pause, def)
}

func (e *env) jobOr(def time.Duration) time.Duration {
	if e.opts == nil {
		return def
	}
	return knob(e.opts.Job, def)
}
