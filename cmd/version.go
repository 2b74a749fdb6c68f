package cmd

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// Version is set at build time with -ldflags "-X github.com/lockctl/lockctl/cmd.Version=v1.2.3".
var Version = ""

// Commit and CommitTime name the checkout a binary was built from when the
// Go toolchain could not stamp it (a git worktree, -buildvcs=false): make
// build sets them with -ldflags -X. Build info, when present, wins.
var (
	Commit     = ""
	CommitTime = ""
)

// buildVersion is what `lockctl version` reports.
type buildVersion struct {
	Version    string `json:"version"`
	Commit     string `json:"commit,omitempty"`
	CommitTime string `json:"commit_time,omitempty"`
	Modified   bool   `json:"modified,omitempty"`
	Go         string `json:"go"`
}

// versionOf reads the version from the build: -X Version, else the module
// version (`go install …@v1.2.3`, or the pseudo-version Go derives from a
// checkout), else "devel"; and the VCS revision, its time and whether the
// tree had local changes, from the build info or make build's -X values.
func versionOf(bi *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{Version: Version, Commit: Commit, CommitTime: CommitTime, Go: runtime.Version()}
	if ok {
		if v.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
			v.Version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.time":
				v.CommitTime = s.Value
			case "vcs.modified":
				v.Modified = s.Value == "true"
			}
		}
	}
	if Commit != "" && CommitTime != "" && v.Commit == Commit {
		v.CommitTime = CommitTime
	}
	if v.Version == "" {
		v.Version = "devel"
	}
	return v
}

func (v buildVersion) String() string {
	s := "lockctl " + v.Version
	if v.Commit != "" {
		c := v.Commit
		if len(c) > 12 {
			c = c[:12]
		}
		s += " (commit " + c
		if v.CommitTime != "" {
			s += ", " + v.CommitTime
		}
		if v.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s + fmt.Sprintf(" (%s %s/%s)", v.Go, runtime.GOOS, runtime.GOARCH)
}

func newVersionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print lockctl's version (and the commit a checkout build came from)",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return printVersion(f)
		},
	}
}

func printVersion(f *Factory) error {
	v := versionOf(debug.ReadBuildInfo())
	if f.G.Output == "json" {
		return f.IO.PrintJSON(v)
	}
	_, err := fmt.Fprintln(f.IO.Out, v.String())
	return err
}

// addVersionFlag gives the root --version, which prints what `lockctl
// version` prints (-o json too), as most command-line tools answer it.
// Without --version (and without a command) the root shows its help, as
// it did when it had nothing to run, and reads no configuration for it.
func addVersionFlag(root *cobra.Command, f *Factory) {
	var want bool
	root.Flags().BoolVar(&want, "version", false, "print lockctl's version, as 'lockctl version' does")
	resolve := root.PersistentPreRunE
	root.PersistentPreRunE = func(c *cobra.Command, args []string) error {
		if c == root && !want {
			return nil
		}
		return resolve(c, args)
	}
	root.RunE = func(c *cobra.Command, args []string) error {
		if want {
			return printVersion(f)
		}
		return c.Help()
	}
}
