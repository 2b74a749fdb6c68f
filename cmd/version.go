package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X github.com/lockctl/lockctl/cmd.Version=v1.2.3".
var Version = ""

func version() string {
	if Version != "" {
		return Version
	}
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "devel"
}

func newVersionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print lockctl's version",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if f.G.Output == "json" {
				return f.IO.PrintJSON(map[string]string{"version": version(), "go": runtime.Version()})
			}
			_, err := fmt.Fprintf(f.IO.Out, "lockctl %s (%s %s/%s)\n", version(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return err
		},
	}
}
