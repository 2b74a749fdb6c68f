package lockwire

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/lib/scriptcmds"
)

// The scripts live with the packages that run them.
var scriptDirs = []string{"../../../pkg/lock", "../../../pkg/inspect", "."}

// noCodes are the scripts whose reply has no code: preludes (prepended to
// others, their codes counted where they are called) and scripts that
// reply with a count or a name.
var noCodes = map[string]string{
	"holder.lua":     "prelude",
	"fence.lua":      "prelude",
	"members.lua":    "prelude",
	"wake.lua":       "prelude",
	"value.lua":      "prelude",
	"value_head.lua": "prelude",
	"fifo_leave.lua": "replies with how many places it freed",
	"fairwake.lua":   "replies with the head it woke, or false",
	"fixorphan.lua":  "replies 1 or 0 (acted or not), or {1, error, channel}: read by pkg/inspect as acted",
}

// usualCase names the scripts that are the usual case of another, run
// before its preludes (pkg/lock's *_fast.lua): each code they return must
// be one of that script's.
var usualCase = map[string]string{
	"acquire_fast.lua": "acquire.lua",
	"release_fast.lua": "release.lua",
	"handoff_fast.lua": "handoff.lua",
}

var (
	luaComment = regexp.MustCompile(`--.*`)
	// A table constructor that starts with an integer: {0}, {1, fence, ms}.
	replyTable = regexp.MustCompile(`\{\s*(\d+)\s*[,}]`)
	// held(code, ...) in holder.lua builds {code, type, ...}.
	heldCall = regexp.MustCompile(`\bheld\((\d+),`)
	// A code rewritten in place: sem[1] = 2.
	codeSet = regexp.MustCompile(`\[1\]\s*=\s*(\d+)`)
	// An integer reply: return 1.
	intReturn = regexp.MustCompile(`(?m)^\s*return (\d+)\s*$`)
	luaFunc   = regexp.MustCompile(`(?ms)^local function (\w+)\(.*?^end$`)
)

func stripComments(src string) string { return luaComment.ReplaceAllString(src, "") }

