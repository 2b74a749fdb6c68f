package inspect

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/lockctl/lockctl/pkg/once"
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
	// What was refused ends the message ("... to access the 'k' key",
	// "... a channel"); the command's own name (HKEYS) or a key's (one
	// holding "channel") says nothing.
	switch m := strings.TrimSpace(strings.ToLower(msg)); {
	case strings.Contains(m, "permissions to run"):
		return ""
	case strings.HasSuffix(m, " channel"):
		return "channel"
	case strings.HasSuffix(m, " key"):
		return "keys"
	case strings.Contains(m, "channel"):
		return "channel"
	case strings.Contains(m, "key"):
		return "keys"
	}
	return ""
}

// scratch names the keys doctor's checks name: a lock key, the audit and
// events streams, a rate-limit key and a once key. For ACL DRYRUN they are
// names like lockctl's own; for trying each command they are scratch keys
// no one else uses.
type scratch struct {
	key, audit, events, limit, once string
}

// keys are every key the checks may write, for the clean-up after trying.
func (s scratch) keys() []string {
	out := []string{s.key, s.audit, s.events, s.events + ":exporter", s.limit, s.once}
	for _, k := range []string{lockwire.KindFence, lockwire.KindQueue, lockwire.KindQueueHB, lockwire.KindSem, lockwire.KindSemVal, lockwire.KindChecked, lockwire.KindWriters} {
		out = append(out, lockwire.AuxKey(k, s.key))
	}
	return out
}

// evalsha is the SHA-1 of "return 1": EVALSHA of it names the keys as a
// script call does, and runs nothing.
const evalsha = "e0e1f9fabfc9d4800c877a703b823ac0578ff8db"

// scriptCall shapes a command that a script calls on key the way the
// scripts call it (arguments of the right kind: the values do not matter to
// an ACL); channel is the channel its PUBLISH names, stream the stream its
// XADD names.
func scriptCall(cmd, key, channel, stream string) []string {
	switch cmd {
	case "TIME":
		return []string{cmd}
	case "SET":
		return []string{cmd, key, "v"}
	case "PEXPIRE":
		return []string{cmd, key, "1000"}
	case "ZADD":
		return []string{cmd, key, "1", "m"}
	case "ZSCORE", "ZRANK", "ZREM", "HGET", "HDEL", "HMGET":
		return []string{cmd, key, "m"}
	case "ZCOUNT", "ZRANGEBYSCORE", "ZREMRANGEBYSCORE":
		return []string{cmd, key, "-inf", "0"}
	case "ZRANGE":
		return []string{cmd, key, "0", "-1"}
	case "LINDEX":
		return []string{cmd, key, "0"}
	case "HSET":
		return []string{cmd, key, "m", "v"}
	case "PUBLISH":
		return []string{cmd, channel, "released"}
	case "XADD":
		return []string{cmd, stream, "MAXLEN", "~", "1000", "*", "who", "lockctl doctor"}
	case "XDEL":
		return []string{cmd, stream, "0-1"}
	}
	return []string{cmd, key}
}

// family adds the needs of one command family whose scripts (listed by
// the package that runs them) call cmds on key: EVALSHA and EVAL naming
// key, then each command as the scripts call it.
func family(use, key, channel, stream string, cmds []string) []need {
	n := []need{
		{[]string{"EVALSHA", evalsha, "1", key}, use},
		{[]string{"EVAL", "return 1", "1", key}, use},
	}
	for _, c := range cmds {
		if c == "SPUBLISH" {
			// Called with redis.pcall for Redisson's sharded waiters: a
			// refusal is ignored like the missing command of an older
			// server.
			continue
		}
		n = append(n, need{scriptCall(c, key, channel, stream), use})
	}
	return n
}

