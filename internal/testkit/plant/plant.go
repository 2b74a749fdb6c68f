// Package plant writes foreign, corrupted, huge and wrong-type values at
// Redis keys for lockctl's fuzz tests: the data a reader of lock, limit and
// once keys must survive without a panic or an untyped error.
package plant

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Types are the Redis types Value writes, indexed by typ % len(Types);
// "none" leaves the key absent.
var Types = []string{"string", "hash", "zset", "list", "set", "stream", "none"}

// Huge is the size of a huge string value.
const Huge = 1 << 20

// Value replaces key with a value of type Types[typ%len(Types)] built from
// payload: a string (repeated to at least size bytes); a hash, sorted set
// or stream of "a=b,c=d" pairs (field=value, score=member); a list or a set
// of the comma-separated items. A sorted-set score that does not parse is
// the pair's index.
func Value(ctx context.Context, c redis.Cmdable, key string, typ byte, payload string, size int) error {
	if err := c.Del(ctx, key).Err(); err != nil {
		return err
	}
	items := strings.Split(payload, ",")
	pairs := func() [][2]string {
		out := make([][2]string, len(items))
		for i, p := range items {
			a, b, _ := strings.Cut(p, "=")
			out[i] = [2]string{a, b}
		}
		return out
	}
	switch Types[int(typ)%len(Types)] {
	case "string":
		v := payload
		if v != "" && len(v) < size {
			v = strings.Repeat(v, size/len(v)+1)
		}
		return c.Set(ctx, key, v, 0).Err()
	case "hash":
		var args []any
		for _, p := range pairs() {
			args = append(args, p[0], p[1])
		}
		return c.HSet(ctx, key, args...).Err()
	case "zset":
		var zs []redis.Z
		for i, p := range pairs() {
			score, err := strconv.ParseFloat(p[0], 64)
			if err != nil || score != score { // NaN is no score
				score = float64(i)
			}
			zs = append(zs, redis.Z{Score: score, Member: p[1]})
		}
		return c.ZAdd(ctx, key, zs...).Err()
	case "stream":
		var vals []any
		for _, p := range pairs() {
			vals = append(vals, p[0], p[1])
		}
		return c.XAdd(ctx, &redis.XAddArgs{Stream: key, Values: vals}).Err()
	case "list":
		return c.RPush(ctx, key, toAny(items)...).Err()
	case "set":
		return c.SAdd(ctx, key, toAny(items)...).Err()
	}
	return nil
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// Size is Value's size argument for a seed that asks for a huge value.
func Size(huge bool) int {
	if huge {
		return Huge
	}
	return 0
}

// Describe names what was planted at key, for a failure message.
func Describe(typ byte, payload, key string) string {
	return fmt.Sprintf("%s %q planted at %s", Types[int(typ)%len(Types)], Abbrev(payload), key)
}

// Abbrev cuts s to 80 bytes for a failure message, saying how long it was.
func Abbrev(s string) string {
	if len(s) > 80 {
		return s[:80] + fmt.Sprintf("...(%d bytes)", len(s))
	}
	return s
}

// ReplyError reports whether err is an error reply of the server (which
// readers may pass on as it is), not a missing key.
func ReplyError(err error) bool {
	var rerr redis.Error
	return errors.As(err, &rerr) && !errors.Is(err, redis.Nil)
}
