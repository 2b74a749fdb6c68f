// Package cmd is lockctl's command line: flag parsing, configuration,
// output and exit codes. The work itself is done by pkg/.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/cli/support/child"
	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/lockctl/lockctl/pkg/once"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Main runs lockctl with the process's arguments and returns its exit code;
// when lockctl is to end by a signal instead (dieOf), Main raises it once
// every clean-up has run, and returns only if the signal did not end it.
func Main() int {
	if len(os.Args) == 2 && os.Args[1] == child.GuardArg {
		// lockctl run's guard (internal/cli/support/child/guard.go), not a command.
		return child.RunGuard(os.Stdin)
	}
	// Before anything reads the password: from here on, CMD and every
	// other process of the user cannot read it from /proc.
	hideSecrets()
	code, sig, group := mainArgs(os.Args[1:], ui.System(), rootFor(os.Args[1:]))
	if sig != 0 {
		child.DieOf(sig, group) // returns only if the signal did not end lockctl
	}
	return code
}

// surviveBrokenPipes keeps a write to a stdout or stderr whose reader has
// gone from killing lockctl: Go's runtime ends a program by SIGPIPE on such
// a write to fd 1 or 2 unless SIGPIPE is notified. A run whose stderr went
// away must go on supervising its command, release and write its report;
// the write just fails (EPIPE). Notified, not ignored: an ignored SIGPIPE
// is inherited across exec, and would change how the command lockctl runs
// behaves in its own pipelines (`yes | head -1` would never end by it).
// Nothing needs to read the channel: a signal that finds it full is
// dropped.
//
// Once per process: mainArgs, which calls it, runs many times in tests.
var surviveBrokenPipes = sync.OnceFunc(func() {
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
})

// MainArgs runs lockctl with args on the given streams and returns its exit
// code (without dying of a signal, see dieOf).
func MainArgs(args []string, io *ui.IOStreams) int {
	code, _, _ := mainArgs(args, io, rootFor(args))
	return code
}

// mainArgs is MainArgs with the command tree newRoot builds; sig, when not
// 0, is the signal lockctl should end by instead of exiting with code,
// now that every clean-up has run (dieOf).
func mainArgs(args []string, io *ui.IOStreams, newRoot func(*Factory) *cobra.Command) (code int, sig syscall.Signal, group bool) {
	f := NewFactory(io)
	defer f.Close()
	f.setLogFormat(earlyLogFormat(args, f.Getenv))
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	// Setting the signals up takes about a millisecond (each signal is a
	// round trip to the runtime's signal thread): it overlaps building the
	// command tree, and is complete before anything runs or is written.
	signals := make(chan func(), 1)
	go func() {
		surviveBrokenPipes()
		signals <- f.notifySignals(cancel)
	}()

	root := newRoot(f)
	root.SetArgs(args)
	root.SetIn(io.In)
	root.SetOut(io.Out)
	root.SetErr(io.ErrOut)
	stop := <-signals
	defer stop()
	err := f.executeInterruptible(ctx, root)
	if err != nil && strings.HasPrefix(err.Error(), "unknown command") {
		err = unknownCommand(err)
	}
	if err != nil && errors.Is(err, context.Canceled) {
		if cause := context.Cause(ctx); cause != nil {
			err = cause
		}
	}
	err = stdoutFailure(f.foreignNil(err))
	code, fault := exitClass(err)
	sig, group = dieOf(err, code)
	if fault != faultNone {
		err = explainFault(err, fault, f.target())
	}
	if err != nil {
		// Only a failure is printed: a success need not gather the
		// secrets (a regexp over every URL) to hide them.
		err = redactError(err, f.knownSecrets())
	}
	if bug := (*internalError)(nil); errors.As(err, &bug) && f.G.Verbose {
		io.Logf(ui.LevelDebug, nil, "%s", bug.Stack)
	}
	quiet := f.quietRefusal(err, code)
	if !quiet {
		printError(io, err, code)
	}
	f.annotate(err, code)
	printRefusalJSON(f, err, code)
	if err != nil && envRefusalWanted(root, args, f) {
		// Even when -E 0 makes the code 0: the shell stops either way.
		io.PrintEnvRefusal(code, quiet)
	}
	return code, sig, group
}

