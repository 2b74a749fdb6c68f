package cmd

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/cli/support/errtext"
)

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
	msg := errtext.Of(err)
	var exit *ExitError
	if errors.As(err, &exit) && exit.Err == nil {
		msg = fmt.Sprintf("exit status %d", code)
		if exit.Summary != "" {
			// Names the lock (or the once claim) that was lost.
			msg = fmt.Sprintf("%s; exit %d", exit.Summary, code)
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
