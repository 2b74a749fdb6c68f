package inspect

import "testing"

// The rules of Redis's stringmatchlen, edge cases included.
func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		p, s string
		want bool
	}{
		{"*", "", true}, {"*", "abc", true}, {"a*", "abc", true}, {"a*c", "abbbc", true}, {"a*c", "abd", false},
		{"?", "a", true}, {"?", "", false}, {"a?c", "abc", true},
		{"[abc]x", "bx", true}, {"[^abc]x", "bx", false}, {"[^abc]x", "dx", true},
		{"[a-c]", "b", true}, {"[c-a]", "b", true}, {"[a-c]", "d", false},
		{`\*`, "*", true}, {`\*`, "a", false}, {`lock\:x`, "lock:x", true},
		{`[\]]`, "]", true}, {"lock:*", "lock:deploy", true}, {"lock:*", "xlock:deploy", false},
		{"**b", "ab", true}, {"a", "ab", false}, {"ab", "a", false},
	} {
		if got := globMatch(c.p, c.s); got != c.want {
			t.Errorf("globMatch(%q, %q) = %v, want %v", c.p, c.s, got, c.want)
		}
	}
}
