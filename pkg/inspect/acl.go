package inspect

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// need is a command lockctl sends, with arguments shaped like its own, and
// what it is for: "" when every lock needs it, else the one feature that
// does (without it, only that feature fails).
type need struct {
	args []string
	use  string
}

// denial is a need the server refused, and what it refused: "" the command
// itself, "keys" or "channel" the keys or channel it names.
type denial struct {
	need
	what string
}

// deniedWhat reads what a NOPERM reply (or ACL DRYRUN's answer) refused.
func deniedWhat(msg string) string {
	switch m := strings.ToLower(msg); {
	case strings.Contains(m, "channel"):
		return "channel"
	case strings.Contains(m, "key"):
		return "keys"
	}
	return ""
}

// needs lists what lockctl sends for a lock at key, its audit records going
// to stream. Every argument names key, one of its auxiliary keys or stream,
// so that a user's key patterns are checked as lockctl's calls meet them,
// and every write is harmless on keys that hold nothing.
func needs(key, stream string) []need {
	fence, queue, sem := lock.AuxKey(lock.KindFence, key), lock.AuxKey(lock.KindQueue, key), lock.AuxKey(lock.KindSem, key)
	semval, checked, ch := lock.AuxKey(lock.KindSemVal, key), lock.AuxKey(lock.KindChecked, key), lock.Channel(key)
	const sha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db" // SHA-1 of "return 1"
	n := []need{
		{args: []string{"EVALSHA", sha, "2", key, fence}},
		{args: []string{"EVAL", "return 1", "2", key, fence}},
	}
	// What the scripts call (lock.ScriptCommands; a test keeps the two
	// lists in step).
	for _, a := range [][]string{
		{"TYPE", key},
		{"GET", key},
		{"GET", checked},
		{"SET", key, "v", "NX", "PX", "1000"},
		{"PEXPIRE", key, "1000"},
		{"PTTL", key},
		{"EXISTS", key, sem},
		{"SET", fence, "1", "GET"},
		{"INCR", fence},
		{"TIME"},
		{"PUBLISH", ch, "released"},
		{"ZADD", sem, "1", "m"},
		{"ZSCORE", sem, "m"},
		{"ZRANK", queue, "m"},
		{"ZCARD", queue},
		{"ZCOUNT", sem, "-inf", "+inf"},
		{"ZRANGE", queue, "0", "-1"},
		{"ZRANGEBYSCORE", queue, "-inf", "0"},
		{"ZREMRANGEBYSCORE", queue, "-inf", "0"},
		{"ZREM", sem, "m"},
		{"HSET", semval, "m", "v"},
		{"HGET", semval, "m"},
		{"HLEN", semval},
		{"HGETALL", semval},
		{"HDEL", semval, "m"},
		{"DEL", key, fence, sem, semval},
	} {
		n = append(n, need{args: a})
	}
	return append(n,
		need{[]string{"SUBSCRIBE", ch}, "prompt wake-ups; waiters poll without it"},
		need{[]string{"PING"}, "checking the wake-up connection"},
		need{[]string{"WAIT", "0", "0"}, "--wait-replicas"},
		need{[]string{"SCAN", "0", "MATCH", key, "COUNT", "10"}, "inspect"},
		need{[]string{"PUBSUB", "NUMSUB", ch}, "inspect"},
		need{[]string{"HSCAN", key, "0"}, "inspect"},
		need{[]string{"LLEN", key}, "inspect"},
		need{[]string{"LRANGE", key, "0", "-1"}, "inspect"},
		need{[]string{"XADD", stream, "*", "who", "lockctl doctor"}, "inspect force-release"},
		need{[]string{"XRANGE", stream, "-", "+", "COUNT", "1"}, "inspect audit"},
		need{[]string{"DEL", stream}, "inspect force-release"},
	)
}

// Commands returns the commands lockctl sends, with arguments shaped like
// its own (keys under the prefix and in lockctl's auxiliary space), as ACL
// DRYRUN takes them.
func (in *Inspector) Commands() [][]string {
	var out [][]string
	for _, n := range needs(in.Key("lockctl-doctor"), AuditKey) {
		out = append(out, n.args)
	}
	return out
}

