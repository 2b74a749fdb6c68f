package lock

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/redis/go-redis/v9"
)

// DataError reports that a key holds what the call cannot use: another
// Redis type, or a string that is no number where a counter belongs
// (someone else wrote it), or a semaphore whose live holders came in with
// another limit. Err says which, and what it matches:
//
//   - ErrWrongType: the key at the lock's name is not a lock (Type says
//     what it is; Want is "a lock");
//   - ErrInvalid: the semaphore at Key has live holders that came in
//     with Limit, and the call asked for WantLimit. Shared mode
//     (AcquireOptions.Shared) keeps its holders in the same place as a
//     semaphore's, so a shared acquire among semaphore holders is one with
//     WantLimit 0, and a semaphore acquire among shared holders one with
//     Limit 0. It matches ErrInvalid only (waiting does not fix it), never
//     ErrWrongType;
//   - otherwise the server's reply or the parse error, about a fence
//     counter, semaphore or wait queue that lockctl did not write.
//
// The call did not take effect. Except for a limit mismatch, it matches
// ErrWrongType.
type DataError struct {
	Key   string   // the offending key; empty when it could not be told apart
	Keys  []string // the keys the call used, when Key is empty
	Type  string   // the key's Redis type, when the type is what is wrong
	Value string   // the value that is no number, when that is what is wrong
	Want  string   // what lockctl keeps there
	// Limit and WantLimit: the semaphore's limit and the one the call
	// asked for, when Err is ErrInvalid (0: shared mode).
	Limit, WantLimit int
	Err              error // ErrWrongType, ErrInvalid (a limit mismatch), the server's reply or the parse error
}

func (e *DataError) Error() string {
	switch {
	case e.Err == ErrInvalid && e.Limit == 0:
		return fmt.Sprintf("lock: %s is held in shared mode, not as a semaphore of limit %d", e.Key, e.WantLimit)
	case e.Err == ErrInvalid && e.WantLimit == 0:
		return fmt.Sprintf("lock: semaphore %s is held with limit %d, not in shared mode", e.Key, e.Limit)
	case e.Err == ErrInvalid:
		return fmt.Sprintf("lock: semaphore %s is held with limit %d, not %d", e.Key, e.Limit, e.WantLimit)
	case e.Key != "" && e.Type != "":
		return fmt.Sprintf("lock: %s is a %s, not %s", e.Key, e.Type, e.Want)
	case e.Key != "":
		return fmt.Sprintf("lock: %s holds %q, not %s", e.Key, e.Value, e.Want)
	}
	return fmt.Sprintf("lock: one of %s holds data lockctl did not write: %v", strings.Join(e.Keys, ", "), e.Err)
}

// Unwrap returns the sentinels a *DataError matches (see DataError), and Err.
func (e *DataError) Unwrap() []error {
	if e.Err == ErrInvalid {
		return []error{ErrInvalid}
	}
	return causes(ErrWrongType, e.Err)
}

// notALock is the *DataError of a key at a lock's name that holds a Redis
// type of another kind (typ).
func notALock(key, typ string) *DataError {
	return &DataError{Key: key, Type: typ, Want: "a lock", Err: ErrWrongType}
}

// limitMismatch is the *DataError of a semaphore (or shared) acquire among
// holders that came in with another limit.
func limitMismatch(key string, limit, want int) *DataError {
	return &DataError{Key: key, Limit: limit, WantLimit: want, Err: ErrInvalid}
}

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
