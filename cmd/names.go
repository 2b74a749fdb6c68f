package cmd

import (
	"fmt"
	"unicode"
	"unicode/utf8"
)

func validName(args []string, what string) (string, error) {
	if len(args) == 0 || args[0] == "" {
		return "", usageErrorf("missing %s", what)
	}
	return args[0], nil
}

// newName is validName for a command that creates what NAME names (lock,
// run, fence next and check): it also refuses a name that is not valid
// UTF-8 or holds a control character (checkNewName). Commands that act on
// an existing key (release, renew, inspect, force-release) accept any
// name, so such a key written by another client can still be looked at
// and freed.
func newName(args []string, what string) (string, error) {
	name, err := validName(args, what)
	if err != nil {
		return "", err
	}
	return name, checkNewName(name, what)
}

// checkNewName refuses a NAME or KEY that lockctl would create when it is
// not valid UTF-8, or holds a control character (newline, tab, ESC, DEL,
// C1): every place it is shown (tables, tab-separated rows, logs, JSON,
// metric labels) needs plain text, a Prometheus label value that is not
// UTF-8 made a scrape fail, and a newline or an escape sequence in a name
// splits rows or rewrites a terminal wherever a reader forgets to escape.
func checkNewName(s, what string) error {
	if !utf8.ValidString(s) {
		return usageErrorf("%s %q is not valid UTF-8", what, s)
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return &UsageError{Err: fmt.Errorf("%s %q holds a control character (%U)", what, s, r),
				Hints: []string{"names are text shown in tables, logs and metric labels: use letters, digits and punctuation such as : - _ . /"}}
		}
	}
	return nil
}
