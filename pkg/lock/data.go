package lock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

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

// Unwrap returns ErrWrongType, which a *DataError matches, and Err, the
// server's reply or the parse error.
func (e *DataError) Unwrap() []error { return causes(ErrWrongType, e.Err) }

// causes is what an error type's Unwrap returns: the sentinel it matches,
// then the errors it wraps that are not nil.
func causes(sentinel error, errs ...error) []error {
	out := make([]error, 1, 1+len(errs))
	out[0] = sentinel
	for _, err := range errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

func (s *single) dataError(ctx context.Context, err error, keys ...string) error {
	return dataErrorOf(ctx, s.c, err, keys...)
}

// dataErrorOf turns a data reply (WRONGTYPE, a counter that is no integer)
// to a call on a lock's keys into a *DataError naming the key at fault
// (lockwire.FindMisfit); other errors pass through unchanged.
func dataErrorOf(ctx context.Context, c redis.Cmdable, err error, keys ...string) error {
	if !redisreply.IsData(err) {
		return err
	}
	m := lockwire.FindMisfit(ctx, c, keys...)
	return &DataError{Keys: keys, Key: m.Key, Type: m.Type, Value: m.Value, Want: m.Want, Err: err}
}

// counterError is a counter read with GET that does not parse (or is of
// another type): a *DataError naming it.
func (s *single) counterError(ctx context.Context, key string, err error) error {
	var num *strconv.NumError
	if errors.As(err, &num) {
		return &DataError{Key: key, Value: num.Num, Want: lockwire.WantAt(key), Err: err}
	}
	return s.dataError(ctx, err, key)
}
