package simulate

import (
	"fmt"
	"math"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
	"github.com/yuin/gopher-lua/ast"
)

// A learner's script runs in lockctl's own process, so what it can take is
// bounded: ScriptTimeout of wall time, ScriptMemory of heap, and no single
// string over ScriptMaxString. gopher-lua checks the script's context
// before every instruction, so time and the heap watchdog stop a script
// between instructions; what one instruction or one library call can
// allocate (a string.rep, a concatenation, a gsub, a pattern match) is
// checked before it is made, since nothing interrupts a Go call once it runs.
const (
	ScriptMemory    = 64 << 20
	ScriptMaxString = 4 << 20
	maxSource       = 1 << 20
	maxNesting      = 200
	// patternBudget bounds the backtracking steps a pattern function may
	// take on its subject, about a tenth of a second of matching.
	patternBudget = 1e7
)

// errOutOfMemory is raised in the script when it asks for more than its
// bounds; the run reports it as the script running out of memory.
const outOfMemory = "out of memory: "

func tooBig(ls *lua.LState, what string, n float64) {
	ls.RaiseError("%s%s would make %s, over the sandbox's %s per string", outOfMemory, what, bytesText(n), bytesText(ScriptMaxString))
}

func bytesText(n float64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", n/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0f bytes", n)
}

// concatName is the local every `..` of a learner's script calls instead
// (see guardConcat). It is not a Lua name, so the script cannot refer to it.
const concatName = "lockctl concat"

// guardConcat rewrites every `a .. b` of the chunk into a call of the
// local concatName, which checks the result's size before building it:
// gopher-lua's own concatenation has no hook, and one instruction of
// `s..s..s..s` can otherwise ask for gigabytes. The local gets its value
// from the chunk's first argument. It also refuses a chunk nested deeper
// than Lua 5.1's own limit, which keeps the compiler's recursion bounded.
func guardConcat(chunk []ast.Stmt) ([]ast.Stmt, error) {
	w := &concatWalker{}
	w.stmts(chunk, 0)
	if w.err != nil {
		return nil, w.err
	}
	decl := &ast.LocalAssignStmt{Names: []string{concatName}, Exprs: []ast.Expr{&ast.Comma3Expr{}}}
	return append([]ast.Stmt{decl}, chunk...), nil
}

type concatWalker struct{ err error }

func (w *concatWalker) depth(d int, n ast.PositionHolder) bool {
	if d > maxNesting && w.err == nil {
		w.err = fmt.Errorf("line:%d: chunk has too many syntax levels (over %d)", n.Line(), maxNesting)
	}
	return w.err == nil
}

func (w *concatWalker) stmts(ss []ast.Stmt, d int) {
	for _, s := range ss {
		w.stmt(s, d)
	}
}

func (w *concatWalker) exprs(es []ast.Expr, d int) {
	for i := range es {
		es[i] = w.expr(es[i], d)
	}
}

func (w *concatWalker) stmt(s ast.Stmt, d int) {
	if !w.depth(d, s) {
		return
	}
	d++
	switch s := s.(type) {
	case *ast.AssignStmt:
		w.exprs(s.Lhs, d)
		w.exprs(s.Rhs, d)
	case *ast.LocalAssignStmt:
		w.exprs(s.Exprs, d)
	case *ast.FuncCallStmt:
		s.Expr = w.expr(s.Expr, d)
	case *ast.DoBlockStmt:
		w.stmts(s.Stmts, d)
	case *ast.WhileStmt:
		s.Condition = w.expr(s.Condition, d)
		w.stmts(s.Stmts, d)
	case *ast.RepeatStmt:
		s.Condition = w.expr(s.Condition, d)
		w.stmts(s.Stmts, d)
	case *ast.IfStmt:
		s.Condition = w.expr(s.Condition, d)
		w.stmts(s.Then, d)
		w.stmts(s.Else, d)
	case *ast.NumberForStmt:
		s.Init = w.expr(s.Init, d)
		s.Limit = w.expr(s.Limit, d)
		if s.Step != nil {
			s.Step = w.expr(s.Step, d)
		}
		w.stmts(s.Stmts, d)
	case *ast.GenericForStmt:
		w.exprs(s.Exprs, d)
		w.stmts(s.Stmts, d)
	case *ast.FuncDefStmt:
		if s.Name != nil {
			if s.Name.Func != nil {
				s.Name.Func = w.expr(s.Name.Func, d)
			}
			if s.Name.Receiver != nil {
				s.Name.Receiver = w.expr(s.Name.Receiver, d)
			}
		}
		w.stmts(s.Func.Stmts, d)
	case *ast.ReturnStmt:
		w.exprs(s.Exprs, d)
	}
}

