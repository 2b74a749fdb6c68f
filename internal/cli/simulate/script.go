package simulate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/parse"
)

// ScriptTimeout bounds a learner's script in wall time. Redis itself would
// keep running a script that never returns and, after its
// busy-reply-threshold (5 s), answer BUSY to every other client until
// SCRIPT KILL; the simulation stops it instead and reports it.
const ScriptTimeout = time.Second

// scriptGrace is how long past ScriptTimeout a script stuck inside one Go
// call is waited for before the run gives up on it; the sandbox's bounds
// keep every call far shorter.
const scriptGrace = time.Second

// Script is a learner's Lua script, run in place of lockctl's own release
// (or renew) the way Redis runs EVAL: KEYS[1] is the lock key, ARGV[1] the
// caller's token (ARGV[2] the TTL in ms, for a renew script), and
// redis.call, redis.pcall, redis.error_reply and redis.status_reply work as
// in Redis. It runs in a sandbox on the embedded server only (see
// sandbox.go).
type Script struct {
	Name  string // the file name, shown in the timeline
	proto *lua.FunctionProto
}

// ErrScript is the error of a script that does not compile.
var ErrScript = errors.New("simulate: script")

// CompileScript parses src; a syntax error is an ErrScript naming the line.
func CompileScript(name, src string) (*Script, error) {
	base := filepath.Base(name)
	if len(src) > maxSource {
		return nil, fmt.Errorf("%w %s: %d bytes, over the sandbox's %s", ErrScript, name, len(src), bytesText(maxSource))
	}
	chunk, err := parse.Parse(strings.NewReader(src), base)
	if err != nil {
		msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), `\n`, " ")), " ")
		return nil, fmt.Errorf("%w %s: %s", ErrScript, name, msg)
	}
	if chunk, err = guardConcat(chunk); err != nil {
		return nil, fmt.Errorf("%w %s %v", ErrScript, name, err)
	}
	proto, err := lua.Compile(chunk, base)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %v", ErrScript, name, err)
	}
	return &Script{Name: base, proto: proto}, nil
}

// scriptRun is what one call of a learner's script did.
type scriptRun struct {
	reply   string   // the reply as shown, "(error) ..." for a failure
	failed  string   // why the script failed ("" when it returned)
	trace   []string // the commands it sent and their replies
	timeout bool
	oom     bool

	deletedOther string // whose lock a release deleted, if not its caller's
	keptOwn      bool   // a release left its caller's own lock
}

// scriptCall is one call of a learner's script under way: what it did so
// far, and whether the replay gave up on it. mu guards both, since a script
// given up on may still be running.
type scriptCall struct {
	e     *env
	n     *node
	inner context.Context // for the script's own commands: unrecorded

	mu        sync.Mutex
	out       scriptRun
	abandoned bool
}

// scriptResult is what the Lua state returned, or why it failed.
type scriptResult struct {
	err   error
	value lua.LValue
}

// runScript runs s on node n as EVAL with keys and argv would, recorded
// as one step of actor; the commands inside are listed in the step's note.
// The script runs on a goroutine of its own, so that a run stuck inside
// one Go call past every bound is given up on instead of stalling the
// replay; sc.mu keeps such a script from touching the run afterwards.
func (e *env) runScript(ctx context.Context, n *node, s *Script, keys, argv []string) scriptRun {
	sc := &scriptCall{e: e, n: n}
	// The script's own commands are sent unrecorded: the timeline shows
	// the EVAL, as Redis runs the script as one command.
	sc.inner = context.WithValue(context.WithoutCancel(ctx), actorKey{}, "")
	sctx, cancel := context.WithTimeout(ctx, ScriptTimeout)
	defer cancel()
	sandboxMu.Lock() // one script at a time: the memory watch reads the whole heap
	defer sandboxMu.Unlock()

	ls, concat := newSandbox(sc.print)
	ls.SetContext(sctx)
	ls.SetGlobal("KEYS", luaStrings(ls, keys))
	ls.SetGlobal("ARGV", luaStrings(ls, argv))
	ls.SetGlobal("redis", sc.redisLib(ls))

	watch := watchMemory(cancel)
	done := callProto(ls, s.proto, concat)
	grace := time.NewTimer(ScriptTimeout + scriptGrace)
	defer grace.Stop()
	var r scriptResult
	select {
	case r = <-done:
		defer ls.Close()
	case <-grace.C:
		// Stuck in one call: leave the state to its goroutine, which
		// may no longer send anything.
		sc.mu.Lock()
		sc.abandoned = true
		sc.mu.Unlock()
		r.err = context.DeadlineExceeded
	}
	over := watch.end()
	sc.mu.Lock()
	defer sc.mu.Unlock()
	return e.scriptOutcome(n, sc.out, r, over, (sctx.Err() != nil || sc.abandoned) && ctx.Err() == nil)
}

// print is the script's print: a line of the trace.
func (sc *scriptCall) print(line string) {
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if !sc.abandoned {
		sc.out.trace = append(sc.out.trace, line)
	}
}

func luaStrings(ls *lua.LState, xs []string) *lua.LTable {
	t := ls.NewTable()
	for _, x := range xs {
		t.Append(lua.LString(x))
	}
	return t
}

// redisLib is the script's redis table: call and pcall send to sc's node,
// the rest as Redis's own.
func (sc *scriptCall) redisLib(ls *lua.LState) *lua.LTable {
	rlib := ls.NewTable()
	ls.SetFuncs(rlib, map[string]lua.LGFunction{
		"call":  sc.call(false),
		"pcall": sc.call(true),
		"error_reply": func(ls *lua.LState) int {
			t := ls.NewTable()
			t.RawSetString("err", lua.LString(ls.CheckString(1)))
			ls.Push(t)
			return 1
		},
		"status_reply": func(ls *lua.LState) int {
			t := ls.NewTable()
			t.RawSetString("ok", lua.LString(ls.CheckString(1)))
			ls.Push(t)
			return 1
		},
		"log": func(*lua.LState) int { return 0 },
	})
	return rlib
}

