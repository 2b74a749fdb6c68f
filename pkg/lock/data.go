package lock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lockwire"
	"github.com/lockctl/lockctl/internal/redisreply"
	"github.com/redis/go-redis/v9"
)

// DataError reports that a key lockctl reads holds something lockctl did
// not write there: another Redis type at a fence counter, semaphore or wait queue, or
// a string that is no number where a counter belongs. Someone else wrote it;
// the call did not take effect. It matches ErrWrongType.
type DataError struct {
	Key   string   // the offending key; empty when it could not be told apart
	Keys  []string // the keys the call used, when Key is empty
	Type  string   // the key's Redis type, when the type is what is wrong
	Value string   // the value that is no number, when that is what is wrong
	Want  string   // what lockctl keeps there
	Err   error    // the server's reply or the parse error
}

func (e *DataError) Error() string {
	switch {
	case e.Key != "" && e.Type != "":
		return fmt.Sprintf("%s is a %s, not %s", e.Key, e.Type, e.Want)
	case e.Key != "":
		return fmt.Sprintf("%s holds %q, not %s", e.Key, e.Value, e.Want)
	}
	return fmt.Sprintf("one of %s holds data lockctl did not write: %v", strings.Join(e.Keys, ", "), e.Err)
}

// Is makes a *DataError match ErrWrongType.
func (e *DataError) Is(target error) bool { return target == ErrWrongType }

// Unwrap returns the server's reply or the parse error.
func (e *DataError) Unwrap() error { return e.Err }

// wantOf says what lockctl keeps at an auxiliary key: its Redis type and,
// for people, what it is. Lock keys themselves are not listed: the scripts
// report their type, and a foreign lock of any known kind is not an error.
func wantOf(key string) (typ, what string, counter bool) {
	if key == lockwire.AuxPrefix+"audit" { // inspect's force-release audit stream
		return "stream", "the force-release audit stream (a stream)", false
	}
	kind, _, ok := lockwire.KeyOfAux(key)
	if !ok {
		return "", "", false
	}
	switch kind {
	case lockwire.KindFence:
		return "string", "a fence counter (an integer)", true
	case lockwire.KindChecked:
		return "string", "a fence-check record (a fence, then the token that presented it)", true
	case lockwire.KindQueue:
		return "zset", "a FIFO wait queue (a sorted set)", false
	case lockwire.KindQueueHB:
		return "zset", "a FIFO heartbeat set (a sorted set)", false
	case lockwire.KindSem:
		return "zset", "a semaphore (a sorted set)", false
	case lockwire.KindSemVal:
		return "hash", "a semaphore's holder values (a hash)", false
	}
	return "", "", false
}

func (s *single) dataError(ctx context.Context, err error, keys ...string) error {
	return dataErrorOf(ctx, s.c, err, keys...)
}

// dataErrorOf turns a data reply (WRONGTYPE, a counter that is no integer)
// to a call on a lock's keys into a *DataError naming the key at fault;
// other errors pass through unchanged. It is for code that runs its own
// scripts on those keys (inspect). Telling the key costs a TYPE (and a GET
// for counters) per key, paid only on this path.
func dataErrorOf(ctx context.Context, c redis.Cmdable, err error, keys ...string) error {
	if !redisreply.IsData(err) {
		return err
	}
	de := &DataError{Keys: keys, Err: err}
	// The call's own deadline may be what remains of it; the look costs
	// little and makes the message useful.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	defer cancel()
	for _, k := range keys {
		typ, what, counter := wantOf(k)
		if typ == "" {
			continue
		}
		t, terr := c.Type(ctx, k).Result()
		if terr != nil || t == "none" {
			continue
		}
		if t != typ {
			de.Key, de.Type, de.Want = k, t, what
			return de
		}
		if counter {
			v, gerr := c.Get(ctx, k).Result()
			if _, perr := strconv.ParseInt(v, 10, 64); gerr == nil && perr != nil {
				de.Key, de.Value, de.Want = k, v, what
				return de
			}
		}
	}
	return de
}

// counterError is a counter read with GET that does not parse (or is of
// another type): a *DataError naming it.
func (s *single) counterError(ctx context.Context, key string, err error) error {
	var num *strconv.NumError
	if errors.As(err, &num) {
		_, what, _ := wantOf(key)
		return &DataError{Key: key, Value: num.Num, Want: what, Err: err}
	}
	return s.dataError(ctx, err, key)
}
