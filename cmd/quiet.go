package cmd

import (
	"errors"

	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/lockctl/lockctl/pkg/once"
	"github.com/spf13/cobra"
)

// addQuietFlags adds -q and --no-ci-output to a command that takes a lock,
// a claim or a rate-limit slot (run, lock, once, limit).
func addQuietFlags(c *cobra.Command, g *Globals) {
	fs := c.Flags()
	fs.BoolVarP(&g.Quiet, "quiet", "q", false, "print no refusal (lock held elsewhere, wait timed out, rate limited, KEY in progress or already run) and no progress line; errors are still printed")
	fs.BoolVar(&g.NoCIOutput, "no-ci-output", false, "no GitHub Actions annotations or step summary (env LOCKCTL_NO_CI_OUTPUT)")
}

// isRefusal reports whether err is an expected "not now" outcome rather
// than a failure: the lock held elsewhere, a wait that ran out, a rate
// limit, a once KEY in progress or already run.
func isRefusal(err error) bool {
	return errors.Is(err, lock.ErrNotObtained) || errors.Is(err, limit.ErrLimited) ||
		errors.Is(err, once.ErrInProgress) || errors.As(err, new(*once.DoneError))
}

// quietRefusal reports whether the refusal err, ending with code, prints
// nothing on stderr: under -q, and under -E 0, which chose the refusal as
// a success (as `flock -n -E 0` prints nothing). -v prints it anyway.
func (f *Factory) quietRefusal(err error, code int) bool {
	if err == nil || f.G.Verbose || !isRefusal(err) {
		return false
	}
	return f.G.Quiet || (code == 0 && !errors.As(err, new(*once.DoneError)))
}

// Progressf prints a progress line (waiting, rate-limit decisions) on
// stderr, unless -q.
func (f *Factory) Progressf(format string, args ...any) {
	if !f.G.Quiet {
		f.IO.Errorf(format, args...)
	}
}
