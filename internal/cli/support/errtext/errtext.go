// Package errtext words errors for lockctl's output. Package lock's error
// types start their messages with "lock: ", as a library's should; lockctl
// prints its own prefix ("lockctl: ") and names the key itself, so it
// prints those errors without the library's prefix, in the words its
// users and scripts know.
package errtext

import (
	"errors"
	"strings"

	"github.com/lockctl/lockctl/pkg/lock"
)

const prefix = "lock: "

// Of is err's message with every lock error in it (err itself or one it
// wraps) worded for lockctl's output: "lock: lock:deploy held by ..."
// reads "lock:deploy held by ...", "lock: deploy lost: ..." reads
// "lock deploy lost: ...". Other text is left as it is.
func Of(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	// Outer errors first: an outer lock error's message holds its inner
	// ones verbatim, prefix included, so they are still found after it.
	walk(err, func(e error) {
		full := e.Error()
		if plain, ok := unprefixed(e, full); ok {
			msg = strings.ReplaceAll(msg, full, plain)
		}
	})
	return msg
}

// unprefixed is full, e's message, as lockctl prints it, and whether e is
// a lock error whose message it changes.
func unprefixed(e error, full string) (string, bool) {
	if !strings.HasPrefix(full, prefix) {
		return full, false
	}
	rest := full[len(prefix):]
	switch e := e.(type) {
	case *lock.LostError:
		return "lock " + rest, true
	case *lock.DataError:
		if e.Err == lock.ErrInvalid {
			// A limit mismatch has always said "lock: semaphore ...".
			return full, false
		}
		return rest, true
	case *lock.HeldError, *lock.StaleFenceError, *lock.ReplicationError,
		*lock.WakeError, *lock.LateError, *lock.QuorumError:
		return rest, true
	}
	return full, false
}

// walk calls f on err and every error it wraps, each parent before its
// children.
func walk(err error, f func(error)) {
	if err == nil {
		return
	}
	f(err)
	switch u := err.(type) {
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			walk(e, f)
		}
	default:
		walk(errors.Unwrap(err), f)
	}
}
