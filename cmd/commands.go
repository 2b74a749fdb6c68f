package cmd

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// topCommandEntry is a command below the root: the names that invoke it
// (its name, then its aliases) and its constructor.
type topCommandEntry struct {
	names []string
	build func(*Factory) *cobra.Command
	// whole: the command works on the whole tree (completion scripts
	// describe every command), so invoking it builds every command.
	whole bool
}

// topCommands are the commands below the root, in the order they were
// added (help lists them sorted). TestTopCommandNames checks the names
// against what each constructor builds.
var topCommands = []topCommandEntry{
	{names: []string{"version"}, build: newVersionCmd},
	{names: []string{"completion"}, build: newCompletionCmd, whole: true},
	{names: []string{"lock", "acquire"}, build: newLockCmd},
	{names: []string{"renew"}, build: newRenewCmd},
	{names: []string{"release"}, build: newReleaseCmd},
	{names: []string{"fence"}, build: newFenceCmd},
	{names: []string{"inspect"}, build: newInspectCmd},
	{names: []string{"ls"}, build: newLsCmd},
	{names: []string{"doctor"}, build: newDoctorCmd},
	{names: []string{"simulate"}, build: newSimulateCmd},
	{names: []string{"limit"}, build: newLimitCmd},
	{names: []string{"once"}, build: newOnceCmd},
	{names: []string{"run"}, build: newRunCmd},
	{names: []string{"exporter"}, build: newExporterCmd},
	{names: []string{"top"}, build: newTopCmd},
}

// rootFor returns the constructor of the command tree that args need: the
// root with only the invoked command below it, so that a `lockctl run`
// pays for building run alone. help, completion, an unknown command or
// arguments that do not name one (flags the root does not know) get the
// whole tree, for their listings, scripts and suggestions.
func rootFor(args []string) func(*Factory) *cobra.Command {
	return func(f *Factory) *cobra.Command {
		root := newRootShell(f)
		e, ok := invokedCommand(root.PersistentFlags(), args)
		if !ok || e.whole {
			return finishRoot(f, root, topCommands, true)
		}
		f.partialTree = true
		return finishRoot(f, root, []topCommandEntry{e}, false)
	}
}

// invokedCommand is the entry of the command args invoke: the first
// argument that is not a global flag or a global flag's value. ok is false
// when no entry is named before "--", or a flag is not a global one (a
// command's flag before the command is the parser's error to report, on
// the whole tree).
func invokedCommand(global *pflag.FlagSet, args []string) (e topCommandEntry, ok bool) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--" || a == "-":
			return e, false
		case strings.HasPrefix(a, "--"):
			name, _, hasValue := strings.Cut(a[2:], "=")
			fl := global.Lookup(name)
			if fl == nil {
				return e, false
			}
			if !hasValue && fl.NoOptDefVal == "" {
				i++ // the flag's value
			}
		case strings.HasPrefix(a, "-"):
			// Shorthands, possibly combined (-vo json, -vojson).
			for j := 1; j < len(a); j++ {
				fl := global.ShorthandLookup(a[j : j+1])
				if fl == nil {
					return e, false
				}
				if fl.NoOptDefVal == "" {
					if j == len(a)-1 {
						i++ // the flag's value is the next argument
					}
					break
				}
			}
		default:
			for _, c := range topCommands {
				for _, n := range c.names {
					if n == a {
						return c, true
					}
				}
			}
			return e, false
		}
	}
	return e, false
}

// wholeTree is the whole command tree: root itself when it is, else one
// built for reading (the config file's keys are checked against every
// command's flags), on a factory of its own so that its flags do not
// rebind the running command's.
func wholeTree(f *Factory, root *cobra.Command) *cobra.Command {
	if !f.partialTree {
		return root
	}
	return NewRootCmd(NewFactory(f.IO))
}
