package simulate_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli/simulate"
)

func compile(t testing.TB, name, src string) *simulate.Script {
	t.Helper()
	s, err := simulate.CompileScript(name, src)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// scriptEvals are the replies and notes of the learner's script's EVALs in
// the first variant.
func scriptEvals(res *simulate.Result, name string) (replies, notes []string) {
	for _, e := range res.Variants[0].Events {
		if strings.HasPrefix(e.Command, "EVAL <"+name+">") {
			replies = append(replies, e.Reply)
			notes = append(notes, e.Note)
		}
	}
	return replies, notes
}

// TestSandboxBounds: a script that asks for more memory than the sandbox
// allows, at once or little by little, or whose pattern would backtrack
// for hours, is stopped and reported as the verdict; the run goes on.
func TestSandboxBounds(t *testing.T) {
	for _, tc := range []struct {
		name, src, want string
	}{
		{"rep-8gib", `return string.rep('x', 8 * 1024 * 1024 * 1024)`, "ran out of memory (string.rep would make 8.0 GiB, over the sandbox's 4.0 MiB per string)"},
		{"rep-1gib", `return #string.rep('x', 1024 * 1024 * 1024)`, "ran out of memory (string.rep would make 1.0 GiB"},
		{"method-rep", `local s = 'xy' return #s:rep(1024 * 1024 * 1024)`, "ran out of memory (string.rep would make 2.0 GiB"},
		{"concat-doubling", `local s = 'x' while true do s = s .. s end`, "ran out of memory (a concatenation would make 8.0 MiB"},
		{"concat-many", `local s = string.rep('x', 4 * 1024 * 1024) return #(s .. s .. s .. s .. s .. s .. s .. s)`, "ran out of memory (a concatenation would make 8.0 MiB"},
		{"concat-in-function", `local function f(a) return a .. a end local s = 'x' for i = 1, 40 do s = f(s) end`, "ran out of memory (a concatenation"},
		{"table-growth", `local t = {} local i = 0 while true do i = i + 1 t[i] = string.rep('x', 1024 * 1024) .. i end`, "ran out of memory (past the sandbox's 64.0 MiB, stopped)"},
		{"table-concat", `local t = {} for i = 1, 8 do t[i] = string.rep('x', 1024 * 1024) end return #table.concat(t, ',')`, "ran out of memory (table.concat would make"},
		{"format-width", `return string.format('%999999999d', 1)`, "invalid format (width or precision too long)"},
		{"format-star", `return string.format('%*d', 999999999, 1)`, "invalid option in format"},
		{"format-index", `return #string.format(string.rep('%[1]s', 1000), string.rep('x', 1024 * 1024))`, "invalid option in format"},
		{"format-args", `local s = string.rep('x', 4 * 1024 * 1024) return #string.format('%s%s', s, s)`, "ran out of memory (string.format would make"},
		{"gsub-string", `local s = string.rep('x', 100000) return #(s:gsub('.', s))`, "ran out of memory (string.gsub would make"},
		{"gsub-function", `local s = string.rep('x', 100000) return #(s:gsub('.', function() return s end))`, "ran out of memory (string.gsub would make"},
		{"gsub-table", `local s = string.rep('x', 100000) return #(s:gsub('.', {x = s}))`, "ran out of memory (string.gsub would make"},
		{"backtracking", `return string.find(string.rep('a', 5000), '(.-)(.-)(.-)(.-)(.-)b')`, "ran out of time (string.find of this pattern (5 repetitions) on 5000 bytes could backtrack for hours, refused)"},
		{"endless", `while true do end`, "ran out of time (still running after 1s, stopped"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			start := time.Now()
			_, _, res := render(t, "stale-del", &simulate.Options{ReleaseScript: compile(t, tc.name+".lua", tc.src)})
			// A sanity limit far above the bound (two runs of the
			// script, 1 s each), not a speed measurement.
			if d := time.Since(start); d > time.Minute {
				t.Fatalf("took %s: the script was not stopped", d)
			}
			got := verdicts(res)[0]
			if !strings.HasPrefix(got, "UNSAFE your "+tc.name+".lua ") || !strings.Contains(got, tc.want) {
				t.Errorf("verdict %q\nwant it to contain %q", got, tc.want)
			}
			if !res.Variants[1].Verdict.Safe {
				t.Errorf("the fenced variant after the script: %+v", res.Variants[1].Verdict)
			}
		})
	}
}

// TestSandboxNoFiles: the sandbox has Redis's base functions only: nothing
// that reads files, loads code or modules, or reaches the process.
func TestSandboxNoFiles(t *testing.T) {
	src := `local seen = {}
for _, name in ipairs({'dofile', 'loadfile', 'load', 'loadstring', 'require', 'module', 'io', 'os', 'package',
    'debug', 'coroutine', 'collectgarbage', 'getfenv', 'setfenv', '_printregs', 'newproxy'}) do
  if _G[name] ~= nil then seen[#seen + 1] = name end
end
return 'reachable: ' .. table.concat(seen, ' ')`
	_, _, res := render(t, "stale-del", &simulate.Options{ReleaseScript: compile(t, "probe.lua", src)})
	replies, _ := scriptEvals(res, "probe.lua")
	if len(replies) != 2 || replies[0] != "'reachable: '" {
		t.Errorf("replies %q: want nothing reachable", replies)
	}
	_, _, res = render(t, "stale-del", &simulate.Options{ReleaseScript: compile(t, "dofile.lua", `return dofile('/etc/hostname')`)})
	if got := verdicts(res)[0]; !strings.Contains(got, "your dofile.lua failed (") || !strings.Contains(got, "attempt to call a non-function object") {
		t.Errorf("dofile: %s", got)
	}
}