// execute runs the command tree, turning a panic in a command into an
// *internalError (exit 70, "this is a bug") rather than a Go stack dump
// and exit 2.
func execute(ctx context.Context, root *cobra.Command) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &internalError{What: fmt.Sprintf("panic: %v", r), Stack: debug.Stack()}
		}
	}()
	return root.ExecuteContext(ctx)
}

// explainFault names the server in err's message and attaches the hints
// for its fault, unless the command attached its own.
func explainFault(err error, f fault, s server) error {
	err = explain(err, f, s)
	if len(hintsOf(err)) == 0 {
		hints := f.hints(s)
		if f == faultNoQuorum {
			hints = quorumHints(err, s)
		}
		err = withHint(err, hints...)
	}
	return err
}

func printError(io *ui.IOStreams, err error, code int) {
	if err == nil {
		return
	}
	var exit *ExitError
	if readerGone(err) {
		return
	}
	if errors.As(err, &exit) && (exit.Silent || exit.Err == nil) {
		if code != ExitOK && io.JSONLog() {
			logSilentEnd(io, err, exit, code)
		}
		return
	}
	hints := hintsOf(err)
	if len(hints) == 0 {
		hints = defaultHints(err, code)
	}
	logError(io, err, code, hints)
}

// defaultHints are for errors that carry no hints of their own; Redis
// faults got theirs from explainFault.
func defaultHints(err error, code int) []string {
	var data *lock.DataError
	switch {
	case errors.As(err, &data) && data.Err != lock.ErrWrongType && data.Err != lock.ErrInvalid:
		// Data someone else wrote beside a lock (not the lock's own key
		// of another type, nor a semaphore's other limit).
		h := "someone else wrote that key: look at it with redis-cli (TYPE, GET) and remove it only if nothing else needs it"
		if kind, _, _ := lockwire.KeyOfAux(data.Key); kind == lockwire.KindFence || kind == lockwire.KindChecked {
			h += "; a fence counter must then be set above every fence already issued, or a stale holder's writes pass the check again"
		}
		return []string{h}
	case errors.Is(err, limit.ErrWrongType), errors.Is(err, once.ErrWrongType):
		return []string{"someone else wrote that key (for limit: or another --algo did): look at it with redis-cli and remove it only if nothing else needs it, or use another KEY"}
	case code == ExitUsage:
		return []string{"see `lockctl --help`"}
	case code == ExitInternal:
		return []string{"this is a bug in lockctl: please report it with the command line and the output of -v"}
	}
	return nil
}

// NewRootCmd builds the whole command tree.
func NewRootCmd(f *Factory) *cobra.Command {
	return newRoot(f, topCommands)
}

// newRoot builds the root command with the given commands below it.
func newRoot(f *Factory, commands []topCommandEntry) *cobra.Command {
	return finishRoot(f, newRootShell(f), commands, true)
}

// finishRoot adds commands below root and completes them: argument errors,
// examples, help defaults and, with completions, the shell completions
// (only cobra's hidden __complete command asks for them, and it gets the
// whole tree).
func finishRoot(f *Factory, root *cobra.Command, commands []topCommandEntry, completions bool) *cobra.Command {
	for _, e := range commands {
		root.AddCommand(e.build(f))
	}
	for _, c := range root.Commands() {
		wrapArgs(c)
	}
	if completions {
		addCompletions(f, root)
	}
	addExamples(root)
	unsetZeroDurations(root)
	boolsByOneRule(root)
	return root
}

// newRootShell is the root command alone, with the global flags.
func newRootShell(f *Factory) *cobra.Command {
	root := &cobra.Command{
		Use:   "lockctl",
		Short: "Safe Redis locks, fencing tokens, rate limits and idempotent runs from the shell",
		Long: `lockctl makes Redis coordination safe from shells, cron and CI.

A Redis lock is a lease: it can expire while its holder is paused. Release and
renew compare the holder's token atomically, and every acquisition gets a
monotonic fencing token that the protected resource can check.`,
		SilenceUsage:      true,
		SilenceErrors:     true,
		DisableAutoGenTag: true,
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			return f.resolve(c)
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.SetFlagErrorFunc(flagError)
	root.SetHelpCommand(newHelpCmd())
	setHelpLayout(root, f.IO)
	addVersionFlag(root, f)
	addGlobalFlags(root.PersistentFlags(), &f.G)
	return root
}

// wrapArgs makes positional-argument errors usage errors, recursively.
func wrapArgs(c *cobra.Command) {
	if v := c.Args; v != nil {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if err := v(cmd, args); err != nil {
				return &UsageError{Err: err, Hints: []string{fmt.Sprintf("usage: %s", cmd.UseLine())}}
			}
			return nil
		}
	}
	for _, sub := range c.Commands() {
		wrapArgs(sub)
	}
}

