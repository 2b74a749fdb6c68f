package inspect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sort"
	"strings"
	"sync"
	"syscall"

	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/redis/go-redis/v9"
)

// clusterSlots is the number of hash slots of a Redis Cluster.
const clusterSlots = 16384

// ErrIncomplete is the error of a listing that could not read every node:
// what it printed lacks the keys of the nodes or slots its *IncompleteError names.
// "Nothing found" is never said of keys that could not be seen.
var ErrIncomplete = errors.New("inspect: listing incomplete")

// Missed is a part of a Cluster a listing could not read: a master (Node
// set) and the slots it serves, or slots no master serves (Node empty).
type Missed struct {
	Node  string   `json:"node,omitempty"`
	Slots [][2]int `json:"slots"`
	Err   error    `json:"-"`
}

// Reason is why m was not read, for people.
func (m Missed) Reason() string {
	if m.Node == "" {
		return "no master serves these slots"
	}
	if m.Err == nil {
		return "not read"
	}
	return m.Err.Error()
}

// SlotRanges renders m's slots as "0-5460,10923".
func (m Missed) SlotRanges() string {
	parts := make([]string, len(m.Slots))
	for i, r := range m.Slots {
		if r[0] == r[1] {
			parts[i] = fmt.Sprint(r[0])
		} else {
			parts[i] = fmt.Sprintf("%d-%d", r[0], r[1])
		}
	}
	return strings.Join(parts, ",")
}

// IncompleteError is a Cluster listing that read some nodes but not all
// (Down: none at all, the cluster serves no slots). Every record the
// listing passed on is true; the keys of Missed were not seen.
type IncompleteError struct {
	Missed []Missed
	Nodes  int  // masters the slot map names
	Down   bool // nothing could be read: the cluster is down
}

func (e *IncompleteError) Error() string {
	var b strings.Builder
	if e.Down {
		b.WriteString("the cluster is down, nothing could be read")
	} else {
		b.WriteString("listing incomplete, the keys of these slots were not read")
	}
	for i, m := range e.Missed {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		if m.Node != "" {
			fmt.Fprintf(&b, "%s (slots %s): %s", m.Node, m.SlotRanges(), m.Reason())
		} else {
			fmt.Fprintf(&b, "slots %s: %s", m.SlotRanges(), m.Reason())
		}
	}
	return b.String()
}

// Is makes every IncompleteError match ErrIncomplete.
func (e *IncompleteError) Is(target error) bool { return target == ErrIncomplete }

// Unwrap gives the nodes' own errors (CLUSTERDOWN, connection refused), so
// that a caller classifying the cause sees them.
func (e *IncompleteError) Unwrap() []error {
	var errs []error
	for _, m := range e.Missed {
		if m.Err != nil {
			errs = append(errs, m.Err)
		}
	}
	return errs
}

// forEachNode runs fn on every node that holds keys: each master of a
// Cluster (one at a time, so callbacks never run concurrently), or the one
// server. On a Cluster a master that cannot be read (down, CLUSTERDOWN,
// LOADING) and slots no master serves do not stop the others: fn runs on
// every master that answers, then an *IncompleteError names what was
// missed.
func forEachNode(ctx context.Context, c redis.UniversalClient, fn func(ctx context.Context, node redis.UniversalClient) error) error {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return fn(ctx, c)
	}
	slots, err := cc.ClusterSlots(ctx).Result() //nolint:staticcheck // CLUSTER SHARDS, its successor, needs Redis 7; lockctl supports 6.2
	if err != nil && !redisreply.IsNoClusterNodes(err) {
		return err
	}
	served := map[string][][2]int{}
	covered := make([]bool, clusterSlots)
	for _, s := range slots {
		if len(s.Nodes) == 0 {
			continue
		}
		addr := s.Nodes[0].Addr
		served[addr] = append(served[addr], [2]int{s.Start, s.End})
		for i := max(s.Start, 0); i <= s.End && i < clusterSlots; i++ {
			covered[i] = true
		}
	}
	var (
		mu     sync.Mutex
		missed []Missed
	)
	if unserved := gaps(covered); len(unserved) > 0 {
		missed = append(missed, Missed{Slots: unserved})
	}
	read := 0
	if len(served) > 0 {
		err = cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			err := fn(ctx, node)
			if err == nil {
				read++
				return nil
			}
			if ctx.Err() != nil || !nodeDown(err) {
				return err
			}
			addr := node.Options().Addr
			missed = append(missed, Missed{Node: addr, Slots: served[addr], Err: err})
			return nil
		})
		if err != nil {
			return err
		}
	}
	if len(missed) == 0 {
		return nil
	}
	sort.SliceStable(missed, func(i, j int) bool {
		return len(missed[i].Slots) > 0 && len(missed[j].Slots) > 0 && missed[i].Slots[0][0] < missed[j].Slots[0][0]
	})
	return &IncompleteError{Missed: missed, Nodes: len(served), Down: read == 0}
}

// gaps lists the ranges of slots not covered.
func gaps(covered []bool) [][2]int {
	var out [][2]int
	for i := 0; i < len(covered); i++ {
		if covered[i] {
			continue
		}
		j := i
		for j+1 < len(covered) && !covered[j+1] {
			j++
		}
		out = append(out, [2]int{i, j})
		i = j
	}
	return out
}

// nodeDown reports a failure of one node, not of the listing: the node
// cannot be reached, or refuses keyed commands for now (its cluster state
// is fail, it is loading, its master is gone).
func nodeDown(err error) bool {
	for _, p := range []string{"CLUSTERDOWN", "TRYAGAIN", "LOADING", "MASTERDOWN"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	var netErr net.Error
	return errors.As(err, &netErr) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, redis.ErrPoolTimeout)
}