// TestSandboxCommands: commands Redis refuses inside a script are refused
// with Redis's own error, and a blocking command is refused at once
// instead of stalling the replay.
func TestSandboxCommands(t *testing.T) {
	src := `local r = {}
for _, c in ipairs({{'CONFIG', 'SET', 'maxmemory', '1'}, {'SHUTDOWN', 'NOSAVE'}, {'BLPOP', 'nothing', '0'}, {'EVAL', 'return 1', '0'}}) do
  local ok = redis.pcall(unpack(c))
  r[#r + 1] = c[1] .. ': ' .. tostring(ok.err)
end
return table.concat(r, ' | ')`
	_, _, res := render(t, "stale-del", &simulate.Options{ReleaseScript: compile(t, "admin.lua", src)})
	replies, _ := scriptEvals(res, "admin.lua")
	want := "'CONFIG: ERR This Redis command is not allowed from script | SHUTDOWN: ERR This Redis command is not allowed from script | " +
		"BLPOP: ERR BLPOP blocks, and the sandbox runs no blocking command (inside a script Redis does not block either) | " +
		"EVAL: ERR This Redis command is not allowed from script'"
	if len(replies) != 2 || replies[0] != want {
		t.Errorf("replies %q\nwant %q", replies, want)
	}
}

// TestSandboxDeterministic: print goes into the timeline, not to stdout;
// error objects, tostring and math.random give the same text on every run.
func TestSandboxDeterministic(t *testing.T) {
	for _, tc := range []struct{ name, src, reply, note string }{
		{"print", `print('hello from', KEYS[1], {}) return redis.call('DEL', KEYS[1])`, "1", "print hello from lock:order:42 table: #1"},
		{"error-table", `error({})`, "(error) error object is a table value", ""},
		{"error-reply", `error({err = 'ERR mine'})`, "(error) ERR mine", ""},
		{"tostring", `local t = {} return tostring(t) .. ' ' .. tostring(print) .. ' ' .. tostring(t)`, "'table: #1 function: #2 table: #1'", ""},
		{"format", `return string.format('%s', {})`, "'table: #1'", ""},
		{"random", `math.randomseed(7) return math.random(1000000) .. ' ' .. math.random()`, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			opts := &simulate.Options{ReleaseScript: compile(t, tc.name+".lua", tc.src)}
			text1, js1, res := render(t, "stale-del", opts)
			text2, js2, _ := render(t, "stale-del", opts)
			if !bytes.Equal(text1, text2) || !bytes.Equal(js1, js2) {
				t.Errorf("two runs differ:\n%s\n---\n%s", text1, text2)
			}
			if bytes.Contains(text1, []byte("0x")) {
				t.Errorf("an address in the timeline:\n%s", text1)
			}
			replies, notes := scriptEvals(res, tc.name+".lua")
			if len(replies) != 2 {
				t.Fatalf("%d EVALs", len(replies))
			}
			if tc.reply != "" && replies[0] != tc.reply {
				t.Errorf("reply %q, want %q", replies[0], tc.reply)
			}
			if tc.note != "" && !strings.Contains(notes[0], tc.note) {
				t.Errorf("note %q does not contain %q", notes[0], tc.note)
			}
		})
	}
}

// TestScriptNotOnRealServer: a learner's script stays in the embedded
// sandbox; with a real server the run is refused before it starts.
func TestScriptNotOnRealServer(t *testing.T) {
	for _, o := range []*simulate.Options{
		{URL: srv.URL, ReleaseScript: compile(t, "del.lua", `return redis.call('DEL', KEYS[1])`)},
		{URL: srv.URL, RenewScript: compile(t, "renew.lua", `return redis.call('PEXPIRE', KEYS[1], ARGV[2])`)},
	} {
		name := "stale-del"
		if o.RenewScript != nil {
			name = "no-renew"
		}
		res, err := simulate.Run(context.Background(), name, o)
		if !errors.Is(err, simulate.ErrEmbeddedOnly) || res != nil {
			t.Errorf("%s: err = %v, want ErrEmbeddedOnly before anything runs", name, err)
		}
	}
}

// TestScriptTooDeep: a chunk nested deeper than Lua's own limit is refused
// when it compiles, not by a crash of the compiler's recursion.
func TestScriptTooDeep(t *testing.T) {
	src := "return " + strings.Repeat("{", 100000) + strings.Repeat("}", 100000)
	if _, err := simulate.CompileScript("deep.lua", src); !errors.Is(err, simulate.ErrScript) || !strings.Contains(err.Error(), "too many syntax levels") {
		t.Fatalf("err = %v", err)
	}
}