// aclCheck finds out whether the connected user may run every command
// lockctl uses: by ACL DRYRUN (Redis 7) when the user may run it, otherwise
// by running each of them on scratch keys of its own. A required command
// denied fails the check, since no lock can then be taken; a command that
// only one feature needs warns.
func (in *Inspector) aclCheck(ctx context.Context, dryrun bool) Check {
	ck := Check{Check: "acl"}
	user, denied, how, err := "", []denial(nil), "", error(nil)
	if dryrun {
		user, denied, err = in.dryRun(ctx)
		how = "ACL DRYRUN"
	}
	if !dryrun || err != nil {
		// ACL WHOAMI and DRYRUN are admin commands an application user
		// rarely has; trying the commands themselves needs nothing more.
		user, how = "", "trying each command"
		denied, err = in.probe(ctx)
	}
	if err != nil {
		ck.Status, ck.Message = StatusWarn, fmt.Sprintf("cannot verify permissions: %v", err)
		ck.Hint = "check by hand that the user may run " + strings.Join(commandNames(in.Commands()), " ")
		return ck
	}
	who := "user " + user
	if user == "" {
		who, user = "this user", "<user>"
	}
	if len(denied) == 0 {
		ck.Status, ck.Message = StatusOK, fmt.Sprintf("%s may run every command lockctl uses (%s)", who, how)
		return ck
	}
	var required, optional, grants []string
	seen := map[string]bool{}
	for _, d := range denied {
		name := commandName(d.args)
		if d.what != "" {
			name += " (its " + d.what + ")"
		}
		if seen[name] {
			continue
		}
		seen[name] = true
		if d.what == "" {
			grants = append(grants, "+"+strings.ToLower(strings.ReplaceAll(name, " ", "|")))
		}
		if d.use == "" {
			required = append(required, name)
		} else {
			optional = append(optional, name+" ("+d.use+")")
		}
	}
	ck.Hint = fmt.Sprintf("ACL SETUSER %s %s~%s ~%s* &%s*", user, strings.Join(append(grants, ""), " "), in.Pattern("*"), lock.AuxPrefix, lock.AuxPrefix)
	switch {
	case len(required) > 0:
		ck.Status = StatusFail
		ck.Message = fmt.Sprintf("%s may not run %s: every lock fails with NOPERM", who, strings.Join(required, ", "))
		if len(optional) > 0 {
			ck.Message += "; nor " + strings.Join(optional, ", ")
		}
	default:
		ck.Status = StatusWarn
		ck.Message = fmt.Sprintf("%s may take locks but not run %s", who, strings.Join(optional, ", "))
	}
	return ck
}

// dryRun asks ACL DRYRUN about every command for the connected user.
func (in *Inspector) dryRun(ctx context.Context) (string, []denial, error) {
	user, err := in.c.Do(ctx, "ACL", "WHOAMI").Text()
	if err != nil {
		return "", nil, err
	}
	var denied []denial
	for _, n := range needs(in.Key("lockctl-doctor"), AuditKey) {
		a := append([]any{"ACL", "DRYRUN", user}, toAny(n.args)...)
		res, err := in.c.Do(ctx, a...).Text()
		if err != nil {
			return "", nil, err
		}
		if res != "OK" {
			denied = append(denied, denial{n, deniedWhat(res)})
		}
	}
	return user, denied, nil
}

// probe runs every command on scratch keys no one else uses (a random lock
// name, and a stream of its own instead of the audit stream) and reports
// those the server refused with NOPERM. Any other error reply (NOSCRIPT,
// say) means the command was allowed. The scratch keys are deleted again.
func (in *Inspector) probe(ctx context.Context) ([]denial, error) {
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(b[:])
	key := in.Key("lockctl-doctor-" + id)
	stream := lock.AuxPrefix + "doctor:" + id
	defer func() {
		// Detached: an interrupted doctor leaves nothing behind either.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		for _, k := range []string{key, lock.AuxKey(lock.KindFence, key), lock.AuxKey(lock.KindSem, key), lock.AuxKey(lock.KindSemVal, key), stream} {
			in.c.Del(cctx, k)
		}
	}()
	var denied []denial
	for _, n := range needs(key, stream) {
		var err error
		if n.args[0] == "SUBSCRIBE" {
			err = in.trySubscribe(ctx, n.args[1])
		} else {
			err = in.c.Do(ctx, toAny(n.args)...).Err()
		}
		switch {
		case err == nil || err == redis.Nil:
		case isNoPerm(err):
			denied = append(denied, denial{n, deniedWhat(err.Error())})
		case ctx.Err() != nil:
			return nil, ctx.Err()
		default:
			if _, ok := err.(redis.Error); !ok {
				return nil, err // the connection, not the permission
			}
		}
	}
	return denied, nil
}

// trySubscribe subscribes to channel on a connection of its own and waits
// for the server's confirmation or refusal.
func (in *Inspector) trySubscribe(ctx context.Context, channel string) error {
	sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	ps := in.c.Subscribe(sctx, channel)
	defer ps.Close()
	_, err := ps.Receive(sctx)
	return err
}

func isNoPerm(err error) bool {
	return strings.HasPrefix(err.Error(), "NOPERM")
}

// commandName is how a command is named in ACL rules: with its subcommand
// for container commands.
func commandName(args []string) string {
	name := strings.ToUpper(args[0])
	if (name == "SCRIPT" || name == "PUBSUB") && len(args) > 1 {
		name += " " + strings.ToUpper(args[1])
	}
	return name
}

func commandNames(cmds [][]string) []string {
	var names []string
	seen := map[string]bool{}
	for _, c := range cmds {
		if n := commandName(c); !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	return names
}