// needs lists what lockctl sends, command family by command family, with
// every argument naming one of s's keys, one of their auxiliary keys or
// channels, so that a user's key and channel patterns are checked as
// lockctl's calls meet them; every write is harmless on keys that hold
// nothing. The commands the scripts call come from the scripts themselves
// (lock.ScriptCommands, limit.ScriptCommands, once.ScriptCommands,
// inspectScriptCommands): a command a script starts calling is checked,
// and granted by the hint, without anyone updating a list.
func needs(s scratch) []need {
	key := s.key
	fence, queue, sem := lockwire.AuxKey(lockwire.KindFence, key), lockwire.AuxKey(lockwire.KindQueue, key), lockwire.AuxKey(lockwire.KindSem, key)
	semval, ch := lockwire.AuxKey(lockwire.KindSemVal, key), lockwire.Channel(key)
	n := []need{
		{args: []string{"EVALSHA", evalsha, "2", key, fence}},
		{args: []string{"EVAL", "return 1", "2", key, fence}},
	}
	// What the lock scripts call, on the keys each call names.
	aux := map[string][]string{
		"GET": {key, lockwire.AuxKey(lockwire.KindChecked, key), fence}, "SET": {key, fence},
		"INCR": {fence}, "EXISTS": {key, sem},
		"ZADD": {sem, queue}, "ZSCORE": {sem}, "ZRANK": {queue}, "ZCARD": {queue, sem}, "ZCOUNT": {sem},
		"ZRANGE": {queue}, "ZRANGEBYSCORE": {queue, sem}, "ZREMRANGEBYSCORE": {queue, sem}, "ZREM": {sem, queue},
		"HSET": {semval}, "HGET": {semval}, "HLEN": {semval}, "HGETALL": {semval}, "HDEL": {semval},
		"DEL": {key, fence, sem, semval},
	}
	for _, c := range lock.ScriptCommands() {
		keys, ok := aux[c]
		if !ok {
			keys = []string{key}
		}
		for _, k := range keys {
			n = append(n, need{args: scriptCall(c, k, ch, s.audit)})
		}
	}
	// A release that names the next waiter publishes on that waiter's own
	// channel, which the waiter subscribes to (wake.lua, wait.go): a user
	// granted only the release channel's pattern gets no targeted wake-up.
	wake := lockwire.WaiterChannel(key, "lockctl-doctor")
	n = append(n,
		need{[]string{"SUBSCRIBE", ch}, "prompt wake-ups; waiters poll without it"},
		need{[]string{"PUBLISH", wake, "next"}, "targeted wake-ups; releases warn and waiters poll without it"},
		need{[]string{"SUBSCRIBE", wake}, "targeted wake-ups; releases warn and waiters poll without it"},
		need{[]string{"PING"}, "checking the wake-up connection"},
		// A waiter sleeps on its own wake-up stream, which the release
		// scripts append to (XADD, checked with the scripts' commands).
		need{[]string{"XREAD", "COUNT", "1", "STREAMS", lockwire.WakeKey(key, "lockctl-doctor"), "0"}, "waiting on one connection; waiters poll without it"},
		need{[]string{"WAIT", "0", "0"}, "--wait-replicas"},
	)
	n = append(n, family("limit", s.limit, "", "", limit.ScriptCommands())...)
	n = append(n, family("once", s.once, "", "", once.ScriptCommands())...)
	n = append(n, family("inspect force-release, orphans --fix", key, ch, s.audit, inspectScriptCommands())...)
	return append(n,
		need{[]string{"SCRIPT", "LOAD", "return 1"}, "inspect orphans --fix"},
		need{[]string{"SCAN", "0", "MATCH", key, "COUNT", "10"}, "inspect"},
		need{[]string{"TYPE", key}, "inspect"},
		need{[]string{"PTTL", key}, "inspect"},
		need{[]string{"GET", fence}, "inspect"},
		need{[]string{"ZCARD", queue}, "inspect"},
		need{[]string{"ZRANGE", lockwire.AuxKey(lockwire.KindQueueHB, key), "0", "-1", "WITHSCORES"}, "inspect"},
		need{[]string{"HGETALL", semval}, "inspect"},
		need{[]string{"PUBSUB", "NUMSUB", ch}, "inspect"},
		need{[]string{"PUBSUB", "SHARDNUMSUB", ch}, "inspect"},
		need{[]string{"HSCAN", key, "0"}, "inspect"},
		need{[]string{"LLEN", key}, "inspect"},
		need{[]string{"LRANGE", key, "0", "-1"}, "inspect"},
		need{[]string{"XADD", s.audit, "*", "who", "lockctl doctor"}, "inspect force-release"},
		need{[]string{"XRANGE", s.audit, "-", "+", "COUNT", "1"}, "inspect audit"},
		need{[]string{"XREVRANGE", s.audit, "+", "-", "COUNT", "1"}, "inspect audit"},
		need{[]string{"XADD", s.events, "MAXLEN", "~", "1000", "*", "who", "lockctl doctor"}, "events (monitoring)"},
		need{[]string{"XRANGE", s.events, "-", "+", "COUNT", "1"}, "exporter"},
		need{[]string{"XREVRANGE", s.events, "+", "-", "COUNT", "1"}, "exporter"},
		need{[]string{"GET", s.events + ":exporter"}, "exporter"},
		need{[]string{"SET", s.events + ":exporter", "v"}, "exporter"},
		need{[]string{"DEL", s.audit}, "inspect force-release"},
	)
}

// names is the scratch of ACL DRYRUN: names like lockctl's own.
func (in *Inspector) names() scratch {
	return scratch{key: in.Key("lockctl-doctor"), audit: AuditKey, events: events.DefaultKey,
		limit: limit.DefaultPrefix + "lockctl-doctor", once: once.DefaultPrefix + "lockctl-doctor"}
}