// call is redis.call (redis.pcall when protected: an error reply is
// returned as a table rather than raised), traced.
func (sc *scriptCall) call(protected bool) lua.LGFunction {
	return func(ls *lua.LState) int {
		var args []interface{}
		for i := 1; i <= ls.GetTop(); i++ {
			switch v := ls.Get(i).(type) {
			case lua.LString:
				args = append(args, string(v))
			case lua.LNumber:
				args = append(args, v.String())
			default:
				ls.RaiseError("Lua redis lib command arguments must be strings or integers")
			}
		}
		if len(args) == 0 {
			ls.RaiseError("Please specify at least one argument for this redis lib call")
		}
		sc.mu.Lock()
		defer sc.mu.Unlock()
		if sc.abandoned {
			ls.RaiseError("stopped")
		}
		cmd := redis.NewCmd(sc.inner, args...)
		if msg := refuseCommand(args[0].(string)); msg != "" {
			cmd.SetErr(refused(msg))
		} else {
			_ = sc.n.rdb.Process(sc.inner, cmd) // the reply and its error are read below
		}
		shown := sc.e.showReply(sc.n, cmd)
		sc.out.trace = append(sc.out.trace, sc.e.showCommand(sc.n, args)+" → "+shown)
		v, err := cmd.Result()
		switch {
		case err == redis.Nil:
			ls.Push(lua.LFalse)
		case err != nil && protected:
			t := ls.NewTable()
			t.RawSetString("err", lua.LString(err.Error()))
			ls.Push(t)
		case err != nil:
			ls.RaiseError("%s", err.Error())
		default:
			ls.Push(toLua(ls, v))
		}
		return 1
	}
}

// callProto runs proto's function with concat as its argument, on a
// goroutine of its own, and delivers its result (a panic as an error).
func callProto(ls *lua.LState, proto *lua.FunctionProto, concat lua.LValue) <-chan scriptResult {
	done := make(chan scriptResult, 1)
	go func() {
		var r scriptResult
		defer func() {
			if p := recover(); p != nil {
				r.err = fmt.Errorf("%v", p)
			}
			done <- r
		}()
		ls.Push(ls.NewFunctionFromProto(proto))
		ls.Push(concat)
		r.err = ls.PCall(1, 1, nil)
		if r.err == nil {
			r.value = ls.Get(-1)
		}
	}()
	return done
}

// scriptOutcome completes out by the script's result r: its reply, or why
// it failed (over: past the memory bound; timedOut: past the time bound).
func (e *env) scriptOutcome(n *node, out scriptRun, r scriptResult, over, timedOut bool) scriptRun {
	switch {
	case over:
		out.oom = true
		out.failed = fmt.Sprintf("ran out of memory: past the sandbox's %s, stopped", bytesText(ScriptMemory))
	case timedOut:
		out.timeout = true
		out.failed = fmt.Sprintf("ran out of time: still running after %s, stopped; Redis would answer BUSY to every client until SCRIPT KILL", ScriptTimeout)
	case r.err != nil:
		msg := errorText(r.err)
		if i := strings.Index(msg, "\nstack traceback"); i >= 0 {
			msg = msg[:i]
		}
		if i := strings.Index(msg, outOfMemory); i >= 0 {
			out.oom = true
			msg = "ran " + msg[i:]
		} else if i := strings.Index(msg, "out of time: "); i >= 0 {
			out.timeout = true
			msg = "ran " + msg[i:]
		}
		out.failed = strings.TrimSpace(shorten(e.strip(msg)))
	}
	if out.failed != "" {
		out.reply = "(error) " + out.failed
		return out
	}
	out.reply = fromLua(e, n, r.value)
	if strings.HasPrefix(out.reply, "(error) ") {
		out.failed = strings.TrimPrefix(out.reply, "(error) ")
	}
	return out
}

// refused is the error reply of a command the sandbox does not send.
type refused string

func (r refused) Error() string { return string(r) }

// RedisError marks it as a server's reply (redis.Error).
func (refused) RedisError() {}

// sandboxMu runs one learner's script at a time in the process.
var sandboxMu sync.Mutex

// toLua converts a Redis reply to Lua the way Redis does.
func toLua(ls *lua.LState, v interface{}) lua.LValue {
	switch x := v.(type) {
	case nil:
		return lua.LFalse
	case int64:
		return lua.LNumber(x)
	case string:
		return lua.LString(x)
	case []interface{}:
		t := ls.NewTable()
		for _, y := range x {
			t.Append(toLua(ls, y))
		}
		return t
	}
	return lua.LString(fmt.Sprint(v))
}

// fromLua shows a script's return value as Redis would reply it.
func fromLua(e *env, n *node, v lua.LValue) string {
	switch x := v.(type) {
	case lua.LNumber:
		return strconv.FormatInt(int64(x), 10)
	case lua.LString:
		return e.showValue(string(x))
	case lua.LBool:
		if x {
			return "1"
		}
		return "(nil)"
	case *lua.LTable:
		if s, ok := x.RawGetString("err").(lua.LString); ok {
			return "(error) " + string(s)
		}
		if s, ok := x.RawGetString("ok").(lua.LString); ok {
			return string(s)
		}
		var parts []string
		for i := 1; i <= x.Len(); i++ {
			parts = append(parts, fromLua(e, n, x.RawGetInt(i)))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	return "(nil)"
}
