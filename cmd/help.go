package cmd

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// unsetZeroDurations hides pflag's "(default 0s)" on duration flags: in
// lockctl a zero duration default means "unset" (-w waits until acquired,
// --renew-every is ttl/6, renew --ttl keeps the lease's own), and the
// usage text says what that is.
func unsetZeroDurations(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		fix := func(fl *pflag.Flag) {
			if _, ok := fl.Value.(*durationValue); ok && fl.DefValue == "0s" {
				fl.DefValue = ""
			}
		}
		c.LocalNonPersistentFlags().VisitAll(fix)
		c.PersistentFlags().VisitAll(fix)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// groupRunE is the RunE of a command that only groups subcommands
// (inspect, fence): with none, a usage error naming them; with an unknown
// one, the nearest. Every group behaves alike.
func groupRunE(c *cobra.Command, args []string) error {
	var names []string
	for _, s := range c.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	list := strings.Join(names, ", ")
	if len(args) == 0 {
		return &UsageError{Err: fmt.Errorf("missing subcommand: %s", list),
			Hints: []string{fmt.Sprintf("see `%s --help`", c.CommandPath())}}
	}
	err := fmt.Errorf("unknown subcommand %q for %q", args[0], c.CommandPath())
	if c.SuggestionsMinimumDistance <= 0 {
		c.SuggestionsMinimumDistance = 2
	}
	if sug := c.SuggestionsFor(args[0]); len(sug) > 0 {
		err = fmt.Errorf("%v; did you mean %s?", err, sug[0])
	}
	return &UsageError{Err: err, Hints: []string{"the subcommands are " + list}}
}

// flagError makes a flag parse error a usage error; an unknown long flag
// names the closest real one, as git and kubectl do for commands.
func flagError(c *cobra.Command, err error) error {
	hint := fmt.Sprintf("see `%s --help`", c.CommandPath())
	var missing *pflag.NotExistError
	if errors.As(err, &missing) && strings.HasPrefix(err.Error(), "unknown flag: --") {
		typed := missing.GetSpecifiedName()
		if best := closestFlag(c, typed); best != "" {
			err = fmt.Errorf("unknown flag --%s; did you mean --%s?", typed, best)
		}
	}
	return &UsageError{Err: err, Hints: []string{hint}}
}

// closestFlag is the visible flag of c nearest to typed: within two edits
// (one for names of up to four letters), or the only flag typed begins.
func closestFlag(c *cobra.Command, typed string) string {
	best, bestD := "", -1
	var prefixed []string
	c.Flags().VisitAll(func(fl *pflag.Flag) {
		if fl.Hidden {
			return
		}
		if strings.HasPrefix(fl.Name, typed) {
			prefixed = append(prefixed, fl.Name)
		}
		if d := editDistance(typed, fl.Name); bestD < 0 || d < bestD || (d == bestD && fl.Name < best) {
			best, bestD = fl.Name, d
		}
	})
	limit := 2
	if len(typed) <= 4 {
		limit = 1
	}
	switch {
	case bestD >= 0 && bestD <= limit:
		return best
	case len(prefixed) == 1 && len(typed) >= 2:
		return prefixed[0]
	}
	return ""
}

// editDistance is the Damerau-Levenshtein (optimal string alignment)
// distance: a swap of two letters (--tll for --ttl is a substitution,
// --tlt a swap) counts as one edit.
func editDistance(a, b string) int {
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}
