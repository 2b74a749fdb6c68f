package cmd

import "unicode/utf8"

func validName(args []string, what string) (string, error) {
	if len(args) == 0 || args[0] == "" {
		return "", usageErrorf("missing %s", what)
	}
	return args[0], nil
}

// newName is validName for a command that creates what NAME names (lock,
// run, fence next and check): it also refuses a name that is not valid
// UTF-8. Commands that act on an existing key (release, renew, inspect,
// force-release) accept any name, so such a key written by another client
// can still be looked at and freed.
func newName(args []string, what string) (string, error) {
	name, err := validName(args, what)
	if err != nil {
		return "", err
	}
	return name, checkUTF8(name, what)
}

// checkUTF8 refuses a NAME or KEY that is not valid UTF-8: every place it
// is shown (tables, JSON, metric labels) needs text, and a Prometheus label
// value that is not UTF-8 made a scrape fail.
func checkUTF8(s, what string) error {
	if !utf8.ValidString(s) {
		return usageErrorf("%s %q is not valid UTF-8", what, s)
	}
	return nil
}
