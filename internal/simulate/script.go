package simulate

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
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

// Script is a learner's Lua script, run in place of lockctl's own release
// (or renew) the way Redis runs EVAL: KEYS[1] is the lock key, ARGV[1] the
// caller's token (ARGV[2] the TTL in ms, for a renew script), and
// redis.call, redis.pcall, redis.error_reply and redis.status_reply work as
// in Redis.
type Script struct {
	Name  string // the file name, shown in the timeline
	proto *lua.FunctionProto
}

// ErrScript is the error of a script that does not compile.
var ErrScript = errors.New("simulate: script")

// CompileScript parses src; a syntax error is an ErrScript naming the line.
func CompileScript(name, src string) (*Script, error) {
	base := filepath.Base(name)
	chunk, err := parse.Parse(strings.NewReader(src), base)
	if err != nil {
		msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), `\n`, " ")), " ")
		return nil, fmt.Errorf("%w %s: %s", ErrScript, name, msg)
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

	deletedOther string // whose lock a release deleted, if not its caller's
	keptOwn      bool   // a release left its caller's own lock
}

// runScript runs s on node n as EVAL with keys and argv would, recorded
// as one step of actor; the commands inside are listed in the step's note.
func (e *env) runScript(ctx context.Context, n *node, s *Script, keys, argv []string) scriptRun {
	var out scriptRun
	// The script's own commands are sent unrecorded: the timeline shows
	// the EVAL, as Redis runs the script as one command.
	inner := context.WithoutCancel(ctx)
	inner = context.WithValue(inner, actorKey{}, "")
	sctx, cancel := context.WithTimeout(ctx, ScriptTimeout)
	defer cancel()

	ls := lua.NewState(lua.Options{SkipOpenLibs: true})
	defer ls.Close()
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		ls.Push(ls.NewFunction(lib.fn))
		ls.Push(lua.LString(lib.name))
		ls.Call(1, 0)
	}
	ls.SetContext(sctx)
	list := func(xs []string) *lua.LTable {
		t := ls.NewTable()
		for _, x := range xs {
			t.Append(lua.LString(x))
		}
		return t
	}
	ls.SetGlobal("KEYS", list(keys))
	ls.SetGlobal("ARGV", list(argv))
	call := func(protected bool) lua.LGFunction {
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
			cmd := redis.NewCmd(inner, args...)
			_ = n.rdb.Process(inner, cmd) // the reply and its error are read below
			shown := e.showReply(n, cmd)
			out.trace = append(out.trace, e.showCommand(n, args)+" → "+shown)
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
	rlib := ls.NewTable()
	ls.SetFuncs(rlib, map[string]lua.LGFunction{
		"call":  call(false),
		"pcall": call(true),
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
	ls.SetGlobal("redis", rlib)

	ls.Push(ls.NewFunctionFromProto(s.proto))
	err := ls.PCall(0, 1, nil)
	switch {
	case sctx.Err() != nil && ctx.Err() == nil:
		out.timeout = true
		out.failed = fmt.Sprintf("still running after %s, stopped; Redis would answer BUSY to every client until SCRIPT KILL", ScriptTimeout)
	case err != nil:
		msg := err.Error()
		if i := strings.Index(msg, "\nstack traceback"); i >= 0 {
			msg = msg[:i]
		}
		out.failed = strings.TrimSpace(shorten(e.strip(msg)))
	}
	if out.failed != "" {
		out.reply = "(error) " + out.failed
		return out
	}
	out.reply = fromLua(e, n, ls.Get(-1))
	if strings.HasPrefix(out.reply, "(error) ") {
		out.failed = strings.TrimPrefix(out.reply, "(error) ")
	}
	return out
}

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
