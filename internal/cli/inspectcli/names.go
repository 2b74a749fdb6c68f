// Package inspectcli holds what lockctl's commands need of the lock
// keyspace that is no part of the pkg/inspect library: the names shell
// completion offers.
package inspectcli

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/redis/go-redis/v9"
)

// namesScanCalls bounds the SCAN calls of one Names call per node and
// pattern: a shell waiting on a completion must never walk a huge keyspace.
const namesScanCalls = 8

// Names returns up to max names of keys under prefix that start with
// start (lockctl locks, semaphores, and other clients' keys alike), sorted,
// from a bounded SCAN: a few calls per node, so on a large keyspace the
// answer may be partial. It reads no values. It is meant for shell
// completion; ctx should carry a short deadline.
func Names(ctx context.Context, c redis.UniversalClient, prefix, start string, max int) ([]string, error) {
	var mu sync.Mutex // a Cluster's masters are read at once
	seen := map[string]bool{}
	add := func(name string) bool {
		mu.Lock()
		defer mu.Unlock()
		if len(seen) >= max {
			return false
		}
		seen[name] = true
		return len(seen) < max
	}
	match := escapeGlob(prefix+start) + "*"
	semPattern := escapeGlob(lockwire.AuxPrefix+lockwire.KindSem+":") + "*" + escapeGlob(prefix) + "*"
	err := forEachNode(ctx, c, func(ctx context.Context, node redis.UniversalClient) error {
		if err := boundedScan(ctx, node, match, func(key string) bool {
			if strings.HasPrefix(key, lockwire.AuxPrefix) {
				return true
			}
			return add(strings.TrimPrefix(key, prefix))
		}); err != nil {
			return err
		}
		return boundedScan(ctx, node, semPattern, func(aux string) bool {
			kind, key, ok := lockwire.KeyOfAux(aux)
			if !ok || kind != lockwire.KindSem || strings.HasPrefix(key, lockwire.AuxPrefix) || !strings.HasPrefix(key, prefix+start) {
				return true
			}
			return add(strings.TrimPrefix(key, prefix))
		})
	})
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, err
}

// boundedScan feeds keys matching match to keep until it returns false,
// the cursor ends, or namesScanCalls calls were made.
func boundedScan(ctx context.Context, node redis.UniversalClient, match string, keep func(string) bool) error {
	var cursor uint64
	for i := 0; i < namesScanCalls; i++ {
		keys, next, err := node.Scan(ctx, cursor, match, 500).Result()
		if err != nil {
			return err
		}
		for _, k := range keys {
			if !keep(k) {
				return nil
			}
		}
		if next == 0 {
			return nil
		}
		cursor = next
	}
	return nil
}

// forEachNode runs fn on the one server, or on every master of a Cluster.
func forEachNode(ctx context.Context, c redis.UniversalClient, fn func(ctx context.Context, node redis.UniversalClient) error) error {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return fn(ctx, c)
	}
	return cc.ForEachMaster(ctx, func(ctx context.Context, node *redis.Client) error { return fn(ctx, node) })
}

// escapeGlob quotes the characters Redis glob patterns treat specially.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
