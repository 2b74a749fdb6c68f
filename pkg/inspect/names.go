package inspect

import (
	"context"
	"sort"
	"strings"

	"github.com/lockctl/lockctl/internal/lockwire"
	"github.com/redis/go-redis/v9"
)

// namesScanCalls bounds the SCAN calls of one Names call per node and
// pattern: a shell waiting on a completion must never walk a huge keyspace.
const namesScanCalls = 8

// Names returns up to max names of keys under the prefix that start with
// start (lockctl locks, semaphores, and other clients' keys alike), sorted,
// from a bounded SCAN: a few calls per node, so on a large keyspace the
// answer may be partial. It reads no values. It is meant for shell
// completion; ctx should carry a short deadline.
func (in *Inspector) Names(ctx context.Context, start string, max int) ([]string, error) {
	seen := map[string]bool{}
	add := func(name string) bool {
		if len(seen) >= max {
			return false
		}
		seen[name] = true
		return len(seen) < max
	}
	match := EscapeGlob(in.prefix+start) + "*"
	err := forEachNode(ctx, in.c, func(ctx context.Context, node redis.UniversalClient) error {
		if err := boundedScan(ctx, node, match, func(key string) bool {
			if isAux(key) {
				return true
			}
			return add(in.Name(key))
		}); err != nil {
			return err
		}
		return boundedScan(ctx, node, in.semPattern(), func(aux string) bool {
			kind, key, ok := lockwire.KeyOfAux(aux)
			if !ok || kind != lockwire.KindSem || isAux(key) || !strings.HasPrefix(key, in.prefix+start) {
				return true
			}
			return add(in.Name(key))
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
