package cmd

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/spf13/cobra"
)

// A panic in a command is a lockctl bug: exit 70 with a message that says
// so, not a Go stack dump and exit 2. The stack is for -v.
func TestPanicIsABug(t *testing.T) {
	withPanic := func(f *Factory) *cobra.Command {
		root := NewRootCmd(f)
		root.AddCommand(&cobra.Command{Use: "boom", RunE: func(*cobra.Command, []string) error {
			var m map[string]int
			m["x"]++ // a nil map: the kind of slip a bug is
			return nil
		}})
		return root
	}
	for _, verbose := range []bool{false, true} {
		args := []string{"boom"}
		if verbose {
			args = append(args, "-v")
		}
		io, _, out, errOut := ui.Test()
		code := mainArgs(args, io, withPanic)
		stderr := errOut.String()
		if code != ExitInternal {
			t.Fatalf("%v: exit %d, want %d; stderr %q", args, code, ExitInternal, stderr)
		}
		if !strings.Contains(stderr, "lockctl: internal error: panic: assignment to entry in nil map") ||
			!strings.Contains(stderr, "hint: this is a bug in lockctl") {
			t.Errorf("%v: stderr %q, want the panic named as an internal error and a bug", args, stderr)
		}
		if hasStack := strings.Contains(stderr, "goroutine "); hasStack != verbose {
			t.Errorf("%v: stack trace shown: %v, want %v; stderr %q", args, hasStack, verbose, stderr)
		}
		if out.Len() != 0 {
			t.Errorf("%v: stdout %q, want nothing", args, out.String())
		}
	}
}