// literalCodes are the codes src returns as literals.
func literalCodes(src string) []int64 {
	var out []int64
	for _, re := range []*regexp.Regexp{replyTable, heldCall, codeSet, intReturn} {
		for _, m := range re.FindAllStringSubmatch(src, -1) {
			n, _ := strconv.ParseInt(m[1], 10, 64)
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out
}

func readScripts(t *testing.T) map[string]string {
	t.Helper()
	srcs := map[string]string{}
	for _, dir := range scriptDirs {
		files, err := filepath.Glob(filepath.Join(dir, "*.lua"))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			srcs[filepath.Base(f)] = stripComments(string(b))
		}
	}
	if len(srcs) < 10 {
		t.Fatalf("found only %d scripts in %v", len(srcs), scriptDirs)
	}
	return srcs
}

// TestEveryReplyCodeIsNamed reads every script and finds each code it can
// return: a literal reply, a code passed to held(), a code a prelude
// function it calls returns (semHeld's 0). Each must be one its decoder
// knows (Codes), and each code Codes names must be one the script returns.
func TestEveryReplyCodeIsNamed(t *testing.T) {
	srcs := readScripts(t)
	// Codes the prelude functions return as literals, by function.
	prelude := map[string][]int64{}
	for name, why := range noCodes {
		if why != "prelude" {
			continue
		}
		for _, m := range luaFunc.FindAllStringSubmatch(srcs[name], -1) {
			if codes := literalCodes(m[0]); len(codes) > 0 {
				prelude[m[1]] = codes
			}
		}
	}
	if len(prelude["semHeld"]) == 0 {
		t.Fatalf("no codes found in holder.lua's semHeld: the test no longer reads the preludes")
	}
	for name, src := range srcs {
		if _, ok := noCodes[name]; ok {
			continue
		}
		if of, ok := usualCase[name]; ok {
			codes := literalCodes(src)
			if len(codes) == 0 {
				t.Errorf("%s: no reply code found: the test no longer reads it", name)
			}
			for _, c := range codes {
				if _, ok := Codes[of][c]; !ok {
					t.Errorf("%s returns code %d, which %s's decoder does not name (lockwire.Codes)", name, c, of)
				}
			}
			continue
		}
		known, ok := Codes[name]
		if !ok {
			t.Errorf("%s: a script whose reply codes are not in Codes (nor listed in noCodes)", name)
			continue
		}
		codes := literalCodes(src)
		for fn, pc := range prelude {
			if regexp.MustCompile(`\b` + fn + `\(`).MatchString(src) {
				for _, c := range pc {
					if !slices.Contains(codes, c) {
						codes = append(codes, c)
					}
				}
			}
		}
		if len(codes) == 0 {
			t.Errorf("%s: no reply code found: the test no longer reads it", name)
		}
		for _, c := range codes {
			if _, ok := known[c]; !ok {
				t.Errorf("%s returns code %d, which its decoder does not name (lockwire.Codes)", name, c)
			}
		}
		for c, what := range known {
			if !slices.Contains(codes, c) {
				t.Errorf("Codes names %d (%s) for %s, which the script never returns", c, what, name)
			}
		}
	}
	for name := range Codes {
		if _, ok := srcs[name]; !ok {
			t.Errorf("Codes names %s, which is no script in %v", name, scriptDirs)
		}
	}
}

// Each decoder refuses a code its script does not return, and takes the
// ones it does.
func TestDecodersRefuseOtherScriptsCodes(t *testing.T) {
	for _, c := range []struct {
		script string
		dec    func(any) (Reply, error)
	}{
		{"release.lua", DecodeRelease}, {"renew.lua", DecodeRenew}, {"sem_release.lua", DecodeSemRelease},
		{"sem_renew.lua", DecodeSemRenew}, {"inspect.lua", DecodeInspect}, {"fence_next.lua", DecodeFenceNext},
	} {
		for code := int64(0); code <= 6; code++ {
			_, err := c.dec([]any{code})
			if _, named := Codes[c.script][code]; named != (err == nil) {
				t.Errorf("%s: code %d decoded with error %v, named %v", c.script, code, err, named)
			}
		}
	}
	if r, err := DecodeRelease([]any{ReleaseNotWoken, "NOPERM no publish"}); err != nil || r.Code != ReleaseNotWoken || r.Type != "NOPERM no publish" {
		t.Errorf("release's {5, error}: %+v %v", r, err)
	}
	for _, dec := range []func(any) (Reply, error){DecodeRelease, DecodeSemRelease} {
		ch := "lockctl:wake:{lock:x}:t1"
		if r, err := dec([]any{ReleaseNotWoken, "NOPERM no publish", ch}); err != nil || r.Type != "NOPERM no publish" || r.Value != ch {
			t.Errorf("a release's {5, error, channel}: %+v %v", r, err)
		}
	}
	if r, err := DecodeRelease([]any{ReleaseHoldsLeft, int64(2)}); err != nil || r.Num != 2 {
		t.Errorf("release's {4, holds left}: %+v %v", r, err)
	}
	if _, err := DecodeRenew([]any{int64(5), "x"}); err == nil {
		t.Error("renew.lua never returns 5, but its decoder took it")
	}
	if n, err := DecodeRaise(int64(1)); err != nil || n != RaiseDone {
		t.Errorf("DecodeRaise(1) = %d %v", n, err)
	}
	if _, err := DecodeRaise(int64(7)); err == nil {
		t.Error("DecodeRaise took 7")
	}
	if !strings.Contains(Codes["release.lua"][ReleaseNotWoken], "wake-up refused") {
		t.Errorf("release.lua's code 5: %q", Codes["release.lua"][ReleaseNotWoken])
	}
}

// Only value.lua (with its first part, value_head.lua) knows the stored
// value's layout: no other script names a member of it.
func TestOnlyValueLuaKnowsTheValue(t *testing.T) {
	members := regexp.MustCompile(`"(token|fence|owner|note|ci|limit|mode|ttl_ms|acquired_ms|holds|holders|renewed_ms|renew_every_ms|pid_start)":|\.owner\b`)
	for name, src := range readScripts(t) {
		if name == "value.lua" || name == "value_head.lua" {
			continue
		}
		if m := members.FindString(src); m != "" {
			t.Errorf("%s reads or writes the stored value itself (%s): use value.lua's functions", name, m)
		}
	}
}

// ValueLua is prepended to scripts whose command lists (doctor's ACL check)
// are read from their own files: it must call no command of its own.
func TestValueLuaCallsNoCommand(t *testing.T) {
	if calls := scriptcmds.Calls(ValueLua); len(calls) > 0 {
		t.Errorf("value.lua calls %v: add ValueLua to the scripts' command lists (pkg/lock ScriptCommands, pkg/inspect)", calls)
	}
	if !strings.Contains(ValueLua, "local function newValue(") {
		t.Error("ValueLua does not hold value.lua")
	}
}
