package cmd

import (
	"context"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/cli/inspectcli"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// completionBudget bounds the Redis part of one completion: the shell
// waits on it at every <Tab>, so a slow or unreachable server completes
// nothing rather than hang the prompt.
const completionBudget = 300 * time.Millisecond

// completionMax is the most names one completion offers.
const completionMax = 200

// heldNameCommands are the commands whose first argument is the name of a
// held lock (run and lock take any name: the held ones are a hint).
var heldNameCommands = []string{
	"release", "renew", "inspect lock", "inspect force-release", "fence peek",
	"ls", "inspect locks", "run", "lock",
}

// addCompletions wires dynamic name completion and flag-value completion
// into the tree under root.
func addCompletions(f *Factory, root *cobra.Command) {
	for _, path := range heldNameCommands {
		c, _, err := root.Find(strings.Fields(path))
		if err != nil || c == root {
			continue
		}
		c.ValidArgsFunction = completeHeldName(f)
	}
	done := map[*pflag.Flag]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		visit := func(fl *pflag.Flag) {
			if done[fl] {
				return
			}
			if fn := flagCompletion(fl); fn != nil {
				done[fl] = true
				_ = c.RegisterFlagCompletionFunc(fl.Name, fn)
			}
		}
		c.LocalNonPersistentFlags().VisitAll(visit)
		c.PersistentFlags().VisitAll(visit)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// completeHeldName completes the first argument with the names of locks
// held under the prefix.
func completeHeldName(f *Factory) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			if c.Name() == "run" {
				// The command to run: the shell's own completion.
				return nil, cobra.ShellCompDirectiveDefault
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		if strings.ContainsAny(toComplete, "*?[") {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return f.heldNames(c, toComplete), cobra.ShellCompDirectiveNoFileComp
	}
}

// heldNames lists held lock names starting with start, within
// completionBudget; any failure completes nothing.
func (f *Factory) heldNames(c *cobra.Command, start string) []string {
	// Completion skips the root's PersistentPreRunE: apply the
	// environment and config file here, as a real run would.
	if err := f.resolve(c); err != nil {
		return nil
	}
	if f.G.Timeout > completionBudget {
		f.G.Timeout = completionBudget
	}
	client, err := f.Client()
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), completionBudget)
	defer cancel()
	names, err := inspectcli.Names(ctx, client, f.G.Prefix, start, completionMax)
	if err != nil && ctx.Err() != nil {
		return nil
	}
	return names
}

// typicalDurations are offered for an empty duration; a number gets the
// units appended.
var typicalDurations = []string{"500ms", "5s", "30s", "1m", "5m", "10m", "1h"}

func completeDuration(toComplete string) []cobra.Completion {
	if toComplete == "" {
		return typicalDurations
	}
	if isDecimal(toComplete) {
		var out []string
		for _, u := range []string{"ms", "s", "m", "h"} {
			out = append(out, toComplete+u)
		}
		return out
	}
	return nil
}

// flagCompletion returns the value completion of fl, or nil to leave it
// to cobra.
func flagCompletion(fl *pflag.Flag) cobra.CompletionFunc {
	fixed := func(vals ...string) cobra.CompletionFunc {
		return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return vals, cobra.ShellCompDirectiveNoFileComp
		}
	}
	switch fl.Name {
	case "token":
		// A secret: nothing to offer, and no file names either.
		return fixed()
	case "fix":
		return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if d, ok := strings.CutPrefix(toComplete, "expire:"); ok {
				var out []string
				for _, v := range completeDuration(d) {
					out = append(out, "expire:"+v)
				}
				return out, cobra.ShellCompDirectiveNoFileComp
			}
			return []string{"delete", "expire:1h", "expire:24h"}, cobra.ShellCompDirectiveNoFileComp
		}
	case "config", "password-file", "tls-ca", "tls-cert", "tls-key", "report-file":
		return nil
	}
	switch v := fl.Value.(type) {
	case *enumValue:
		var vals []string
		for _, a := range v.allowed {
			if a != "" {
				vals = append(vals, a)
			}
		}
		return fixed(vals...)
	case *durationValue:
		return func(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			return completeDuration(toComplete), cobra.ShellCompDirectiveNoFileComp
		}
	}
	return nil
}
