// Package luascript runs lockctl's Lua scripts on servers that refuse one
// of EVALSHA and EVAL: managed Redis offerings rename or disable commands
// (rename-command EVALSHA ""), and an ACL may allow one and not the other
// (-evalsha +eval). go-redis's Script.Run falls back from EVALSHA to EVAL
// only on NOSCRIPT; a refused command is no NOSCRIPT, so every call would
// fail although the other command works.
//
// A refused command runs nothing, so trying the other one never leaves a
// script half-done. What a client's server refused is remembered per
// client, so later calls go straight to the command that works.
package luascript

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

// Script is a Lua script run with EVALSHA, falling back to EVAL when the
// script is not loaded (NOSCRIPT) or EVALSHA is refused, and to SCRIPT
// LOAD then EVALSHA when EVAL is refused.
type Script struct {
	hash string
	src  func() string
}

// New returns the Script of src.
func New(src string) *Script {
	return &Script{hash: Hash(src), src: func() string { return src }}
}

// Hashed returns the Script of the source src returns, whose SHA1 (Hash)
// is hash, computed ahead: src is called only when the source itself must
// be sent (EVAL, SCRIPT LOAD), so a script the server has loaded costs no
// building or hashing of its source. A caller keeps hash true to src with
// a test.
func Hashed(hash string, src func() string) *Script {
	return &Script{hash: hash, src: sync.OnceValue(src)}
}

// Hash is the SHA1 of src as EVALSHA names a script: lower-case hex.
func Hash(src string) string {
	h := sha1.Sum([]byte(src))
	return hex.EncodeToString(h[:])
}

// Hash is the script's SHA1.
func (s *Script) Hash() string { return s.hash }

// Source is the script's source.
func (s *Script) Source() string { return s.src() }

// EvalSha runs the script by its SHA1.
func (s *Script) EvalSha(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return c.EvalSha(ctx, s.hash, keys, args...)
}

// Eval runs the script by its source.
func (s *Script) Eval(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	return c.Eval(ctx, s.src(), keys, args...)
}

// Load loads the script (SCRIPT LOAD).
func (s *Script) Load(ctx context.Context, c redis.Scripter) *redis.StringCmd {
	return c.ScriptLoad(ctx, s.src())
}

// refusals is what a client's server refused: EVALSHA, EVAL.
type refusals struct {
	sha, eval atomic.Bool
}

// seen holds the refusals of clients whose server refused EVALSHA or
// EVAL, keyed by the client. Only such clients have an entry: on a server
// that runs both (nearly all) nothing is kept.
var seen sync.Map // redis.Scripter -> *refusals

func lookup(c redis.Scripter) *refusals {
	if r, ok := seen.Load(c); ok {
		return r.(*refusals)
	}
	return nil
}

func remember(c redis.Scripter) *refusals {
	r, _ := seen.LoadOrStore(c, &refusals{})
	return r.(*refusals)
}

// ShaRefused reports whether c's server is known to refuse EVALSHA, for
// callers that queue a script in a pipeline of their own.
func ShaRefused(c redis.Scripter) bool {
	r := lookup(c)
	return r != nil && r.sha.Load()
}

// EvalRefused reports whether c's server is known to refuse EVAL: a
// pipeline of the caller's must then load the script and use EVALSHA.
func EvalRefused(c redis.Scripter) bool {
	r := lookup(c)
	return r != nil && r.eval.Load()
}

// Refused reports whether err is a server's refusal of the command name
// ("evalsha", "eval"): unknown (renamed or disabled) or not allowed by
// the ACL. It remembers the refusal for c, so that later calls on c go
// straight to the other command.
func Refused(c redis.Scripter, err error, name string) bool {
	if !refused(err, name) {
		return false
	}
	r := remember(c)
	if name == "evalsha" {
		r.sha.Store(true)
	} else {
		r.eval.Store(true)
	}
	return true
}

// refused: "ERR unknown command 'evalsha', with args beginning with: ..."
// (renamed or disabled), "NOPERM User u has no permissions to run the
// 'evalsha' command" (ACL; Redis 6 says "this user has no permissions").
func refused(err error, name string) bool {
	if err == nil {
		return false
	}
	var rerr redis.Error
	if !errors.As(err, &rerr) || errors.Is(err, redis.Nil) {
		return false
	}
	msg := strings.ToLower(rerr.Error())
	quoted := "'" + name + "'"
	return (strings.HasPrefix(msg, "err unknown command "+quoted) || strings.HasPrefix(msg, "noperm")) &&
		strings.Contains(msg, quoted)
}

// Run runs the script on c with keys and args.
func (s *Script) Run(ctx context.Context, c redis.Scripter, keys []string, args ...any) *redis.Cmd {
	r := lookup(c)
	sha := r == nil || !r.sha.Load()
	eval := r == nil || !r.eval.Load()
	if sha {
		cmd := s.EvalSha(ctx, c, keys, args...)
		switch err := cmd.Err(); {
		case Refused(c, err, "evalsha"):
			sha = false
		case !redis.HasErrorPrefix(err, "NOSCRIPT"):
			return cmd
		}
	}
	if eval || !sha {
		cmd := s.Eval(ctx, c, keys, args...)
		if !Refused(c, cmd.Err(), "eval") || !sha {
			// Ran, failed otherwise, or both commands are refused:
			// EVAL's reply says so.
			return cmd
		}
	}
	// EVAL is refused, EVALSHA allowed but the script not loaded yet.
	if err := s.Load(ctx, c).Err(); err != nil {
		// SCRIPT LOAD refused too: nothing can run the script, and
		// EVAL's refusal is the clearest account of why.
		return s.Eval(ctx, c, keys, args...)
	}
	return s.EvalSha(ctx, c, keys, args...)
}
