package ui_test

import (
	"bytes"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/lockctl/lockctl/cmd/ui"
)

// shRuns bounds the inputs each fuzz process also checks with a real
// /bin/sh: every seed, then the first inputs the fuzzer makes (a process per
// input is slow next to the Go check, which sees every input).
var shRuns atomic.Int64

const maxShRuns = 400

var envNames = []string{"LOCKCTL_FENCE", "LOCKCTL_KEY", "LOCKCTL_TOKEN"}

// FuzzPrintEnv: `eval "$(lockctl lock NAME -o env)"` must set exactly the
// printed values, whatever a key, token or owner holds.
func FuzzPrintEnv(f *testing.F) {
	for _, s := range []string{"", "plain", "it's", "'", "''", `"`, `a"b'c`, "two words", "$HOME", "${x:-y}",
		"`id`", "$(id)", "a\nb", "\n", "trailing\n\n", "tab\there", "\\", `\'`, "back\\slash\\n",
		"héllo wörld", "日本語", "\xff\xfe", "emoji 🔒", "#comment", "~user", "*", "[a]", "a;b|c&d",
		"<x>", "!", "\r\n", "\x1b[31mred", "=", "-n", "x\x00y"} {
		f.Add("lock:"+s, s, "7")
		f.Add(s, "0123456789abcdef", s)
	}
	f.Fuzz(func(t *testing.T, key, token, fence string) {
		vars := map[string]string{"LOCKCTL_KEY": key, "LOCKCTL_TOKEN": token, "LOCKCTL_FENCE": fence}
		io, _, out, _ := ui.Test()
		if err := io.PrintEnv(vars); err != nil {
			t.Fatal(err)
		}
		got, err := parseAssignments(out.String())
		if err != nil {
			t.Fatalf("PrintEnv(%q) = %q: %v", vars, out, err)
		}
		for _, n := range envNames {
			if got[n] != vars[n] {
				t.Fatalf("PrintEnv(%q) = %q: %s reads back as %q", vars, out, n, got[n])
			}
		}
		if len(got) != len(vars) {
			t.Fatalf("PrintEnv(%q) = %q: %d assignments", vars, out, len(got))
		}
		if strings.Contains(key+token+fence, "\x00") || shRuns.Add(1) > maxShRuns {
			// A shell variable cannot hold NUL (nor can argv carry it).
			return
		}
		sh := exec.Command("/bin/sh", "-c", `eval "$1" && printf '%s\0%s\0%s' "$LOCKCTL_FENCE" "$LOCKCTL_KEY" "$LOCKCTL_TOKEN"`, "sh", out.String())
		var stderr bytes.Buffer
		sh.Stderr = &stderr
		b, err := sh.Output()
		if err != nil {
			t.Fatalf("sh eval of %q: %v (%s)", out, err, stderr.String())
		}
		vals := strings.Split(string(b), "\x00")
		for i, n := range envNames {
			if i >= len(vals) || vals[i] != vars[n] {
				t.Fatalf("sh eval of %q: %s = %q, want %q", out, n, vals, vars[n])
			}
		}
	})
}

func TestShellUnquoter(t *testing.T) {
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: `'a b'`, want: "a b"},
		{in: `a\ b`, want: "a b"},
		{in: `"a b"`, want: "a b"},
		{in: `'it'\''s'`, want: "it's"},
		{in: "'a\nb'", want: "a\nb"},
		{in: `"\$x"`, want: "$x"},
		{in: `"\a"`, want: `\a`},
		{in: "a\\\nb", want: "ab"},
		{in: `a b`, bad: true},
		{in: `$x`, bad: true},
		{in: `"$x"`, bad: true},
		{in: "`id`", bad: true},
		{in: `'open`, bad: true},
		{in: `a;b`, bad: true},
		{in: `*`, bad: true},
	} {
		got, err := shellWord(tc.in)
		if tc.bad != (err != nil) || (!tc.bad && got != tc.want) {
			t.Errorf("shellWord(%q) = %q, %v; want %q (bad %v)", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// parseAssignments reads NAME=WORD lines the way a POSIX shell's eval does,
// for words that need no expansion; anything a shell would expand, split
// or treat as syntax is an error.
func parseAssignments(s string) (map[string]string, error) {
	vars := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 {
			return nil, fmt.Errorf("no NAME= at %q", s)
		}
		name := s[:eq]
		for i, c := range name {
			nameChar := c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || i > 0 && c >= '0' && c <= '9'
			if !nameChar {
				return nil, fmt.Errorf("bad name %q", name)
			}
		}
		end, err := wordEnd(s[eq+1:])
		if err != nil {
			return nil, err
		}
		word := s[eq+1 : eq+1+end]
		rest := s[eq+1+end:]
		if !strings.HasPrefix(rest, "\n") {
			return nil, fmt.Errorf("assignment %s not ended by a newline: %q", name, rest)
		}
		v, err := shellWord(word)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		vars[name] = v
		s = rest[1:]
	}
	return vars, nil
}

// wordEnd finds the first unquoted newline, blank or operator in s: where
// the shell ends the word.
func wordEnd(s string) (int, error) {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '\'':
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return 0, errors.New("unterminated '")
			}
			i += 1 + j
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
			if i >= len(s) {
				return 0, errors.New(`unterminated "`)
			}
		case '\n', ' ', '\t', ';', '&', '|', '<', '>', '(', ')':
			return i, nil
		}
	}
	return len(s), nil
}

// shellWord is the value of one shell word after quote removal, or an error
// when the shell would expand, glob or split it.
func shellWord(w string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(w); i++ {
		c := w[i]
		switch c {
		case '\\':
			if i+1 >= len(w) {
				return "", errors.New("trailing backslash")
			}
			i++
			if w[i] != '\n' { // backslash-newline is a line continuation
				b.WriteByte(w[i])
			}
		case '\'':
			j := strings.IndexByte(w[i+1:], '\'')
			if j < 0 {
				return "", errors.New("unterminated '")
			}
			b.WriteString(w[i+1 : i+1+j])
			i += 1 + j
		case '"':
			for i++; ; i++ {
				if i >= len(w) {
					return "", errors.New(`unterminated "`)
				}
				d := w[i]
				if d == '"' {
					break
				}
				if d == '$' || d == '`' {
					return "", fmt.Errorf("expansion %q inside double quotes", d)
				}
				if d == '\\' && i+1 < len(w) && strings.IndexByte("$`\"\\\n", w[i+1]) >= 0 {
					i++
					if w[i] != '\n' {
						b.WriteByte(w[i])
					}
					continue
				}
				b.WriteByte(d)
			}
		case '$', '`', '*', '?', '[', '~', '#', ' ', '\t', '\n', ';', '&', '|', '<', '>', '(', ')', '!', '{', '}':
			// Unquoted: an expansion, a glob, a comment, a split or syntax
			// (~ and # only at the start, ! { } only as words, but a safe
			// quoting never leaves them bare).
			return "", fmt.Errorf("unquoted %q", c)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}
