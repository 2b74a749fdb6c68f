package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// A run of several NAMEs holds them as one set (lock.Locker.AcquireMulti):
// taken in one step, all or none, renewed and released in one step, lost
// together. These are the parts of run that differ for a set.

// setName is how messages name what a run holds: its NAME, or its NAMEs.
func setName(names []string) string { return strings.Join(names, ", ") }

// takeSet acquires names as one set. A set has no semaphore, FIFO or
// shared mode, and re-enters nothing: a caller that holds one of the names
// already (its environment says so) would wait for itself.
func (w *waitFlags) takeSet(ctx context.Context, f *Factory, l *lock.Locker, names []string, opts *lock.AcquireOptions) (*lock.Lease, error) {
	switch {
	case opts.Limit > 0:
		return nil, usageErrorf("--limit takes one NAME: a set of several is held exclusively")
	case opts.FIFO:
		return nil, usageErrorf("--fifo takes one NAME: a set of several waits as one exclusive holder")
	case opts.Shared:
		return nil, usageErrorf("--shared takes one NAME: a set of several is held exclusively")
	}
	if err := f.RefuseRedlock("several NAMEs"); err != nil {
		return nil, err
	}
	if token := f.Getenv("LOCKCTL_TOKEN"); token != "" && !w.noReentry {
		for _, name := range names {
			if envHolds(f.Getenv, l.Key(name)) {
				return nil, &UsageError{Err: fmt.Errorf("%s is held by this caller already (LOCKCTL_KEY), and a set of several NAMEs does not re-enter", name),
					Hints: []string{"run the set outside the lock's run, or each NAME on its own (one NAME re-enters), or --no-reentry to wait for the set as a separate holder"}}
			}
		}
	}
	return l.AcquireMulti(ctx, names, w.ttl, opts)
}

// setRefusal is what a refused set's messages name: the NAME whose lock
// refused it (the set's name when no holder says which), and err, with the
// hint of a set sent to one Redis Cluster node through --url: its NAMEs
// lie in several slots (lock.ErrInvalid, wrapping the node's CROSSSLOT),
// and the hash tag that fixes it is the same as with --cluster.
func setRefusal(f *Factory, l *lock.Locker, names []string, err error) (string, error) {
	var held *lock.HeldError
	if errors.As(err, &held) {
		for _, name := range names {
			if l.Key(name) == held.Holder.Key {
				return name, err
			}
		}
	}
	var reply redis.Error
	if errors.Is(err, lock.ErrInvalid) && errors.As(err, &reply) && len(f.G.Cluster) == 0 {
		err = withHint(err, "this server is a Redis Cluster node: give the cluster's nodes with --cluster H:P,... instead of --url, and every NAME of the set the same {tag}")
	}
	return setName(names), err
}

// envHolds reports whether the environment names key as held by this
// caller: LOCKCTL_KEY, or one of a set's LOCKCTL_KEY_<i>.
func envHolds(getenv func(string) string, key string) bool {
	if getenv("LOCKCTL_KEY") == key {
		return true
	}
	n, _ := strconv.Atoi(getenv("LOCKCTL_SET_SIZE"))
	for i := 1; i <= n; i++ {
		if getenv("LOCKCTL_KEY_"+strconv.Itoa(i)) == key {
			return true
		}
	}
	return false
}

// childSetEnv is what the child of a set run learns beyond childEnv (which
// describes the first NAME): LOCKCTL_SET_SIZE and each NAME's
// LOCKCTL_NAME_<i>, LOCKCTL_KEY_<i> and LOCKCTL_FENCE_<i>. The child of a
// run of one NAME gets none of them, nor inherits those of a set run it is
// nested in (unset), so that they always describe the run's own locks.
func childSetEnv(l *lock.Locker, lease *lock.Lease, names []string, getenv func(string) string) (env, unset []string) {
	if len(names) > 1 {
		env = append(env, "LOCKCTL_SET_SIZE="+strconv.Itoa(len(names)))
		for i, name := range names {
			n := strconv.Itoa(i + 1)
			env = append(env, "LOCKCTL_NAME_"+n+"="+name, "LOCKCTL_KEY_"+n+"="+l.Key(name),
				"LOCKCTL_FENCE_"+n+"="+strconv.FormatInt(lease.FenceOf(name), 10))
		}
		return env, nil
	}
	if getenv("LOCKCTL_SET_SIZE") == "" {
		return nil, nil
	}
	unset = []string{"LOCKCTL_SET_SIZE"}
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		for _, p := range []string{"LOCKCTL_NAME_", "LOCKCTL_KEY_", "LOCKCTL_FENCE_"} {
			if rest, ok := strings.CutPrefix(k, p); ok && rest != "" && strings.Trim(rest, "0123456789") == "" {
				unset = append(unset, k)
			}
		}
	}
	return nil, unset
}

// setMember is one NAME of a set in the --report-file record.
type setMember struct {
	Name  string `json:"name"`
	Key   string `json:"key"`
	Fence int64  `json:"fence"`
}

// setMembers is the report's "set": each NAME's key and fence, or nil for
// one NAME.
func setMembers(l *lock.Locker, lease *lock.Lease, names []string) []setMember {
	if len(names) < 2 {
		return nil
	}
	out := make([]setMember, len(names))
	for i, name := range names {
		out[i] = setMember{Name: name, Key: l.Key(name), Fence: lease.FenceOf(name)}
	}
	return out
}