func (w *concatWalker) expr(e ast.Expr, d int) ast.Expr {
	if e == nil || !w.depth(d, e) {
		return e
	}
	d++
	switch e := e.(type) {
	case *ast.StringConcatOpExpr:
		call := &ast.FuncCallExpr{Func: &ast.IdentExpr{Value: concatName}, Args: []ast.Expr{w.expr(e.Lhs, d), w.expr(e.Rhs, d)}}
		call.SetLine(e.Line())
		call.SetLastLine(e.LastLine())
		call.Func.SetLine(e.Line())
		call.Func.SetLastLine(e.LastLine())
		return call
	case *ast.AttrGetExpr:
		e.Object = w.expr(e.Object, d)
		e.Key = w.expr(e.Key, d)
	case *ast.TableExpr:
		for _, f := range e.Fields {
			if f.Key != nil {
				f.Key = w.expr(f.Key, d)
			}
			f.Value = w.expr(f.Value, d)
		}
	case *ast.FuncCallExpr:
		if e.Func != nil {
			e.Func = w.expr(e.Func, d)
		}
		if e.Receiver != nil {
			e.Receiver = w.expr(e.Receiver, d)
		}
		w.exprs(e.Args, d)
	case *ast.LogicalOpExpr:
		e.Lhs, e.Rhs = w.expr(e.Lhs, d), w.expr(e.Rhs, d)
	case *ast.RelationalOpExpr:
		e.Lhs, e.Rhs = w.expr(e.Lhs, d), w.expr(e.Rhs, d)
	case *ast.ArithmeticOpExpr:
		e.Lhs, e.Rhs = w.expr(e.Lhs, d), w.expr(e.Rhs, d)
	case *ast.UnaryMinusOpExpr:
		e.Expr = w.expr(e.Expr, d)
	case *ast.UnaryNotOpExpr:
		e.Expr = w.expr(e.Expr, d)
	case *ast.UnaryLenOpExpr:
		e.Expr = w.expr(e.Expr, d)
	case *ast.FunctionExpr:
		w.stmts(e.Stmts, d)
	}
	return e
}

// concatFunc is concatName's value: Lua's `..`, with the size checked
// first; a pair that is not two strings or numbers goes to plain (the
// unguarded `..`, for __concat metamethods and Lua's own error).
func concatFunc(plain *lua.LFunction) lua.LGFunction {
	return func(ls *lua.LState) int {
		a, b := ls.Get(1), ls.Get(2)
		if lua.LVCanConvToString(a) && lua.LVCanConvToString(b) {
			sa, sb := lua.LVAsString(a), lua.LVAsString(b)
			if n := len(sa) + len(sb); n > ScriptMaxString {
				tooBig(ls, "a concatenation", float64(n))
			}
			ls.Push(lua.LString(sa + sb))
			return 1
		}
		ls.Push(plain)
		ls.Push(a)
		ls.Push(b)
		ls.Call(2, 1)
		return 1
	}
}

