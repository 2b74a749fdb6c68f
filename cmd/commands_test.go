package cmd

import (
	"slices"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/spf13/cobra"
)

// builtCommands are the names of lockctl's commands below root (not
// cobra's own help, which it adds when the tree runs).
func builtCommands(root *cobra.Command) []string {
	var names []string
	for _, c := range root.Commands() {
		if c.Name() != "help" {
			names = append(names, c.Name())
		}
	}
	return names
}

// TestTopCommandNames holds the table rootFor looks names up in to what
// the constructors build: a command renamed or given an alias there must
// be found by its new name.
func TestTopCommandNames(t *testing.T) {
	io, _, _, _ := ui.Test()
	for _, e := range topCommands {
		c := e.build(NewFactory(io))
		want := append([]string{c.Name()}, c.Aliases...)
		if !slices.Equal(e.names, want) {
			t.Errorf("topCommands has %v, the command is %v", e.names, want)
		}
	}
	whole := builtCommands(NewRootCmd(NewFactory(io)))
	if len(whole) != len(topCommands) {
		t.Errorf("the whole tree has %v, topCommands %d entries", whole, len(topCommands))
	}
}

// TestInvokedCommandAlone: a command line that names a command builds that
// command alone below the root (lockctl run must not pay for building the
// others); one that needs the whole tree (help, completion, an unknown
// command, a flag the root does not know) builds every command.
func TestInvokedCommandAlone(t *testing.T) {
	io, _, _, _ := ui.Test()
	all := len(topCommands)
	for _, tc := range []struct {
		args string
		want string // the one command built; "" for the whole tree
	}{
		{"run -n x -- true", "run"},
		{"run x -- lockctl lock y", "run"},
		{"--url redis://127.0.0.1:1/0 -v run x -- true", "run"},
		{"--url=redis://127.0.0.1:1/0 --timeout 2s run x -- true", "run"},
		{"-o json lock x", "lock"},
		{"-vojson lock x", "lock"},
		{"-vo json lock x", "lock"},
		{"--no-events acquire x", "lock"},
		{"version", "version"},
		{"inspect locks", "inspect"},
		{"ls", "ls"},
		{"run --help", "run"},
		{"", ""},
		{"--help", ""},
		{"help run", ""},
		{"completion bash", ""},
		{"__complete run ''", ""},
		{"rn x -- true", ""},
		{"--ttl 5s run x -- true", ""},
		{"-- run x", ""},
		{"--url", ""},
	} {
		root := rootFor(strings.Fields(tc.args))(NewFactory(io))
		got := builtCommands(root)
		switch {
		case tc.want == "" && len(got) != all:
			t.Errorf("%q built %v, want every command", tc.args, got)
		case tc.want != "" && !slices.Equal(got, []string{tc.want}):
			t.Errorf("%q built %v, want only %s", tc.args, got, tc.want)
		}
	}
}

// TestRunBuildsRunAlone goes through mainArgs with rootFor, as Main does:
// running `lockctl run` (here, its help: no server needed) builds run
// alone.
func TestRunBuildsRunAlone(t *testing.T) {
	io, _, out, _ := ui.Test()
	var root *cobra.Command
	args := []string{"run", "--help"}
	capture := func(f *Factory) *cobra.Command {
		root = rootFor(args)(f)
		return root
	}
	if code, _, _ := mainArgs(args, io, capture); code != 0 {
		t.Fatalf("lockctl run --help: exit %d", code)
	}
	if got := builtCommands(root); !slices.Equal(got, []string{"run"}) {
		t.Errorf("lockctl run built %v, want only run", got)
	}
	if !strings.Contains(out.String(), "Hold NAME while CMD runs") {
		t.Errorf("lockctl run --help printed:\n%s", out)
	}
}

// TestMainArgsBuildsNoWholeTree: MainArgs (as Main) allocates less for
// `lockctl version` than building the whole command tree alone does; it
// would allocate more if it built the whole tree again. Allocations, not
// time: the count does not depend on the machine's load.
func TestMainArgsBuildsNoWholeTree(t *testing.T) {
	io, _, _, _ := ui.Test()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir()) // no config file
	t.Setenv("HOME", t.TempDir())
	whole := testing.AllocsPerRun(5, func() { NewRootCmd(NewFactory(io)) })
	version := testing.AllocsPerRun(5, func() {
		if code := MainArgs([]string{"version"}, io); code != 0 {
			t.Fatalf("lockctl version: exit %d", code)
		}
	})
	if version >= whole {
		t.Errorf("lockctl version made %.0f allocations, building the whole tree %.0f: version builds the whole tree", version, whole)
	}
	t.Logf("lockctl version: %.0f allocations; the whole tree alone: %.0f", version, whole)
}
