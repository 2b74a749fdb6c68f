package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Server time of lockctl's acquire and release scripts beside variants that
// leave one part out, so a change to the Lua can be judged by what the part
// costs. The scripts are read from the checkout (pkg/lock/*.lua), the same
// files pkg/lock embeds, so run it from bench/peers. Every call uses a key of its own; release variants
// find their key held by the token they pass.

type scriptVariant struct {
	name    string
	src     string
	release bool // the key must hold the lockctl value first
	// noPrefix: the script builds the value prefix {"token":"..." itself
	// instead of taking it as an argument (release and acquire after the
	// change that dropped that argument).
	noPrefix bool
}

// scriptsBefore, when set (-scripts-before), names a directory with an
// earlier version of pkg/lock's Lua (e.g. from git show), whose acquire and
// release are measured beside the checkout's, interleaved.
var scriptsBefore string

func readLua(dir, name string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, name))
	return string(b), err
}

// scriptVariants builds the variants from the checkout's scripts. Variants
// that cut a piece out of a script are skipped (and say so) when the script
// no longer has that piece.
func scriptVariants(dir string) ([]scriptVariant, error) {
	holder, err := readLua(dir, "holder.lua")
	if err != nil {
		return nil, err
	}
	vs := []scriptVariant{
		{name: "return 1", src: "return 1"},
		{name: "the holder prelude, then return 1", src: holder + "\nreturn 1"},
		{name: "SET NX PX (redislock's obtain)", src: "return redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2])"},
		{name: "TYPE+INCR+TIME+SET, no value building", src: `local t = redis.call('TYPE', KEYS[1])['ok']
local f = redis.call('INCR', KEYS[2])
local now = redis.call('TIME')
redis.call('SET', KEYS[1], ARGV[3], 'NX', 'PX', ARGV[2])
return {1, f, 0}`},
		{name: "GET+DEL (redislock's release)", src: "if redis.call('GET', KEYS[1]) then return redis.call('DEL', KEYS[1]) end return 0", release: true},
	}
	own, err := lockScripts(dir, "")
	if err != nil {
		return nil, err
	}
	vs = append(vs, own...)
	if scriptsBefore != "" {
		before, err := lockScripts(scriptsBefore, " (before)")
		if err != nil {
			return nil, err
		}
		vs = append(vs, before...)
	}
	return vs, nil
}

// lockScripts reads acquire.lua and release.lua with their preludes from dir.
func lockScripts(dir, suffix string) ([]scriptVariant, error) {
	holder, err := readLua(dir, "holder.lua")
	if err != nil {
		return nil, err
	}
	// The fence prelude: acquire.lua issues its fence through it.
	fence, err := readLua(dir, "fence.lua")
	if err != nil {
		return nil, err
	}
	acquire, err := readLua(dir, "acquire.lua")
	if err != nil {
		return nil, err
	}
	release, err := readLua(dir, "release.lua")
	if err != nil {
		return nil, err
	}
	// Scripts that take the value prefix say so in their header.
	acqNoPrefix := !strings.Contains(acquire, "ARGV[3] value prefix")
	relNoPrefix := !strings.Contains(release, "ARGV[2] value prefix")
	vs := []scriptVariant{{name: "acquire.lua as shipped" + suffix, src: fence + holder + acquire, noPrefix: acqNoPrefix}}
	publish := "redis.call('PUBLISH', ARGV[3], 'released')"
	if relNoPrefix {
		publish = "redis.call('PUBLISH', ARGV[2], 'released')"
	}
	if strings.Contains(release, publish) {
		vs = append(vs, scriptVariant{name: "release.lua without its PUBLISH" + suffix, src: holder + strings.Replace(release, publish, "", 1), release: true, noPrefix: relNoPrefix})
	} else {
		fmt.Fprintf(os.Stderr, "peers: release.lua no longer has %s: no variant without it\n", publish)
	}
	return append(vs, scriptVariant{name: "release.lua as shipped" + suffix, src: holder + release, release: true, noPrefix: relNoPrefix}), nil
}

func scriptsWorkload(ctx context.Context, c *redis.Client, rounds int) error {
	const n = 2000
	vs, err := scriptVariants(filepath.Join("..", "..", "pkg", "lock"))
	if err != nil {
		return err
	}
	scripts := make([]*redis.Script, len(vs))
	for i, v := range vs {
		scripts[i] = redis.NewScript(v.src)
		if err := scripts[i].Load(ctx, c).Err(); err != nil {
			return fmt.Errorf("%s: %w", v.name, err)
		}
	}
	const token = "0123456789abcdef0123456789abcdef"
	prefix := `{"token":"` + token + `"`
	value := prefix + `,"fence":1,"owner":"bench@host:1","acquired_ms":1767225600000}`
	usec := make([][]float64, len(vs))
	for r := 0; r < rounds; r++ {
		for k := range vs {
			i := (k + r) % len(vs)
			v := vs[i]
			keys := make([]string, n)
			for j := range keys {
				keys[j] = fmt.Sprintf("peers:scripts:%d:%d:%d", r, i, j)
			}
			if v.release {
				p := c.Pipeline()
				for _, key := range keys {
					p.Set(ctx, key, value, ttl)
				}
				if _, err := p.Exec(ctx); err != nil {
					return err
				}
			}
			if err := c.ConfigResetStat(ctx).Err(); err != nil {
				return err
			}
			for j, key := range keys {
				var err error
				switch {
				case v.release && v.noPrefix:
					err = scripts[i].EvalSha(ctx, c, []string{key, key + ":sem"}, token, "peers:scripts:chan").Err()
				case v.release:
					err = scripts[i].EvalSha(ctx, c, []string{key, key + ":sem"}, token, prefix, "peers:scripts:chan").Err()
				case v.noPrefix:
					err = scripts[i].EvalSha(ctx, c, []string{key, key + ":fence", key + ":sem", key + ":semval"},
						token, "30000", `,"owner":"bench@host:1"`).Err()
				default:
					// Lock, fence and the semaphore's two keys: what acquire.lua
					// takes (older versions read only the first two).
					err = scripts[i].EvalSha(ctx, c, []string{key, key + ":fence", key + ":sem", key + ":semval"},
						token, "30000", prefix, `,"owner":"bench@host:1"`).Err()
				}
				if err != nil && err != redis.Nil {
					return fmt.Errorf("%s, call %d: %w", v.name, j, err)
				}
			}
			stats, err := commandStats(ctx, c)
			if err != nil {
				return err
			}
			s := stats["evalsha"]
			if s.calls != n {
				return fmt.Errorf("%s: %d evalsha calls, want %d", v.name, s.calls, n)
			}
			usec[i] = append(usec[i], float64(s.usec)/float64(s.calls))
		}
	}
	fmt.Printf("\n### Server time of lockctl's scripts and variants (%d calls × %d rounds, interleaved)\n\n", n, rounds)
	fmt.Println("| script | µs per call (min–max) |")
	fmt.Println("|---|---|")
	for i, v := range vs {
		slices.Sort(usec[i])
		fmt.Printf("| %s | %s (%s–%s) |\n", v.name, f1(usec[i][len(usec[i])/2]), f1(usec[i][0]), f1(usec[i][len(usec[i])-1]))
	}
	return nil
}

func f1(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
