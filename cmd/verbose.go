package cmd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// verboseHook is -v's view of the Redis traffic: each connection dialled,
// each call with its duration and outcome, script loads. It shows command
// names and key names only, never values or arguments: tokens, passwords
// (AUTH, HELLO) and lock values are secrets or data.
type verboseHook struct {
	f    *Factory
	node string // the Redlock node, "" otherwise
}

func (h verboseHook) logf(format string, args ...any) {
	if h.node != "" {
		format = "[" + h.node + "] " + format
	}
	h.f.Verbosef("redis: "+format, args...)
}

func (h verboseHook) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		start := time.Now()
		conn, err := next(ctx, network, addr)
		if err != nil {
			h.logf("dial %s %s: failed after %s: %v", network, addr, elapsed(start), err)
			return nil, err
		}
		h.logf("dial %s %s: connected in %s", network, addr, elapsed(start))
		return conn, nil
	}
}

func (h verboseHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmd)
		h.logf("%s: %s in %s", describeCmd(cmd), outcome(err), elapsed(start))
		if err != nil && strings.HasPrefix(err.Error(), "NOSCRIPT") {
			h.logf("script %s is not cached on the server: sending it with EVAL", scriptSHA(cmd))
		}
		return err
	}
}

func (h verboseHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		start := time.Now()
		err := next(ctx, cmds)
		names := make([]string, 0, len(cmds))
		for _, c := range cmds {
			names = append(names, describeCmd(c))
		}
		const show = 6
		list := names
		if len(list) > show {
			list = append(list[:show:show], fmt.Sprintf("... %d more", len(names)-show))
		}
		h.logf("pipeline of %d [%s]: %s in %s", len(cmds), strings.Join(list, ", "), outcome(err), elapsed(start))
		return err
	}
}

// keyFirst are the commands lockctl sends whose first argument is a key.
var keyFirst = map[string]bool{
	"get": true, "set": true, "del": true, "unlink": true, "type": true, "pttl": true, "ttl": true,
	"exists": true, "pexpire": true, "expire": true, "persist": true, "incr": true, "incrby": true,
	"hgetall": true, "hget": true, "hscan": true, "zadd": true, "zrem": true, "zcard": true, "zrange": true,
	"zrangebyscore": true, "zscore": true, "zremrangebyscore": true, "xadd": true, "xrevrange": true,
	"xrange": true, "xlen": true, "llen": true, "lrange": true, "strlen": true,
}

// subcommandFirst are the commands whose first argument is a subcommand
// word (safe to show); what follows may be a secret (CONFIG SET requirepass).
var subcommandFirst = map[string]bool{"script": true, "client": true, "config": true, "info": true,
	"pubsub": true, "cluster": true, "command": true, "acl": true, "memory": true, "object": true}

// describeCmd names cmd for -v: the command, and its keys or subcommand
// where those are known not to be secret.
func describeCmd(cmd redis.Cmder) string {
	args := cmd.Args()
	name := strings.ToLower(cmd.Name())
	up := strings.ToUpper(name)
	switch {
	case (name == "evalsha" || name == "eval" || name == "evalsha_ro" || name == "eval_ro") && len(args) >= 3:
		s := up + " " + scriptSHA(cmd)
		n, _ := args[2].(int)
		for i := 0; i < n && 3+i < len(args); i++ {
			s += " " + fmt.Sprint(args[3+i])
		}
		return s
	case keyFirst[name] && len(args) >= 2:
		return up + " " + fmt.Sprint(args[1])
	case subcommandFirst[name] && len(args) >= 2:
		return up + " " + strings.ToUpper(fmt.Sprint(args[1]))
	case name == "scan" && len(args) >= 4:
		for i := 2; i+1 < len(args); i++ {
			if s, _ := args[i].(string); strings.EqualFold(s, "match") {
				return fmt.Sprintf("SCAN %v MATCH %v", args[1], args[i+1])
			}
		}
	}
	return up
}

// scriptSHA is the short SHA of an EVALSHA (or "(source)" for EVAL).
func scriptSHA(cmd redis.Cmder) string {
	args := cmd.Args()
	if len(args) < 2 || !strings.HasPrefix(strings.ToLower(cmd.Name()), "evalsha") {
		return "(source)"
	}
	s := fmt.Sprint(args[1])
	if len(s) > 12 {
		s = s[:12]
	}
	return s
}

func outcome(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, redis.Nil):
		return "nil reply"
	}
	return "error: " + err.Error()
}

func elapsed(start time.Time) string {
	d := time.Since(start)
	if d < time.Millisecond {
		return d.Round(time.Microsecond).String()
	}
	return d.Round(10 * time.Microsecond).String()
}

// announce says, under -v, which server this invocation talks to and how.
func (f *Factory) announce() {
	if !f.G.Verbose {
		return
	}
	s := f.target()
	switch s.Mode {
	case "redlock":
		f.Verbosef("server: redlock over %d masters (%s)", len(f.G.Redlock), redactList(f.G.Redlock))
	case "url":
		tls := ""
		if s.TLS {
			tls = ", TLS"
		}
		f.Verbosef("server: %s db %d (--url %s%s), timeout %s per call", s.Addr, s.DB, redactURL(f.G.URL), tls, f.G.Timeout)
	default:
		f.Verbosef("server: %s %s, timeout %s per call", s.Mode, s.Addr, f.G.Timeout)
	}
}

func redactList(urls []string) string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = redactURL(strings.TrimSpace(u))
	}
	return strings.Join(out, ",")
}
