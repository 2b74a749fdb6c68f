package cmd

import (
	"io"

	"github.com/spf13/cobra"
)

// Shells lists the shells `lockctl completion` writes scripts for; the
// committed scripts live in completions/ as lockctl.<shell>.
var Shells = []string{"bash", "zsh", "fish", "powershell"}

func newCompletionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: `Print a shell completion script. Lock names complete from the server
(a bounded SCAN that gives up after 300ms); --token never completes.
The same scripts are in the completions/ directory of the source tree.`,
		Args:      cobra.ExactArgs(1),
		ValidArgs: Shells,
		RunE: func(c *cobra.Command, args []string) error {
			return WriteCompletion(c.Root(), args[0], f.IO.Out)
		},
	}
}

// WriteCompletion writes root's completion script for shell.
func WriteCompletion(root *cobra.Command, shell string, w io.Writer) error {
	switch shell {
	case "bash":
		return root.GenBashCompletionV2(w, true)
	case "zsh":
		return root.GenZshCompletion(w)
	case "fish":
		return root.GenFishCompletion(w, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(w)
	}
	return usageErrorf("unknown shell %q: want bash, zsh, fish or powershell", shell)
}