func addGlobalFlags(fs *pflag.FlagSet, g *Globals) {
	fs.StringVar(&g.URL, "url", "redis://127.0.0.1:6379/0", "Redis URL: redis://, rediss:// (TLS) or unix://; env LOCKCTL_URL, then REDIS_URL")
	fs.StringSliceVar(&g.Cluster, "cluster", nil, "Redis Cluster seed nodes H:P,... (instead of --url)")
	fs.StringSliceVar(&g.Sentinel, "sentinel", nil, "Sentinel addresses H:P,...")
	fs.StringVar(&g.SentinelMaster, "sentinel-master", "", "master name for --sentinel")
	fs.StringSliceVar(&g.Redlock, "redlock", nil, "Redlock: URLs of independent masters")
	fs.Var(&replicasValue{n: &g.WaitReplicas, timeout: &g.WaitTimeout}, "wait-replicas", "after a lock write, WAIT for N replicas (N[:D]) or fail")
	fs.StringVar(&g.PasswordFile, "password-file", "", "read the Redis password from this file (or set LOCKCTL_PASSWORD)")
	fs.StringVar(&g.TLSCA, "tls-ca", "", "CA certificate (PEM) for rediss://")
	fs.StringVar(&g.TLSCert, "tls-cert", "", "client certificate (PEM)")
	fs.StringVar(&g.TLSKey, "tls-key", "", "client key (PEM)")
	fs.BoolVar(&g.TLSInsecure, "tls-insecure", false, "do not verify the server certificate")
	fs.StringVar(&g.Prefix, "prefix", "lock:", "lock key prefix ('' for raw keys)")
	fs.StringVar(&g.Config, "config", "", "YAML config file (default $XDG_CONFIG_HOME/lockctl/config.yaml, then /etc/lockctl/config.yaml)")
	fs.VarP(newEnum(&g.Output, "text", "text", "json", "env", "wide", "table").named("FORMAT"), "output", "o", "output format: text, json, env (lock only); for listings also wide (more columns) and table (the table even in a pipe)")
	fs.Var(newEnum(&g.Color, "auto", "auto", "always", "never"), "color", "colour: auto, always, never")
	fs.Var(newDuration(&g.Timeout, 5*time.Second, false, false), "timeout", "bound on each Redis call")
	fs.BoolVarP(&g.Verbose, "verbose", "v", false, "diagnostics to stderr")
	fs.BoolVar(&g.NoEvents, "no-events", false, "do not record operation events for monitoring (env LOCKCTL_NO_EVENTS; config events: false)")
	addLogFormatFlag(fs, g)
}

// resolve applies flag > LOCKCTL_* env > config file > default to every flag
// of the command being run, through the factory's one viper, and decides
// colour.
func (f *Factory) resolve(c *cobra.Command) error {
	v := f.Viper
	flags := c.Flags()
	cfg, explicit, err := f.configPath(flags)
	if err != nil {
		return err
	}
	var fileKeys []string
	if cfg != "" {
		if err := f.readConfigFile(cfg); err != nil {
			if explicit || !errors.Is(err, os.ErrNotExist) {
				return configError(cfg, err)
			}
		} else {
			// The file alone, before flags and variables are bound.
			fileKeys = v.AllKeys()
			f.checkConfigFile(cfg)
		}
	}
	if err := v.BindPFlags(flags); err != nil {
		return err
	}
	if err := f.bindEnv(); err != nil {
		return err
	}
	f.setLogFormat(v.GetString("log-format"))
	f.logSubject(c)
	if f.configFile != "" {
		f.warnUnknownConfigKeys(wholeTree(f, c.Root()), cfg, fileKeys)
	}
	if err := f.applySettings(c, flags); err != nil {
		return err
	}
	if f.G.Verbose { // set by a flag or a setting
		if cfg == "" {
			f.Verbosef("config file: none")
		} else {
			f.Verbosef("config file: %s", cfg)
		}
	}
	if err := f.resolveEvents(flags); err != nil {
		return err
	}
	if err := f.checkEventsKey(); err != nil {
		return err
	}
	f.G.urlOnArgv = flags.Changed("url")
	f.G.redlockOnArgv = flags.Changed("redlock")
	f.G.command = topCommand(c).Name()
	f.IO.DecideColor(f.G.Color, f.Getenv)
	headers, err := headersWanted(flags)
	if err != nil {
		return err
	}
	f.IO.SetTableOutput(f.G.Output == "table", headers)
	return nil
}

