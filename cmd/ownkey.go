package cmd

import (
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/lock"
)

// ownKeyRefusal refuses, before Redis is asked, to act as on a lock on a
// key in lockctl's own namespace: a fence counter or fence-check record
// whose value is given as the token would otherwise be deleted (release,
// force-release) or given a TTL (renew), and fencing would silently stop
// protecting. The argument alone decides it: a usage error (64). err, if
// not nil, is kept for errors.Is.
func ownKeyRefusal(verb, key string, err error) error {
	if !strings.HasPrefix(key, lockwire.AuxPrefix) {
		return nil
	}
	msg := fmt.Sprintf("refusing to %s %s: keys under %s are lockctl's own (fence counters and checks, queues, semaphores, the audit and event streams), never a lock; nothing changed",
		verb, key, lockwire.AuxPrefix)
	if err == nil {
		err = fmt.Errorf("%w: %s", lock.ErrInvalid, msg)
	}
	return &UsageError{Err: reword(err, "%s", msg), Hints: []string{"a lock NAME is what `lockctl inspect locks` shows"}}
}
