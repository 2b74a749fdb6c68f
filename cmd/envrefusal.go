package cmd

import (
	"strings"

	"github.com/spf13/cobra"
)

// `eval "$(lockctl lock NAME -o env)"` runs whatever lock printed. A refusal
// that printed nothing would make eval succeed and the script go on without
// the lock, so with -o env every failure of lock (held elsewhere, timeout,
// Redis down, usage error, interrupt) prints a statement that stops the shell
// that evaluates it with lockctl's own exit status. Unknown commands count
// too: a misspelt `lockctl lokc deploy -o env` must not run the deploy either.

// envRefusalWanted reports whether a failed invocation must print that
// statement: the command is lock (or could not be found) and its output is
// env.
func envRefusalWanted(root *cobra.Command, args []string, f *Factory) bool {
	if c, _, err := root.Find(args); err == nil && c.Name() != "lock" {
		return false
	}
	if v, ok := outputOnArgv(args); ok {
		return v == "env"
	}
	if f.G.command != "" {
		// Flags, environment and config file were resolved.
		return f.G.Output == "env"
	}
	return f.Getenv("LOCKCTL_OUTPUT") == "env"
}

// outputOnArgv finds the last -o/--output value before "--" without relying
// on the flag parser, which stops at the first bad flag (and a bad flag is
// one of the failures that must still stop the shell).
func outputOnArgv(args []string) (string, bool) {
	val, found := "", false
	for i, a := range args {
		if a == "--" {
			break
		}
		next := func() string {
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		}
		switch {
		case a == "--output":
			val, found = next(), true
		case strings.HasPrefix(a, "--output="):
			val, found = strings.TrimPrefix(a, "--output="), true
		case strings.HasPrefix(a, "--"), !strings.HasPrefix(a, "-"):
		default:
			// Shorthands, possibly combined: -o env, -oenv, -o=env, -no env.
			if j := strings.IndexByte(a, 'o'); j > 0 {
				rest := strings.TrimPrefix(a[j+1:], "=")
				if rest == "" {
					rest = next()
				}
				val, found = rest, true
			}
		}
	}
	return val, found
}
