// Package redisreply recognises Redis error replies that blame the data at
// a key rather than the command, for pkg/ to turn into typed errors. The
// CLI's classes of every other reply are in cmd (rediserr.go).
package redisreply

import (
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// IsData reports an error reply saying a key holds something the command
// cannot use: another type (WRONGTYPE), or a string that is no number (or
// one that would overflow). Such a key was written by someone else.
func IsData(err error) bool {
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		return false
	}
	msg := rerr.Error()
	return strings.HasPrefix(msg, "WRONGTYPE") || strings.Contains(msg, "not an integer") ||
		strings.Contains(msg, "not a valid float") || strings.Contains(msg, "would overflow")
}

// IsNoClusterNodes reports go-redis's error (it has no type) for a Cluster
// whose slot map names no master: every slot unassigned, the cluster down,
// nothing can be read or written.
func IsNoClusterNodes(err error) bool {
	return err != nil && strings.Contains(err.Error(), "redis: cluster has no nodes")
}

// ErrUnexpected matches a reply no Redis server sends to the command: a
// script reply of a shape lockctl's scripts never return, or a reply
// go-redis could not read as the command's (a "+OK" to EVALSHA). The
// server is then no Redis (an impostor, a proxy that mangles replies,
// another service on the port); the CLI calls it unavailable (69), not a
// bug of its own (70).
var ErrUnexpected = errors.New("not a Redis reply")

// Unexpected is an error matching ErrUnexpected that describes the reply
// (what: "script reply", "fence check reply"; v: the reply as decoded).
func Unexpected(what string, v any) error {
	return &unexpectedError{what: what, v: v}
}

type unexpectedError struct {
	what string
	v    any
}

func (e *unexpectedError) Error() string {
	s := fmt.Sprintf("%v", e.v)
	if len(s) > 100 {
		s = s[:100] + "..."
	}
	return fmt.Sprintf("unexpected %s %s", e.what, s)
}

func (e *unexpectedError) Is(target error) bool { return target == ErrUnexpected }

// goRedisProtocol are the beginnings of go-redis's messages for a reply it
// could not read as the command's: the protocol reader's and the typed
// results' (Slice, Int64Slice, ...). go-redis gives them no type of their
// own, so their words are the one way to tell them.
var goRedisProtocol = []string{
	"redis: can't parse",
	"redis: invalid reply",
	"redis: invalid line",
	"redis: unexpected type=",
	"redis: can't read raw reply",
	"redis: got ",
	"redis: the length of the array must be",
	"redis: RESP3 map key must be",
}

// IsUnexpected reports a reply no Redis server sends: ErrUnexpected, or
// go-redis failing to read the reply (see goRedisProtocol).
func IsUnexpected(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, ErrUnexpected) {
		return true
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return false // an error reply: Redis's own words
	}
	// Callers add words before go-redis's ("lock: acquire k: ...").
	msg := err.Error()
	for _, p := range goRedisProtocol {
		if strings.HasPrefix(msg, p) || strings.Contains(msg, ": "+p) {
			return true
		}
	}
	return false
}
