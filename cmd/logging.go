package cmd

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/cli/support/errtext"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// --log-format decides how every diagnostic lockctl writes on stderr looks:
// text ("lockctl: ..." and "lockctl: hint: ..." lines, the default) or json
// (one object per line with time, level and msg, for log collectors). The
// lines themselves are written by ui.IOStreams.Log, one place for both.

func addLogFormatFlag(fs *pflag.FlagSet, g *Globals) {
	fs.Var(newEnum(&g.LogFormat, "text", "text", "json"), "log-format", "diagnostics on stderr: text, or json (one object per line; env LOCKCTL_LOG_FORMAT)")
}

// earlyLogFormat is the log format args or the environment ask for, read
// before the command line is parsed, so that an error parsing it (a
// usage error) is already written in that format. The config file's
// log-format applies once it has been read (resolve).
func earlyLogFormat(args []string, getenv func(string) string) string {
	format := getenv("LOCKCTL_LOG_FORMAT")
	for i, a := range args {
		if a == "--" {
			break
		}
		if v, ok := strings.CutPrefix(a, "--log-format="); ok {
			format = v
		} else if a == "--log-format" && i+1 < len(args) {
			format = args[i+1]
		}
	}
	return format
}

// setLogFormat applies format when it is valid; an invalid one is refused
// as a usage error by the flag itself, written in the format so far.
func (f *Factory) setLogFormat(format string) {
	if ui.ValidLogFormat(format) {
		f.IO.SetLogFormat(format)
	}
}

// logSubjects names, per command, the JSON key of its first argument, so
// every line of that command carries the lock's name (or the KEY).
var logSubjects = map[string]string{
	"lockctl run": "name", "lockctl lock": "name", "lockctl renew": "name", "lockctl release": "name",
	"lockctl fence next": "name", "lockctl fence peek": "name", "lockctl fence check": "resource",
	"lockctl inspect lock": "name", "lockctl inspect force-release": "name",
	"lockctl once": "key", "lockctl inspect once": "key", "lockctl limit": "key",
}

// logSubject adds c's NAME (or KEY) to every JSON diagnostic from now on.
func (f *Factory) logSubject(c *cobra.Command) {
	key := logSubjects[c.CommandPath()]
	if args := c.Flags().Args(); key != "" && len(args) > 0 && args[0] != "" {
		f.IO.SetLogField(key, args[0])
	}
}

// holderFields are a holder's data for a JSON diagnostic.
func holderFields(h lock.Holder) []ui.Field {
	fs := []ui.Field{}
	if h.Owner != "" {
		fs = append(fs, ui.Field{Key: "holder", Value: h.Owner})
	}
	if h.Holders > 0 {
		fs = append(fs, ui.Field{Key: "holders", Value: h.Holders})
	}
	ttl := h.TTL.Milliseconds()
	if h.TTL < 0 {
		ttl = -1
	}
	fs = append(fs, ui.Field{Key: "ttl_ms", Value: ttl})
	if h.Queue > 0 {
		fs = append(fs, ui.Field{Key: "queue", Value: h.Queue})
	}
	if !h.AcquiredAt.IsZero() {
		fs = append(fs, ui.Field{Key: "acquired_at", Value: h.AcquiredAt})
	}
	if h.JobURL != "" {
		fs = append(fs, ui.Field{Key: "ci", Value: h.JobURL})
	}
	if h.Reason != "" {
		fs = append(fs, ui.Field{Key: "reason", Value: string(h.Reason)})
	}
	return fs
}

// logError writes the error a command ended with, with its hints: in json,
// one line with the exit code, the holder of a lock that was not acquired
// and how long the wait was. A refusal (held elsewhere, rate limited) is a
// warning, anything else an error.
func logError(io *ui.IOStreams, err error, code int, hints []string) {
	level := ui.LevelError
	if isRefusal(err) {
		level = ui.LevelWarn
	}
	fields := []ui.Field{{Key: "exit", Value: code}}
	var held *lock.HeldError
	if errors.As(err, &held) {
		fields = append(fields, holderFields(held.Holder)...)
	}
	var timeout *waitTimeoutError
	if errors.As(err, &timeout) && timeout.waited > 0 {
		fields = append(fields, ui.Field{Key: "waited_ms", Value: timeout.waited})
	}
	io.Log(ui.Entry{Level: level, Text: errtext.Of(err), Hints: hints, Fields: fields})
}

// logSilentEnd is the last line of a command that ends non-zero without
// an error of its own to print (the command's exit status passed
// through, a lease lost under it, --max-runtime, -E, lock --test): text
// mode stays silent, since the command and lockctl's warnings spoke
// already, but a log collector reads the outcome from the last JSON line,
// which carries exit.
func logSilentEnd(io *ui.IOStreams, err error, exit *ExitError, code int) {
	text := exit.Summary
	switch {
	case text != "":
	case exit.Err != nil:
		text = errtext.Of(exit.Err)
	default:
		text = fmt.Sprintf("exit status %d", code)
	}
	level := ui.LevelError
	switch {
	case isRefusal(err):
		level = ui.LevelWarn
	case code == ExitFound:
		// lock --test's answer (held), not a failure.
		level = ui.LevelInfo
	}
	io.Log(ui.Entry{Level: level, Text: text, Fields: []ui.Field{{Key: "exit", Value: code}}})
}

// logAcquired says under -v that lock or run got the lease and how long it
// waited (flock --verbose: "getting lock took N seconds").
func logAcquired(f *Factory, lease *lock.Lease) {
	if f.G.Verbose {
		f.IO.Logf(ui.LevelDebug, ui.Fields("key", lease.Key(), "fence", lease.Fence(), "waited_ms", lease.Waited()),
			"acquired %s (fence %d) after %v", lease.Key(), lease.Fence(), lease.Waited().Round(time.Millisecond))
	}
}

// warnf is a warning line at level warn whatever its words (the runner's
// decisions: a loss, a max runtime, a signal).
func (f *Factory) warnf(format string, args ...any) {
	f.IO.Logf(ui.LevelWarn, nil, format, args...)
}
