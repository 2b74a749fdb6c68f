// Package redisreply recognises Redis error replies that blame the data at
// a key rather than the command, for pkg/ to turn into typed errors. The
// CLI's classes of every other reply are in cmd (rediserr.go).
package redisreply

import (
	"errors"
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