// Commands returns the commands lockctl sends, with arguments shaped like
// its own (keys under the prefix and in lockctl's auxiliary space), as ACL
// DRYRUN takes them.
func (in *Inspector) commands() [][]string {
	var out [][]string
	for _, n := range needs(in.names()) {
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
		ck.Hint = "check by hand that the user may run " + strings.Join(commandNames(in.commands()), " ")
		return ck
	}
	denied = scriptAlternatives(denied)
	who := "user " + user
	if user == "" {
		who, user = "this user", "<user>"
	}
	if len(denied) == 0 {
		ck.Status, ck.Message = StatusOK, fmt.Sprintf("%s may run every command lockctl uses (%s)", who, how)
		return ck
	}
	// Required commands by name; the others grouped by the feature that
	// needs them, each command or refused key space said once.
	var required, grants, uses []string
	byUse := map[string][]string{}
	granted, said := map[string]bool{}, map[string]bool{}
	for _, d := range denied {
		name := commandName(d.args)
		if d.what == "" && !granted[name] {
			granted[name] = true
			grants = append(grants, "+"+strings.ToLower(strings.ReplaceAll(name, " ", "|")))
		}
		if d.use == "" {
			item := name
			if d.what != "" {
				item += " (its " + d.what + ")"
			}
			if !said[item] {
				said[item] = true
				required = append(required, item)
			}
			continue
		}
		item := name
		if d.what != "" {
			item = "its " + d.what
		}
		if said[item] || said[d.use+"\x00"+item] {
			continue // a required command already named
		}
		said[d.use+"\x00"+item] = true
		if _, ok := byUse[d.use]; !ok {
			uses = append(uses, d.use)
		}
		byUse[d.use] = append(byUse[d.use], item)
	}
	var optional []string
	for _, u := range uses {
		optional = append(optional, u+" ("+strings.Join(byUse[u], ", ")+")")
	}
	ck.Hint = fmt.Sprintf("ACL SETUSER %s %s~%s ~%s* ~%s* ~%s* &%s*", user, strings.Join(append(grants, ""), " "),
		in.Pattern("*"), lockwire.AuxPrefix, limit.DefaultPrefix, once.DefaultPrefix, lockwire.AuxPrefix)
	switch {
	case len(required) > 0:
		ck.Status = StatusFail
		ck.Message = fmt.Sprintf("%s may not run %s: every lock fails with NOPERM", who, strings.Join(required, ", "))
		if len(optional) > 0 {
			ck.Message += "; nor use " + strings.Join(optional, ", ")
		}
	default:
		ck.Status = StatusWarn
		ck.Message = fmt.Sprintf("%s may take locks but not use %s", who, strings.Join(optional, ", "))
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
	for _, n := range needs(in.names()) {
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
	sc := scratch{key: in.Key("lockctl-doctor-" + id), audit: lockwire.AuxPrefix + "doctor:" + id,
		events: lockwire.AuxPrefix + "doctor-events:" + id,
		limit:  limit.DefaultPrefix + "lockctl-doctor-" + id, once: once.DefaultPrefix + "lockctl-doctor-" + id}
	defer func() {
		// Detached: an interrupted doctor leaves nothing behind either.
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		for _, k := range sc.keys() {
			in.c.Del(cctx, k)
		}
	}()
	var denied []denial
	for _, n := range needs(sc) {
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
	// A probe: the confirmation or refusal is the answer, not the close.
	defer func() { _ = ps.Close() }()
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

// scriptAlternatives drops the refusal of EVALSHA where EVAL is allowed on
// the same keys, and of EVAL where EVALSHA and SCRIPT LOAD are: lockctl
// runs its scripts with whichever of the two the server allows
// (internal/lib/luascript). Both refused stay refused.
func scriptAlternatives(denied []denial) []denial {
	refused := map[string]bool{}
	for _, d := range denied {
		if d.what == "" {
			refused[strings.Join(d.args, "\x00")] = true
		}
	}
	twin := func(args []string) []string {
		switch args[0] {
		case "EVALSHA":
			return append([]string{"EVAL", "return 1"}, args[2:]...)
		case "EVAL":
			return append([]string{"EVALSHA", evalsha}, args[2:]...)
		}
		return nil
	}
	loadRefused := refused[strings.Join([]string{"SCRIPT", "LOAD", "return 1"}, "\x00")]
	out := denied[:0:0]
	for _, d := range denied {
		if t := twin(d.args); d.what == "" && t != nil && !refused[strings.Join(t, "\x00")] &&
			(d.args[0] == "EVALSHA" || !loadRefused) {
			continue
		}
		out = append(out, d)
	}
	return out
}
