package lock_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// pipelineLog records the commands of every pipeline, and fails the next
// one with a closed connection when asked, as a Sentinel client's pipeline
// fails when the client drops its connections to a demoted master.
type pipelineLog struct {
	fail  atomic.Bool
	mu    sync.Mutex
	names [][]string
}

func (h *pipelineLog) DialHook(next redis.DialHook) redis.DialHook          { return next }
func (h *pipelineLog) ProcessHook(next redis.ProcessHook) redis.ProcessHook { return next }
func (h *pipelineLog) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		var names []string
		for _, c := range cmds {
			names = append(names, c.Name())
		}
		h.mu.Lock()
		h.names = append(h.names, names)
		h.mu.Unlock()
		if h.fail.CompareAndSwap(true, false) {
			err := &net.OpError{Op: "read", Net: "tcp", Err: net.ErrClosed}
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}

func (h *pipelineLog) since(n int) [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]string(nil), h.names[n:]...)
}

func (h *pipelineLog) len() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.names)
}

// With WaitReplicas, a write pipelines WAIT after its script, and a
// NOSCRIPT (a promoted replica starts with an empty script cache) then
// costs a whole WAIT timeout before the EVAL retry waits again: a renewal
// right after a failover took two WAIT timeouts and could outlast the
// lease. After a connection error, the next write sends the script's
// source at once: one pipeline, one WAIT.
func TestWriteAfterConnectionErrorSendsScriptSource(t *testing.T) {
	c := newClient(t)
	h := &pipelineLog{}
	c.AddHook(h)
	plain := lock.New(c, nil)
	// No replica: every WAIT times out (20ms) with 0 acknowledgements.
	waiting := lock.New(c, &lock.Options{WaitReplicas: 1, WaitReplicasTimeout: 20 * time.Millisecond})
	name := uniqueName(t)
	lease, err := plain.Acquire(context.Background(), name, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	renew := func() error {
		_, err := renewToken(context.Background(), waiting, name, lease.Token(), 10*time.Second)
		return err
	}
	if err := renew(); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("renew without replicas: %v, want ErrUnavailable", err)
	}
	h.fail.Store(true)
	if err := renew(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("renew on a closed connection: %v, want net.ErrClosed", err)
	}
	redisDo(t, c, "SCRIPT", "FLUSH")
	n := h.len()
	if err := renew(); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("renew after the failover: %v, want ErrUnavailable", err)
	}
	got := h.since(n)
	if len(got) != 1 || len(got[0]) != 2 || got[0][0] != "eval" || got[0][1] != "wait" {
		t.Fatalf("pipelines after the connection error: %v; want one [eval wait] (the script's source, no NOSCRIPT round)", got)
	}
	// Once the server has run it, the SHA is enough again.
	n = h.len()
	if err := renew(); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatal(err)
	}
	if got := h.since(n); len(got) != 1 || !strings.EqualFold(got[0][0], "evalsha") {
		t.Fatalf("pipelines after the script ran: %v; want one [evalsha wait]", got)
	}
}

