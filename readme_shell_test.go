package main

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/lockctl/lockctl/internal/testkit/shellwords"
)

// findLockctlCalls finds the lockctl command lines of a block: in shell
// text every simple command whose program is lockctl (inside $(...),
// <(...), pipelines and lists too); in other text (a systemd ExecStart=, a
// CI job's run:) the rest of any line from a lockctl word on.
func findLockctlCalls(text string, isShell bool) []lockctlCall {
	var calls []lockctlCall
	for _, ll := range logicalLines(text) {
		src := shellwords.StripComment(ll.text)
		if !isShell {
			m := lockctlWord.FindStringIndex(src)
			if m == nil {
				continue
			}
			src = strings.TrimLeft(src[m[0]:], " \t=:-")
		}
		for _, simple := range simpleCommands(src) {
			words := shellwords.Split(simple)
			for len(words) > 0 && skipWord(words[0]) {
				words = words[1:]
			}
			if len(words) > 0 && filepath.Base(words[0]) == "lockctl" {
				calls = append(calls, lockctlCall{line: ll.line, bin: words[0], args: words[1:], shell: ll.text})
			}
		}
	}
	return calls
}

var (
	lockctlWord = regexp.MustCompile(`(?:^|[\s=:])(?:/[\w./-]*/)?lockctl\s`)
	assignment  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
)

// skipWord: words before the program (assignments, keywords, wrappers).
func skipWord(w string) bool {
	switch w {
	case "sudo", "exec", "env", "time", "command", "nohup", "if", "then", "else", "elif",
		"while", "until", "do", "!", "watch":
		return true
	}
	return assignment.MatchString(w)
}

type logicalLine struct {
	line int
	text string
}

// logicalLines joins backslash-continued lines, keeping the first line's
// number.
func logicalLines(text string) []logicalLine {
	var out []logicalLine
	lines := strings.Split(text, "\n")
	for i := 0; i < len(lines); i++ {
		start, l := i, lines[i]
		for strings.HasSuffix(l, "\\") && i+1 < len(lines) {
			i++
			l = strings.TrimSuffix(l, "\\") + " " + lines[i]
		}
		out = append(out, logicalLine{line: start, text: l})
	}
	return out
}

// simpleCommands splits a line into its simple commands: the insides of
// $(...) and <(...) become commands of their own (replaced by a word in
// the outer one), and |, &, ;, (, ), {, } separate commands outside quotes
// (not the & of a redirection such as 2>&1).
func simpleCommands(s string) []string {
	var subs []string
	var outer strings.Builder
	var sq, dq bool
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '\\' && !sq && i+1 < len(s):
			outer.WriteString(s[i : i+2])
			i++
			continue
		case c == '\'' && !dq:
			sq = !sq
		case c == '"' && !sq:
			dq = !dq
		case (c == '$' || c == '<') && !sq && i+1 < len(s) && s[i+1] == '(':
			depth, j := 1, i+2
			for ; j < len(s) && depth > 0; j++ {
				switch s[j] {
				case '(':
					depth++
				case ')':
					depth--
				}
			}
			inner := s[i+2 : max(i+2, j-1)]
			subs = append(subs, simpleCommands(inner)...)
			outer.WriteString("SUBST")
			i = j - 1
			continue
		case !sq && !dq && strings.IndexByte("|;(){}", c) >= 0:
			outer.WriteByte('\n')
			continue
		case !sq && !dq && c == '&':
			prev := byte(' ')
			if i > 0 {
				prev = s[i-1]
			}
			if prev != '>' && prev != '<' && !(i+1 < len(s) && s[i+1] == '>') {
				outer.WriteByte('\n')
				continue
			}
		}
		outer.WriteByte(c)
	}
	var cmds []string
	for _, part := range strings.Split(outer.String(), "\n") {
		if strings.TrimSpace(part) != "" {
			cmds = append(cmds, part)
		}
	}
	return append(cmds, subs...)
}
