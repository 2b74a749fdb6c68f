// Package shellwords splits shell text into words as sh would, for the
// tests that read lockctl's calls out of the README and the help examples.
// It removes quotes and backslash escapes and leaves $VAR and $(...) as
// written: the tests check the shape of a call, not the values.
package shellwords

import (
	"regexp"
	"strings"
)

// Split splits a simple command into its words; redirections ("2>&1",
// ">>file", "> file" with its target) are dropped.
func Split(s string) []string {
	words, _ := scan(s, false)
	var out []string
	for i := 0; i < len(words); i++ {
		m := redirect.FindStringSubmatch(words[i])
		if m == nil {
			out = append(out, words[i])
			continue
		}
		if m[1] == "" && m[2] == "" {
			i++ // the target is the next word
		}
	}
	return out
}

var redirect = regexp.MustCompile(`^[0-9]*(?:>>?|<|&>)(&?[0-9-]*)?(.*)$`)

// Command splits s into words up to the end of its first shell command (an
// unquoted ), |, ;, &, <, > or a # that starts a word), returning the words
// and where it stopped.
func Command(s string) ([]string, int) { return scan(s, true) }

// StripComment cuts a # comment that starts a word outside quotes.
func StripComment(s string) string {
	var sq, dq bool
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\' && !sq && i+1 < len(s):
			i++
		case c == '\'' && !dq:
			sq = !sq
		case c == '"' && !sq:
			dq = !dq
		case c == '#' && !sq && !dq && (i == 0 || s[i-1] == ' ' || s[i-1] == '\t'):
			return s[:i]
		}
	}
	return s
}

// scan is the tokenizer of Split and Command; with stop it ends at the
// first unquoted operator or comment.
func scan(s string, stop bool) ([]string, int) {
	var words []string
	var cur strings.Builder
	in, sq, dq := false, false, false
	flush := func() {
		if in {
			words = append(words, cur.String())
		}
		cur.Reset()
		in = false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case sq:
			if c == '\'' {
				sq = false
			} else {
				cur.WriteByte(c)
			}
		case dq:
			switch {
			case c == '"':
				dq = false
			case c == '\\' && i+1 < len(s) && strings.IndexByte("\"\\$`", s[i+1]) >= 0:
				cur.WriteByte(s[i+1])
				i++
			default:
				cur.WriteByte(c)
			}
		case c == '\'':
			sq, in = true, true
		case c == '"':
			dq, in = true, true
		case c == '\\' && i+1 < len(s):
			cur.WriteByte(s[i+1])
			in = true
			i++
		case c == ' ' || c == '\t':
			flush()
		case stop && (strings.IndexByte(")|;&<>", c) >= 0 || c == '#' && !in):
			flush()
			return words, i
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	flush()
	return words, len(s)
}
