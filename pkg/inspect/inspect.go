// Package inspect reads and repairs the lock keyspace for people on call:
// listing held locks (lockctl's own, plain SET NX locks of other clients and
// Redisson hash locks), finding keys that never expire, releasing one stuck
// holder by token with an audit record, and checking a deployment for lock
// safety. It never prints; callers render the records it returns.
//
// New gives an Inspector on the locks under one prefix ("lock:" by default,
// as package lock). Inspector.Locks lists held locks and Inspector.Lock
// describes one in full; Inspector.Orphans finds lock keys without a TTL and
// Inspector.FixOrphans gives them one or deletes them;
// Inspector.ForceRelease frees a stuck holder named by its token or token
// hash (TokenHash), recording it in the audit stream that Inspector.Audit
// reads; Inspector.Doctor checks the deployment behind the client. Errors
// match the sentinels of package lock (lock.ErrNotHeld, lock.ErrNotOwner,
// lock.ErrInvalid, lock.ErrWrongType) or this package's.
package inspect

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// AuditKey is the stream every forced release is recorded in. It starts with
// "lockctl:", lockctl's own namespace, so no lock listing or orphan scan ever
// shows it.
const AuditKey = "lockctl:audit"

// auditMaxLen bounds the audit stream (XADD MAXLEN ~).
const auditMaxLen = 10000

// tokenHashLen is the number of hex digits of SHA-1(token) shown as a
// lock's token hash: enough to tell holders apart, short enough to type.
const tokenHashLen = 12

// Options configure an Inspector. A nil *Options means all defaults.
type Options struct {
	// Prefix goes before every lock name; "" means lock.DefaultPrefix
	// unless RawKeys is set (the same rule as lock.Options).
	Prefix  string
	RawKeys bool
	// Count is the SCAN COUNT hint and so the batch size of pipelined
	// reads; 0 means 1000.
	Count int64
	// Clock is this host's clock, which doctor's clock check compares
	// the server's with; nil means time.Now.
	Clock func() time.Time
}

// Inspector reads the locks under one prefix.
type Inspector struct {
	c      redis.UniversalClient
	prefix string
	count  int64
	now    func() time.Time
}

// New returns an Inspector on c. opts may be nil.
func New(c redis.UniversalClient, opts *Options) *Inspector {
	if opts == nil {
		opts = &Options{}
	}
	in := &Inspector{c: c, prefix: opts.Prefix, count: opts.Count, now: opts.Clock}
	if in.now == nil {
		in.now = time.Now
	}
	if in.prefix == "" && !opts.RawKeys {
		in.prefix = lock.DefaultPrefix
	}
	if in.count <= 0 {
		in.count = 1000
	}
	return in
}

// Key is the Redis key of the lock called name.
func (in *Inspector) Key(name string) string { return in.prefix + name }

// Name is the lock name of key (key without the prefix).
func (in *Inspector) Name(key string) string { return strings.TrimPrefix(key, in.prefix) }

// Pattern turns a glob on lock names into a SCAN MATCH pattern on keys: the
// prefix is escaped (it is literal text), the glob is kept. "" means "*".
func (in *Inspector) Pattern(glob string) string {
	if glob == "" {
		glob = "*"
	}
	return escapeGlob(in.prefix) + glob
}

// Unscoped reports whether glob selects every key of the database: there is
// no prefix (raw keys) and glob is empty or wildcards only ("*", "?*"). Then
// every cache entry, session and counter without a TTL looks like an orphan
// lock, so callers that act on what a scan finds should refuse it.
func (in *Inspector) Unscoped(glob string) bool {
	return in.prefix == "" && strings.Trim(glob, "*?") == ""
}

// escapeGlob quotes the characters Redis glob patterns treat specially, so
// that s matches only itself.
func escapeGlob(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '*', '?', '[', ']', '\\', '^', '-':
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// TokenHash is the short hash a listing shows instead of a token: the first
// 12 hex digits of SHA-1(token). SHA-1 because Redis scripts can
// compute it (redis.sha1hex), so ForceRelease compares a hash atomically on
// the server; it identifies a holder, it is not a secret.
func TokenHash(token string) string {
	if token == "" {
		return ""
	}
	s := sha1.Sum([]byte(token))
	return hex.EncodeToString(s[:])[:tokenHashLen]
}

// isAux reports whether key is one of lockctl's auxiliary keys, which a
// custom prefix such as ” would otherwise match.
func isAux(key string) bool { return strings.HasPrefix(key, lockwire.AuxPrefix) }

// splitOwner splits lockctl's default owner "user@host:pid" into its parts;
// ok is false for any other shape (a custom --owner, a foreign lock).
func splitOwner(owner string) (user, host string, pid int, ok bool) {
	at := strings.IndexByte(owner, '@')
	colon := strings.LastIndexByte(owner, ':')
	if at <= 0 || colon <= at+1 || colon == len(owner)-1 {
		return "", "", 0, false
	}
	p, err := strconv.Atoi(owner[colon+1:])
	if err != nil || p <= 0 {
		return "", "", 0, false
	}
	return owner[:at], owner[at+1 : colon], p, true
}

// isRedisErr reports a reply error (WRONGTYPE and the like), as opposed to
// a failure to talk to the server.
func isRedisErr(err error) bool {
	var re redis.Error
	return errors.As(err, &re) && !errors.Is(err, redis.Nil)
}

// cmdErr is a command's error unless it is a nil reply or WRONGTYPE
// (expected when a batch probes keys of unknown type). Any other reply
// (NOPERM, LOADING, MOVED, ...) means the listing would be wrong: it is
// returned.
func cmdErr(c redis.Cmder) error {
	err := c.Err()
	if err == nil || errors.Is(err, redis.Nil) || redis.HasErrorPrefix(err, "WRONGTYPE") {
		return nil
	}
	return err
}

// clock estimates the server's time from one TIME reply plus the local
// monotonic clock, so that ages do not depend on the client's wall clock.
type clock struct {
	server time.Time
	local  time.Time
}

func (k clock) now() time.Time { return k.server.Add(time.Since(k.local)) }

func serverClock(ctx context.Context, c redis.Cmdable) (clock, error) {
	t, err := c.Time(ctx).Result()
	if err != nil {
		return clock{}, err
	}
	return clock{server: t, local: time.Now()}, nil
}

// pipeErr is a pipeline's error unless every failure in it is a reply
// (nil replies, WRONGTYPE), which the callers check command by command.
func pipeErr(err error) error {
	if err == nil || errors.Is(err, redis.Nil) || isRedisErr(err) {
		return nil
	}
	return err
}