// boundStringLib wraps the string and table functions whose result can
// outgrow their arguments, checking the size before the call, and the
// pattern functions, checking how long their backtracking could run.
func boundStringLib(ls *lua.LState, tostring func(*lua.LState, lua.LValue) lua.LValue) {
	str := ls.GetGlobal(lua.StringLibName).(*lua.LTable)
	orig := func(name string) *lua.LFunction { return str.RawGetString(name).(*lua.LFunction) }
	wrap := func(t *lua.LTable, name string, check func(ls *lua.LState)) {
		fn := t.RawGetString(name).(*lua.LFunction)
		t.RawSetString(name, ls.NewFunction(func(ls *lua.LState) int {
			check(ls)
			top := ls.GetTop()
			ls.Push(fn)
			for i := 1; i <= top; i++ {
				ls.Push(ls.Get(i))
			}
			ls.Call(top, lua.MultRet)
			return ls.GetTop() - top
		}))
	}
	wrap(str, "rep", func(ls *lua.LState) {
		s, n := ls.CheckString(1), ls.CheckInt(2)
		if n > 0 && float64(len(s))*float64(n) > ScriptMaxString {
			tooBig(ls, "string.rep", float64(len(s))*float64(n))
		}
	})
	wrap(str, "format", func(ls *lua.LState) {
		f := ls.CheckString(1)
		if err := checkFormat(f); err != "" {
			ls.RaiseError("%s", err)
		}
		n := float64(len(f)) + 100*float64(strings.Count(f, "%"))
		for i := 2; i <= ls.GetTop(); i++ {
			switch v := ls.Get(i).(type) {
			case lua.LString:
				n += float64(len(v))
			case lua.LNumber:
			default:
				// %s of a table would show its address: show the
				// deterministic name tostring gives instead.
				name := tostring(ls, v)
				ls.Replace(i, name)
				n += float64(len(lua.LVAsString(name)))
			}
		}
		if n > ScriptMaxString {
			tooBig(ls, "string.format", n)
		}
	})
	for _, name := range []string{"find", "match", "gmatch"} {
		wrap(str, name, func(ls *lua.LState) {
			s, p := ls.CheckString(1), ls.CheckString(2)
			if name == "find" && ls.GetTop() >= 4 && lua.LVAsBool(ls.Get(4)) {
				return // a plain search
			}
			// gmatch finds every match at once, from every start.
			checkPattern(ls, "string."+name, p, len(s), name != "gmatch")
		})
	}
	str.RawSetString("gsub", boundGsub(ls, orig("gsub")))

	tab := ls.GetGlobal(lua.TabLibName).(*lua.LTable)
	wrap(tab, "concat", func(ls *lua.LState) {
		t := ls.CheckTable(1)
		sep := ls.OptString(2, "")
		i, j := ls.OptInt(3, 1), ls.OptInt(4, t.Len())
		var n float64
		for k := i; k <= j; k++ {
			v := t.RawGetInt(k)
			if !lua.LVCanConvToString(v) {
				return // table.concat raises its own error
			}
			if n += float64(len(lua.LVAsString(v)) + len(sep)); n > ScriptMaxString {
				tooBig(ls, "table.concat", n)
			}
		}
	})
}

// checkFormat refuses what Lua 5.1 refuses in a format: a width or
// precision of more than two digits (which Go would honour, however large)
// and anything but Lua's options after them, which also keeps out Go's
// own `%*d` (a width from the arguments) and `%[1]s` (an argument used
// again and again).
func checkFormat(f string) string {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			continue
		}
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		digits := 0
		for i < len(f) && f[i] >= '0' && f[i] <= '9' {
			i++
			digits++
		}
		if i < len(f) && f[i] == '.' {
			i++
			p := 0
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				i++
				p++
			}
			digits = max(digits, p)
		}
		if digits > 2 {
			return "invalid format (width or precision too long)"
		}
		if i >= len(f) || strings.IndexByte("cdiouxXeEfgGqs", f[i]) < 0 {
			return "invalid option in format"
		}
	}
	return ""
}

// checkPattern refuses a pattern whose backtracking could run far past the
// time limit on a subject of n bytes: a match is one Go call, which the
// script's deadline cannot interrupt. Each quantifier (or %b) can try every
// length of what is left, so q of them cost at most about n^q/q! steps from
// each start.
func checkPattern(ls *lua.LState, what, p string, n int, anchors bool) {
	q := 0
	for i := 0; i < len(p); i++ {
		switch p[i] {
		case '*', '+', '-', '?':
			q++
		case '%':
			if i+1 < len(p) && p[i+1] == 'b' {
				q++
			}
			i++
		}
	}
	cost := float64(n + 1)
	if anchors && strings.HasPrefix(p, "^") {
		cost = 1
	}
	for k := 1; k <= q; k++ {
		cost *= float64(n+1) / float64(k)
		if cost > patternBudget {
			ls.RaiseError("out of time: %s of this pattern (%d repetitions) on %d bytes could backtrack for hours, refused", what, q, n)
		}
	}
}

