package inspect

import (
	"context"
	"errors"
	"strings"

	"github.com/lockctl/lockctl/pkg/once"
	"github.com/redis/go-redis/v9"
)

// OnceUnknown calls fn for every `once` record under prefix (once.DefaultPrefix
// when "") whose name matches glob ("" for all) and whose outcome is
// unknown: an at-most-once claim that lapsed without a recorded outcome,
// marked (once.StateUnknown) or not yet (its lease has ended by the
// server's clock), in SCAN order, batch by batch. Only records without a
// TTL can be such claims (at-most-once claims never expire on their own),
// so a batch costs one pipelined PTTL round trip and one read per
// candidate. Hashes that are no once records are skipped.
func (in *Inspector) OnceUnknown(ctx context.Context, prefix, glob string, o *ScanOptions, fn func(once.Record) error) error {
	if prefix == "" {
		prefix = once.DefaultPrefix
	}
	if glob == "" {
		glob = "*"
	}
	match := escapeGlob(prefix) + glob
	var scanned int64
	return forEachNode(ctx, in.c, func(ctx context.Context, node redis.UniversalClient) error {
		store := once.New(node, &once.Options{Prefix: prefix})
		return in.scan(ctx, node, match, func(string) bool { return true }, func(keys []string, next func(redis.Pipeliner)) error {
			found, err := withoutTTL(ctx, node, keys, next)
			if err != nil {
				return err
			}
			scanned += int64(len(keys))
			o.progress(scanned)
			for _, k := range found {
				rec, err := store.Get(ctx, strings.TrimPrefix(k, prefix))
				switch {
				case errors.Is(err, once.ErrNotFound), errors.Is(err, once.ErrWrongType):
					continue
				case err != nil:
					return err
				case rec.State != once.StateUnknown:
					continue
				}
				if err := fn(rec); err != nil {
					return err
				}
			}
			return nil
		})
	})
}
