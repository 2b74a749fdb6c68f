package simulate_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli/simulate"
)

// FuzzSandbox feeds Lua source to stale-del as a learner's release script.
// Whatever it is, a script that compiles never panics lockctl, never
// outlasts the sandbox's time bound or exhausts memory (the fuzzer's
// process would die), and the scenario ends with a verdict; a script that
// ran within its bounds gives the same timeline on every run.
func FuzzSandbox(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "scripts", "*.lua"))
	for _, file := range files {
		if src, err := os.ReadFile(file); err == nil && !strings.Contains(file, "endless") {
			f.Add(string(src))
		}
	}
	for _, src := range []string{
		`return redis.call('DEL', KEYS[1])`,
		`if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0`,
		`return string.rep('x', 8 * 1024 * 1024 * 1024)`,
		`local s = 'x' for i = 1, 64 do s = s .. s end return #s`,
		`local s = string.rep('x', 4 * 1024 * 1024) return #(s .. s .. s .. s)`,
		`return string.format('%999999999d', 1)`,
		`return string.format('%*d', 999999999, 1)`,
		`return string.format('%[1]s%[1]s', 'x')`,
		`return string.format('%5.2f %-3s %%', 1.5, 'x')`,
		`for w in string.gmatch(string.rep('a', 3000), '^(.-)(.-)(.-)b') do end`,
		`return string.find(string.rep('a', 3000), '(.-)(.-)(.-)(.-)b')`,
		`local s = string.rep('x', 100000) return #(s:gsub('.', s))`,
		`print('x', {}, print) return tostring({}) .. tostring(print)`,
		`error({})`,
		`error({err = 'ERR mine'})`,
		`error(nil)`,
		`return redis.call('BLPOP', KEYS[1], 0)`,
		`return redis.pcall('CONFIG', 'SET', 'maxmemory', '1')`,
		`return redis.call('SHUTDOWN', 'NOSAVE')`,
		`return dofile('/etc/passwd')`,
		`return math.random(0)`,
		`return math.random(5, 1)`,
		`return {math.random(), math.random(10), math.random(3, 7)}`,
		`local t = setmetatable({}, {__concat = function(a, b) return 'c' end}) return t .. 'x'`,
		`local function f() return f() end return f()`,
		`local function f() return 1 + f() end return f()`,
		`return unpack({}, 1, 1e8)`,
		`return string.byte(string.rep('x', 1e6), 1, -1)`,
		`return table.concat({1, 2, 3}, string.rep(',', 3000000))`,
		`return redis.call('SET', KEYS[1], string.rep('x', 4194304))`,
		`local t = {} for i = 1, 1e9 do t[i] = i end`,
		`return getmetatable('').__index.rep('x', 1e10)`,
		`return ('x'):rep(1e10)`,
		`return #string.gsub('abc', '%w', '%0%0%0%0')`,
		`return redis.call('EVAL', "return string.rep('x', 2^33)", 0)`,
	} {
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src string) {
		s, err := simulate.CompileScript("fuzz.lua", src)
		if err != nil {
			return
		}
		opts := &simulate.Options{ReleaseScript: s}
		run := func() []byte {
			start := time.Now()
			res, err := simulate.Run(context.Background(), "stale-del", opts)
			if err != nil {
				t.Fatalf("no verdict: %v", err)
			}
			// Two runs of the script, each stopped after
			// ScriptTimeout (and its grace): far more is a hang.
			if d := time.Since(start); d > 30*time.Second {
				t.Fatalf("took %s", d)
			}
			if len(res.Variants) != 2 || res.Variants[0].Verdict.Summary == "" {
				t.Fatalf("variants %+v", res.Variants)
			}
			var b bytes.Buffer
			if err := simulate.RenderJSON(&b, res); err != nil {
				t.Fatal(err)
			}
			return b.Bytes()
		}
		// A run stopped by the time or memory bound stops at a point
		// that depends on the machine (a loaded one stops a script that
		// an idle one finishes): only two runs that both ended by
		// themselves must agree.
		stopped := func(b []byte) bool { return bytes.Contains(b, []byte("ran out of")) }
		first := run()
		if stopped(first) {
			return
		}
		if second := run(); !stopped(second) && !bytes.Equal(first, second) {
			t.Fatalf("two runs differ:\n%s\n---\n%s", first, second)
		}
	})
}