// memoryWatch stops the script (cancel) once the heap has grown by more
// than ScriptMemory since it started, which catches what no single call
// allocates at once: tables grown in a loop, strings kept in them, keys
// written to the embedded server.
type memoryWatch struct {
	over atomic.Bool
	stop chan struct{}
	done chan struct{}
}

func heapBytes(s []metrics.Sample) uint64 {
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

func watchMemory(cancel func()) *memoryWatch {
	w := &memoryWatch{stop: make(chan struct{}), done: make(chan struct{})}
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	base := heapBytes(sample)
	go func() {
		defer close(w.done)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
				if h := heapBytes(sample); h > base && h-base > ScriptMemory {
					w.over.Store(true)
					cancel()
					return
				}
			}
		}
	}()
	return w
}

func (w *memoryWatch) end() bool {
	close(w.stop)
	<-w.done
	return w.over.Load()
}

// luaRandom is math.random on a generator of the run's own, seeded the
// same every run, as Redis seeds its scripts' generator: the timeline stays
// the same on every run.
func luaRandom(next func() float64) lua.LGFunction {
	return func(ls *lua.LState) int {
		r := next()
		switch ls.GetTop() {
		case 0:
			ls.Push(lua.LNumber(r))
		case 1:
			hi := float64(ls.CheckNumber(1))
			if hi < 1 {
				ls.ArgError(1, "interval is empty")
			}
			ls.Push(lua.LNumber(math.Floor(r*math.Floor(hi)) + 1))
		default:
			lo, hi := math.Floor(float64(ls.CheckNumber(1))), math.Floor(float64(ls.CheckNumber(2)))
			if lo > hi {
				ls.ArgError(2, "interval is empty")
			}
			ls.Push(lua.LNumber(math.Floor(r*(hi-lo+1)) + lo))
		}
		return 1
	}
}

// boundGsub is string.gsub (gsub) within ScriptMaxString: the pattern
// costed as find's, and what the replacements add counted.
func boundGsub(ls *lua.LState, gsub *lua.LFunction) *lua.LFunction {
	return ls.NewFunction(func(ls *lua.LState) int {
		s, p := ls.CheckString(1), ls.CheckString(2)
		checkPattern(ls, "string.gsub", p, len(s), false)
		repl := ls.CheckAny(3)
		switch r := repl.(type) {
		case lua.LString, lua.LNumber:
			// Each match adds the replacement, and each %N in it at
			// most the match again; the matches do not overlap.
			rs := lua.LVAsString(r)
			n := float64(len(s))*float64(1+strings.Count(rs, "%")) + float64(len(s)+1)*float64(len(rs))
			if n > ScriptMaxString {
				tooBig(ls, "string.gsub", n)
			}
		case *lua.LTable, *lua.LFunction:
			// What the replacements add is counted as they come.
			repl = countedReplacement(ls, r, ScriptMaxString-len(s))
		}
		top := ls.GetTop()
		ls.Push(gsub)
		ls.Push(lua.LString(s))
		ls.Push(lua.LString(p))
		ls.Push(repl)
		n := 3
		if top >= 4 {
			ls.Push(ls.Get(4))
			n++
		}
		ls.Call(n, 2)
		return 2
	})
}

// countedReplacement is gsub's replacement r (a table or a function) that
// raises once what it adds passes room bytes.
func countedReplacement(ls *lua.LState, r lua.LValue, room int) *lua.LFunction {
	left := float64(room)
	return ls.NewFunction(func(ls *lua.LState) int {
		var v lua.LValue
		if t, ok := r.(*lua.LTable); ok {
			v = ls.GetTable(t, ls.Get(1))
		} else {
			top := ls.GetTop()
			ls.Push(r)
			for i := 1; i <= top; i++ {
				ls.Push(ls.Get(i))
			}
			ls.Call(top, 1)
			v = ls.Get(-1)
		}
		if lua.LVCanConvToString(v) {
			if left -= float64(len(lua.LVAsString(v))); left < 0 {
				tooBig(ls, "string.gsub", ScriptMaxString-left)
			}
		}
		ls.Push(v)
		return 1
	})
}
