package cmd

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/lockctl/lockctl/cmd/ui"
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

// finePrintKey is the annotation holding a command's fine print: the part
// of its description the man page shows and --help leaves out, so that
// --help stays a summary with Usage: near the top.
const finePrintKey = "lockctl.fineprint"

// setFinePrint gives c fine print for its man page (see FinePrint).
func setFinePrint(c *cobra.Command, text string) {
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	c.Annotations[finePrintKey] = text
}

// FinePrint is the part of c's description only its man page shows, after
// Long: the details (timing rules, signals, edge cases) a summary in
// --help points to.
func FinePrint(c *cobra.Command) string { return c.Annotations[finePrintKey] }

// ManPage is the name of c's man page (lockctl-inspect-locks).
func ManPage(c *cobra.Command) string { return strings.ReplaceAll(c.CommandPath(), " ", "-") }

// setHelpLayout lays every help page of root's tree out for the width of
// the terminal help goes to, or ui.HelpWidth off a terminal: descriptions,
// command lists and flag usages are wrapped to it, where cobra's own
// templates let a flag's usage run on for 200 columns.
func setHelpLayout(root *cobra.Command, streams *ui.IOStreams) {
	width := func() int {
		if w := streams.Width(); w > 0 {
			return w
		}
		return ui.HelpWidth
	}
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		writeHelp(c.OutOrStdout(), c, width())
	})
	root.SetUsageFunc(func(c *cobra.Command) error {
		return writeUsage(c.OutOrStderr(), c, width())
	})
}

// writeHelp is cobra's help page (description, then usage) wrapped to
// width, with a pointer to the man page when the command has fine print.
func writeHelp(w io.Writer, c *cobra.Command, width int) {
	text := c.Long
	if text == "" {
		text = c.Short
	}
	var b strings.Builder
	if text = strings.TrimRightFunc(text, unicode.IsSpace); text != "" {
		b.WriteString(ui.Wrap(text, width) + "\n\n")
	}
	if FinePrint(c) != "" {
		b.WriteString(ui.Wrap("Details: man "+ManPage(c), width) + "\n\n")
	}
	_, _ = io.WriteString(w, b.String())
	if c.Runnable() || c.HasSubCommands() {
		_ = writeUsage(w, c, width)
	}
}