// A waiter whose grant too few replicas acknowledged (the replica stalled,
// as one resyncing after a failover is) gets the grant back and tries again
// within RetryFor, instead of ending its wait at the first shortfall.
func TestWaiterRetriesAReplicationShortfall(t *testing.T) {
	m := redistest.StartTest(t, nil)
	r, err := redistest.StartReplica(m)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	c := redis.NewClient(&redis.Options{Addr: m.Addr})
	t.Cleanup(func() { c.Close() })
	l := lock.New(c, &lock.Options{WaitReplicas: 1, WaitReplicasTimeout: 100 * time.Millisecond})
	name := uniqueName(t)

	// The replica stops acknowledging.
	if err := r.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	resumed := false
	t.Cleanup(func() {
		if !resumed {
			if err := r.Signal(syscall.SIGCONT); err != nil {
				t.Error(err)
			}
		}
	})
	// Without a wait the shortfall ends the acquire at once.
	if _, err := l.Acquire(ctx, name, 5*time.Second, nil); !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("-n with a stalled replica: %v, want ErrUnavailable", err)
	}
	cont := make(chan error, 1)
	go func() {
		time.Sleep(700 * time.Millisecond)
		cont <- r.Signal(syscall.SIGCONT)
	}()
	resumed = true
	lease, err := l.Acquire(ctx, name, 5*time.Second, &lock.AcquireOptions{Wait: 10 * time.Second, RetryFor: 5 * time.Second})
	if cerr := <-cont; cerr != nil {
		t.Fatal(cerr)
	}
	if err != nil {
		t.Fatalf("a waiter through a replica stall of 0.7s: %v", err)
	}
	_ = lease.Release(ctx)
	// A stall longer than RetryFor still ends the wait with the shortfall.
	if err := r.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := r.Signal(syscall.SIGCONT); err != nil {
			t.Error(err)
		}
	}()
	_, err = l.Acquire(ctx, name, 5*time.Second, &lock.AcquireOptions{Wait: 10 * time.Second, RetryFor: 500 * time.Millisecond})
	if !errors.Is(err, lock.ErrUnavailable) {
		t.Fatalf("a stall past RetryFor: %v, want ErrUnavailable", err)
	}
}

// serverReply is an error reply as the server sends it (go-redis's own type
// is internal).
type serverReply string

func (e serverReply) Error() string { return string(e) }
func (serverReply) RedisError()     {}

// replyFault answers the next n script calls with reply instead of sending
// them, as a cluster answers during a slot migration (TRYAGAIN) or a
// restarted server while it loads its dataset (LOADING).
type replyFault struct {
	n     atomic.Int32
	reply string
}

func (h *replyFault) DialHook(next redis.DialHook) redis.DialHook { return next }
func (h *replyFault) fail(cmds []redis.Cmder) bool {
	for _, c := range cmds {
		if n := strings.ToLower(c.Name()); n == "evalsha" || n == "eval" {
			if h.n.Add(-1) >= 0 {
				for _, c := range cmds {
					c.SetErr(serverReply(h.reply))
				}
				return true
			}
			return false
		}
	}
	return false
}
func (h *replyFault) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if h.fail([]redis.Cmder{cmd}) {
			return cmd.Err()
		}
		return next(ctx, cmd)
	}
}
func (h *replyFault) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		if h.fail(cmds) {
			return cmds[0].Err()
		}
		return next(ctx, cmds)
	}
}

// A waiter rides through the replies a server or cluster gives in passing
// (a slot in migration, a dataset loading) within RetryFor, as through a
// failover; without a wait, or past RetryFor, the reply ends the acquire.
func TestWaiterRetriesTransientReplies(t *testing.T) {
	for _, reply := range []string{
		"TRYAGAIN Multiple keys request during rehashing of slot",
		"LOADING Redis is loading the dataset in memory",
		"CLUSTERDOWN The cluster is down",
		"MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
	} {
		word := strings.Fields(reply)[0]
		t.Run(word, func(t *testing.T) {
			c := newClient(t)
			h := &replyFault{reply: reply}
			c.AddHook(h)
			l := lock.New(c, nil)
			name := uniqueName(t)
			h.n.Store(1)
			if _, err := l.Acquire(ctx, name, 5*time.Second, nil); err == nil || !strings.Contains(err.Error(), word) {
				t.Fatalf("-n on %s: %v, want the reply", word, err)
			}
			h.n.Store(3)
			lease, err := l.Acquire(ctx, name, 5*time.Second, &lock.AcquireOptions{Wait: 10 * time.Second, RetryFor: 5 * time.Second})
			if err != nil {
				t.Fatalf("a waiter through three %s replies: %v", word, err)
			}
			_ = lease.Release(ctx)
			h.n.Store(1 << 20)
			_, err = l.Acquire(ctx, name, 5*time.Second, &lock.AcquireOptions{Wait: 10 * time.Second, RetryFor: 500 * time.Millisecond})
			if err == nil || !strings.Contains(err.Error(), word) {
				t.Fatalf("%s past RetryFor: %v, want the reply", word, err)
			}
		})
	}
}
