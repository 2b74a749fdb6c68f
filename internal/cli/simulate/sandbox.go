package simulate

import (
	"fmt"
	"math/rand"
	"strings"

	lua "github.com/yuin/gopher-lua"
)

// The sandbox a learner's script runs in: Redis's own Lua has no files,
// no modules and no clock of its own, and neither has this one. Only these
// base functions are kept; dofile, loadfile, load, loadstring, require,
// module, getfenv, setfenv, collectgarbage and gopher-lua's _printregs are
// left out, and io, os, package, debug and coroutine are never opened.
var sandboxBase = []string{"assert", "error", "getmetatable", "ipairs", "next", "pairs", "pcall", "rawequal",
	"rawget", "rawset", "select", "setmetatable", "tonumber", "type", "unpack", "xpcall", "_G", "_VERSION"}

// sandboxCommands are the commands a script may send: the ones a lock,
// lease or fence script uses. Each one's cost is bounded by its arguments
// or by the data already there.
var sandboxCommands = map[string]bool{}

func init() {
	for _, c := range strings.Fields(`get set setnx setex psetex getset getdel getex del unlink exists type
		expire pexpire expireat pexpireat ttl pttl persist incr incrby decr decrby incrbyfloat
		append strlen getrange mget mset msetnx
		hget hset hsetnx hmset hmget hdel hexists hgetall hkeys hvals hlen hincrby hincrbyfloat
		lpush rpush lpop rpop llen lrange lindex lrem lset ltrim
		sadd srem sismember smembers scard
		zadd zrem zscore zincrby zcard zrange zrangebyscore zrevrange zremrangebyscore zremrangebyrank zrank zcount
		xadd xlen xrange xtrim publish time echo ping`) {
		sandboxCommands[c] = true
	}
}

// notInScripts are commands Redis itself refuses inside a script (flag
// noscript), with Redis's own error; blockingCommands would stall the
// replay waiting for data nobody sends.
var (
	notInScripts = map[string]bool{}
	blocking     = map[string]bool{}
)

func init() {
	for _, c := range strings.Fields(`acl auth bgrewriteaof bgsave client cluster config debug discard eval eval_ro evalsha evalsha_ro
		exec failover fcall fcall_ro function hello latency migrate module monitor multi psubscribe psync punsubscribe quit
		replicaof reset save script shutdown slaveof spublish ssubscribe subscribe sunsubscribe sync unsubscribe unwatch watch
		wait waitaof`) {
		notInScripts[c] = true
	}
	for _, c := range strings.Fields(`blpop brpop brpoplpush blmove blmpop bzpopmin bzpopmax bzmpop xread xreadgroup`) {
		blocking[c] = true
	}
}

// refuseCommand is the error reply for a command the sandbox does not
// send, or "" for one it does.
func refuseCommand(name string) string {
	n := strings.ToLower(name)
	switch {
	case sandboxCommands[n]:
		return ""
	case notInScripts[n]:
		return "ERR This Redis command is not allowed from script"
	case blocking[n]:
		return fmt.Sprintf("ERR %s blocks, and the sandbox runs no blocking command (inside a script Redis does not block either)", strings.ToUpper(n))
	}
	return fmt.Sprintf("ERR unknown command `%s` in the sandbox", shorten(name))
}

// newSandbox is the Lua state of one script run: the safe base functions,
// table, string and math (their growing functions bounded), a seeded
// math.random, a tostring that names tables without their address, a
// print that writes into the run's trace, and the concatenation guard as
// the chunk's argument.
func newSandbox(trace func(string)) (*lua.LState, *lua.LFunction) {
	ls := lua.NewState(lua.Options{SkipOpenLibs: true})
	for _, lib := range []struct {
		name string
		fn   lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		ls.Push(ls.NewFunction(lib.fn))
		ls.Push(lua.LString(lib.name))
		ls.Call(1, 0)
	}
	g := ls.G.Global
	keep := map[string]bool{lua.TabLibName: true, lua.StringLibName: true, lua.MathLibName: true}
	for _, k := range sandboxBase {
		keep[k] = true
	}
	var drop []lua.LValue
	g.ForEach(func(k, _ lua.LValue) {
		if s, ok := k.(lua.LString); !ok || !keep[string(s)] {
			drop = append(drop, k)
		}
	})
	for _, k := range drop {
		g.RawSet(k, lua.LNil)
	}

	// tostring and print: a table, function or coroutine is named by the
	// order the script first showed it in, not by its address, which
	// changes every run.
	names := map[lua.LValue]int{}
	tostring := func(ls *lua.LState, v lua.LValue) lua.LValue {
		switch v.(type) {
		case *lua.LTable, *lua.LFunction, *lua.LUserData, *lua.LState, lua.LChannel:
			if ls.GetMetaField(v, "__tostring") != lua.LNil {
				return ls.ToStringMeta(v)
			}
			id, ok := names[v]
			if !ok {
				id = len(names) + 1
				names[v] = id
			}
			return lua.LString(fmt.Sprintf("%s: #%d", v.Type(), id))
		}
		return ls.ToStringMeta(v)
	}
	g.RawSetString("tostring", ls.NewFunction(func(ls *lua.LState) int {
		ls.Push(tostring(ls, ls.CheckAny(1)))
		return 1
	}))
	g.RawSetString("print", ls.NewFunction(func(ls *lua.LState) int {
		parts := make([]string, 0, ls.GetTop())
		for i := 1; i <= ls.GetTop(); i++ {
			parts = append(parts, lua.LVAsString(tostring(ls, ls.Get(i))))
		}
		trace("print " + shorten(strings.Join(parts, " ")))
		return 0
	}))

	r := rand.New(rand.NewSource(0)) // a fixed seed on purpose: the same numbers on every run
	m := ls.GetGlobal(lua.MathLibName).(*lua.LTable)
	m.RawSetString("random", ls.NewFunction(luaRandom(r.Float64)))
	m.RawSetString("randomseed", ls.NewFunction(func(ls *lua.LState) int {
		r.Seed(int64(ls.CheckNumber(1)))
		return 0
	}))
	boundStringLib(ls, tostring)

	plain, err := ls.LoadString("local a, b = ... return a .. b")
	if err != nil {
		panic(err) // a constant chunk
	}
	return ls, ls.NewFunction(concatFunc(plain))
}

// errorText is how a script's error shows: Redis turns error({err = "x"})
// into the error reply "x"; any other object that is not a string is named
// by its type, never by its address.
func errorText(err error) string {
	apiErr, ok := err.(*lua.ApiError)
	if !ok {
		return err.Error()
	}
	switch o := apiErr.Object.(type) {
	case lua.LString:
		return string(o)
	case lua.LNumber:
		return o.String()
	case *lua.LTable:
		if s, ok := o.RawGetString("err").(lua.LString); ok {
			return string(s)
		}
	case nil:
		return apiErr.Error()
	}
	return fmt.Sprintf("error object is a %s value", apiErr.Object.Type())
}
