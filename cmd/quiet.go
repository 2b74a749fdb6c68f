package cmd

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
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

// ciCommands are the commands whose outcomes become CI annotations.
var ciCommands = map[string]bool{"run": true, "lock": true, "once": true, "limit": true}

// githubActions reports whether lockctl speaks to a GitHub Actions runner:
// GITHUB_ACTIONS=true, and neither --no-ci-output nor LOCKCTL_NO_CI_OUTPUT.
func (f *Factory) githubActions() bool {
	if f.G.NoCIOutput || !ciCommands[f.G.command] || f.Getenv("GITHUB_ACTIONS") != "true" {
		return false
	}
	if v := f.Getenv("LOCKCTL_NO_CI_OUTPUT"); v != "" {
		if off, err := strconv.ParseBool(v); err != nil || off {
			return false
		}
	}
	return true
}

// annotate turns a refusal, a timeout, a lost lease (76) or a killed
// overrun (124) into a GitHub Actions annotation on stderr, which the
// runner reads as a workflow command: a warning for a refusal that -n
// asked for, an error for the rest. A refusal that prints nothing
// (quietRefusal) annotates nothing either.
func (f *Factory) annotate(err error, code int) {
	if err == nil || !f.githubActions() {
		return
	}
	level := ""
	switch {
	case isRefusal(err):
		if f.quietRefusal(err, code) {
			return
		}
		level = "warning"
		if errors.As(err, new(*waitTimeoutError)) {
			level = "error"
		}
	case code == ExitLost, code == ExitMaxRuntime, code == ExitUnavailable:
		level = "error"
	default:
		return
	}
	msg := err.Error()
	var exit *ExitError
	if errors.As(err, &exit) && exit.Err == nil {
		msg = fmt.Sprintf("exit status %d", code)
		switch code {
		case ExitLost:
			msg = "the lock was lost while the command ran (exit 76)"
		case ExitMaxRuntime:
			msg = "the command ran past --max-runtime and was killed (exit 124)"
		}
	}
	title := "lockctl " + f.G.command
	// Escaped as the stderr line is (no control character reaches the
	// log), then as the runner expects.
	fmt.Fprintf(f.IO.ErrOut, "::%s title=%s::%s\n", level, ghProperty(title), ghData(ui.Escape(msg)))
}

// ghData escapes a workflow command's message as the runner unescapes it,
// so that a lock name, owner or note from Redis cannot end the line and
// start a command of its own (::set-env, ::add-mask, ...).
func ghData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

// ghProperty escapes a workflow command's property value.
func ghProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}

// stepSummary appends one row about this run to $GITHUB_STEP_SUMMARY (a
// Markdown file the job's page shows), with a header row when the file is
// new or empty.
func (f *Factory) stepSummary(rep *runReport) {
	path := f.Getenv("GITHUB_STEP_SUMMARY")
	if path == "" || !f.githubActions() {
		return
	}
	result := "not acquired"
	switch {
	case rep.Lost:
		result = "lost while running"
	case rep.Acquired:
		result = "acquired, fence " + strconv.FormatInt(rep.Fence, 10)
	}
	cell := func(s string) string {
		return strings.NewReplacer("|", `\|`, "\n", " ", "\r", " ").Replace(s)
	}
	row := fmt.Sprintf("| `%s` | %s | %s | %s | %s | %d |\n", strings.ReplaceAll(cell(rep.Name), "`", "'"), cell(rep.Owner), result,
		time.Duration(rep.WaitedMS)*time.Millisecond, time.Duration(rep.HeldMS)*time.Millisecond, rep.Exit)
	file, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		f.IO.Errorf("warning: GITHUB_STEP_SUMMARY: %v", err)
		return
	}
	defer func() {
		if err := file.Close(); err != nil {
			f.IO.Errorf("warning: GITHUB_STEP_SUMMARY: %v", err)
		}
	}()
	if st, err := file.Stat(); err == nil && st.Size() == 0 {
		row = "| lockctl run | owner | result | waited | held | exit |\n|---|---|---|---|---|---|\n" + row
	}
	if _, err := file.WriteString(row); err != nil {
		f.IO.Errorf("warning: GITHUB_STEP_SUMMARY: %v", err)
	}
}

// waitTimeoutError is a -w wait that ran out: it says so, and how long it
// waited, where -n's refusal only names the holder.
type waitTimeoutError struct {
	msg    string
	err    error
	waited time.Duration
}

func (e *waitTimeoutError) Error() string { return e.msg }
func (e *waitTimeoutError) Unwrap() error { return e.err }

// ciText names the CI job a holder recorded, for refusal and wait lines.
func ciText(url string) string {
	if url == "" {
		return ""
	}
	return " " + url
}

// urlOrigin says where --url came from, for hints about an unreachable
// server: the flag, LOCKCTL_URL, REDIS_URL, a config file, or "" for the
// default.
func (f *Factory) urlOrigin() string {
	switch {
	case f.G.urlOnArgv:
		return "--url"
	case f.Getenv("LOCKCTL_URL") != "":
		return "LOCKCTL_URL"
	case f.Getenv("REDIS_URL") != "":
		return "REDIS_URL"
	case f.Viper.InConfig("url") && f.Viper.ConfigFileUsed() != "":
		return "the config file " + f.Viper.ConfigFileUsed()
	}
	return ""
}