// writeUsage is cobra's usage text (its default usage function, which it
// keeps equal to its default template) with command lists and flag usages
// wrapped to width. Examples are shell lines, kept whole: they are written
// to fit 80 columns (TestHelpFits80Columns).
func writeUsage(w io.Writer, c *cobra.Command, width int) error {
	var b strings.Builder
	b.WriteString("Usage:")
	if c.Runnable() {
		b.WriteString("\n  " + c.UseLine())
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n  " + c.CommandPath() + " [command]")
	}
	if len(c.Aliases) > 0 {
		b.WriteString("\n\nAliases:\n  " + c.NameAndAliases())
	}
	if c.HasExample() {
		b.WriteString("\n\nExamples:\n" + c.Example)
	}
	listed := func(s *cobra.Command) bool { return s.IsAvailableCommand() || s.Name() == "help" }
	list := func(title string, keep func(*cobra.Command) bool) {
		b.WriteString("\n\n" + title)
		for _, s := range c.Commands() {
			if listed(s) && keep(s) {
				pad := s.NamePadding()
				line := fmt.Sprintf("  %-*s %s", pad, s.Name(), s.Short)
				b.WriteString("\n" + ui.Wrap(line, width))
			}
		}
	}
	if c.HasAvailableSubCommands() {
		if len(c.Groups()) == 0 {
			list("Available Commands:", func(*cobra.Command) bool { return true })
		} else {
			for _, g := range c.Groups() {
				id := g.ID
				list(g.Title, func(s *cobra.Command) bool { return s.GroupID == id })
			}
			if !c.AllChildCommandsHaveGroup() {
				list("Additional Commands:", func(s *cobra.Command) bool { return s.GroupID == "" })
			}
		}
	}
	if c.HasAvailableLocalFlags() {
		b.WriteString("\n\nFlags:\n" + strings.TrimRightFunc(ui.Wrap(c.LocalFlags().FlagUsages(), width), unicode.IsSpace))
	}
	if c.HasAvailableInheritedFlags() {
		b.WriteString("\n\nGlobal Flags:\n" + strings.TrimRightFunc(ui.Wrap(c.InheritedFlags().FlagUsages(), width), unicode.IsSpace))
	}
	if c.HasHelpSubCommands() {
		b.WriteString("\n\nAdditional help topics:")
		for _, s := range c.Commands() {
			if s.IsAdditionalHelpTopicCommand() {
				line := fmt.Sprintf("  %-*s %s", s.CommandPathPadding(), s.CommandPath(), s.Short)
				b.WriteString("\n" + ui.Wrap(line, width))
			}
		}
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("\n\n" + ui.Wrap(fmt.Sprintf("Use \"%s [command] --help\" for more information about a command.", c.CommandPath()), width))
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// unknownCommand turns cobra's error for an unknown command into a usage
// error of one line. Cobra appends its suggestions as a block of lines
// ("\n\nDid you mean this?\n\tls\n\trun\n") meant to be printed raw, but a
// diagnostic is one escaped line (ui.Escape: its text may quote data from
// Redis), which showed that block as literal \n and \t; the suggestions go
// into the line itself instead, as for an unknown subcommand (groupRunE).
func unknownCommand(err error) error {
	msg, block, _ := strings.Cut(err.Error(), "\n\nDid you mean this?\n")
	var sug []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			sug = append(sug, l)
		}
	}
	return &UsageError{Err: errors.New(msg + didYouMean(sug)), Hints: []string{"see `lockctl --help` for the commands"}}
}

// didYouMean is the end of an error line naming the suggestions: "" for
// none, "; did you mean ls?", "; did you mean ls or run?".
func didYouMean(sug []string) string {
	switch len(sug) {
	case 0:
		return ""
	case 1:
		return "; did you mean " + sug[0] + "?"
	}
	return "; did you mean " + strings.Join(sug[:len(sug)-1], ", ") + " or " + sug[len(sug)-1] + "?"
}

// newHelpCmd is `lockctl help [command...]`: the help page of the command
// named, as cobra's help command prints it, but a topic that names no
// command is a usage error (exit 64) naming the nearest commands, as a
// mistyped command is, where cobra printed "Unknown help topic" and the
// root's usage with exit 0.
func newHelpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help for any command: lockctl help COMMAND [SUBCOMMAND] prints what lockctl COMMAND [SUBCOMMAND] --help does.",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					out = append(out, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, err := helpTopic(c.Root(), args)
			if err != nil {
				return err
			}
			cmd.InitDefaultHelpFlag()
			cmd.InitDefaultVersionFlag()
			return cmd.Help()
		},
	}
}

// helpTopic is the command args name, below root: each argument must be a
// subcommand (or alias) of the one before. Otherwise a usage error names
// the topic and the nearest subcommands of the last command found.
func helpTopic(root *cobra.Command, args []string) (*cobra.Command, error) {
	cmd := root
	for i, a := range args {
		var next *cobra.Command
		for _, sub := range cmd.Commands() {
			if (sub.IsAvailableCommand() || sub.Name() == "help") && (sub.Name() == a || sub.HasAlias(a)) {
				next = sub
				break
			}
		}
		if next == nil {
			if cmd.SuggestionsMinimumDistance <= 0 {
				cmd.SuggestionsMinimumDistance = 2
			}
			err := fmt.Errorf("unknown help topic %q%s", strings.Join(args[:i+1], " "), didYouMean(cmd.SuggestionsFor(a)))
			hint := fmt.Sprintf("see `%s --help`", cmd.CommandPath())
			if cmd.HasAvailableSubCommands() {
				hint += " for the commands"
			}
			return nil, &UsageError{Err: err, Hints: []string{hint}}
		}
		cmd = next
	}
	return cmd, nil
}
