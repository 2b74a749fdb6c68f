package lockwire

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// Misfit is a key of a lock that holds what lockctl did not write there:
// another Redis type (Type), or a string that is no number where a counter
// belongs (Value). Want says, for people, what lockctl keeps there. Key is
// empty when no key could be told apart.
type Misfit struct {
	Key, Type, Value, Want string
}

// want says what lockctl keeps at an auxiliary key: its Redis type and,
// for people, what it is. Lock keys themselves are not listed: the scripts
// report their type, and a foreign lock of any known kind is not an error.
func want(key string) (typ, what string, counter bool) {
	if key == AuxPrefix+"audit" { // inspect's force-release audit stream
		return "stream", "the force-release audit stream (a stream)", false
	}
	kind, _, ok := KeyOfAux(key)
	if !ok {
		return "", "", false
	}
	switch kind {
	case KindFence:
		return "string", "a fence counter (an integer)", true
	case KindChecked:
		return "string", "a fence-check record (a fence, then the token that presented it)", true
	case KindQueue:
		return "zset", "a FIFO wait queue (a sorted set)", false
	case KindQueueHB:
		return "zset", "a FIFO heartbeat set (a sorted set)", false
	case KindSem:
		return "zset", "a semaphore (a sorted set)", false
	case KindSemVal:
		return "hash", "a semaphore's holder values (a hash)", false
	}
	return "", "", false
}

// WantAt is what lockctl keeps at key, for people ("" for a key it does
// not know).
func WantAt(key string) string {
	_, what, _ := want(key)
	return what
}

// FindMisfit looks for the key among keys that holds what lockctl did not
// write, after a call on them got a data reply (WRONGTYPE, a counter that
// is no integer). Telling the key costs a TYPE (and a GET for counters)
// per key, paid only on this path; the look gets a second of its own, as
// the call's deadline may be what remains of ctx.
func FindMisfit(ctx context.Context, c redis.Cmdable, keys ...string) Misfit {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	for _, k := range keys {
		typ, what, counter := want(k)
		if typ == "" {
			continue
		}
		t, terr := c.Type(ctx, k).Result()
		if terr != nil || t == "none" {
			continue
		}
		if t != typ {
			return Misfit{Key: k, Type: t, Want: what}
		}
		if counter {
			v, gerr := c.Get(ctx, k).Result()
			if _, perr := strconv.ParseInt(v, 10, 64); gerr == nil && perr != nil {
				return Misfit{Key: k, Value: v, Want: what}
			}
		}
	}
	return Misfit{}
}