// applySettings sets every flag of the command that the command line left
// alone from its setting in viper. A section named after the command
// (`run:`, `lock:`, `inspect:`) overrides top-level keys, so flags that
// share a name across commands can differ.
func (f *Factory) applySettings(c *cobra.Command, flags *pflag.FlagSet) error {
	v := f.Viper
	section := topCommand(c).Name()
	var setErr error
	flags.VisitAll(func(fl *pflag.Flag) {
		if setErr != nil || fl.Changed {
			return
		}
		key := fl.Name
		if !envBound(fl.Name) && section != "" && v.IsSet(section+"."+fl.Name) {
			key = section + "." + fl.Name
		} else if !v.IsSet(fl.Name) {
			return
		}
		s := configString(v.Get(key))
		if fl.Value.Type() == "bool" {
			b, err := parseBool(s)
			if err != nil {
				origin := f.settingOrigin(key)
				if key == fl.Name && origin == "config file "+f.configFile && f.otherFlagTakes(c.Root(), fl.Name) {
					// A top-level key of another command's
					// non-boolean flag of the same name (lock's
					// --wait D, limit's --wait).
					return
				}
				setErr = &UsageError{Err: fmt.Errorf("%s (from %s): %v", key, origin, err)}
				return
			}
			s = strconv.FormatBool(b)
		}
		if s == fl.DefValue {
			return
		}
		if sv, ok := fl.Value.(pflag.SliceValue); ok {
			if err := sv.Replace(strings.Split(s, ",")); err != nil {
				setErr = &UsageError{Err: fmt.Errorf("%s=%q (from %s): %v", key, s, f.settingOrigin(key), err)}
			}
			return
		}
		if err := fl.Value.Set(s); err != nil {
			setErr = &UsageError{Err: fmt.Errorf("%s=%q (from %s): %v", key, s, f.settingOrigin(key), err)}
		}
	})
	return setErr
}

// otherFlagTakes reports whether some command has a flag called name that
// is not a boolean.
func (f *Factory) otherFlagTakes(root *cobra.Command, name string) bool {
	found := false
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if fl := c.LocalFlags().Lookup(name); fl != nil && fl.Value.Type() != "bool" {
			found = true
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(wholeTree(f, root))
	return found
}

// addHeaderFlags adds --headers and --no-headers to a listing command.
func addHeaderFlags(fs *pflag.FlagSet, g *Globals) {
	fs.BoolVar(&g.Headers, "headers", false, "print the header row in tab-separated output too")
	fs.BoolVar(&g.NoHeaders, "no-headers", false, "print no header row, in the table too")
}

// headersWanted is --headers / --no-headers: nil when neither is set.
func headersWanted(flags *pflag.FlagSet) (*bool, error) {
	on, _ := flags.GetBool("headers")
	off, _ := flags.GetBool("no-headers")
	switch {
	case on && off:
		return nil, usageErrorf("--headers and --no-headers exclude each other")
	case on:
		return &on, nil
	case off:
		no := false
		return &no, nil
	}
	return nil, nil
}

// topCommand is c's ancestor just below the root (c itself for top-level commands).
func topCommand(c *cobra.Command) *cobra.Command {
	for c.HasParent() && c.Parent().HasParent() {
		c = c.Parent()
	}
	return c
}
