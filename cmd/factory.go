package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"
)

// Globals are the resolved global flags (flag > LOCKCTL_* env > config file > default).
type Globals struct {
	URL            string
	Cluster        []string
	Sentinel       []string
	SentinelMaster string
	Redlock        []string
	WaitReplicas   int
	WaitTimeout    time.Duration
	PasswordFile   string
	TLSCA          string
	TLSCert        string
	TLSKey         string
	TLSInsecure    bool
	Prefix         string
	Config         string
	Output         string
	Color          string
	Timeout        time.Duration
	Verbose        bool
	NoEvents       bool   // --no-events: see events.go
	LogFormat      string // --log-format: see logging.go
	Headers        bool   // --headers (listings)
	NoHeaders      bool   // --no-headers (listings)
	Quiet          bool   // -q (run, lock, once, limit): see quiet.go
	NoCIOutput     bool   // --no-ci-output (run, lock, once, limit): see github_actions.go

	urlOnArgv     bool   // the URL came from the command line (a password there leaks to ps)
	redlockOnArgv bool   // likewise for --redlock
	command       string // the command being run, below the root (for messages)
}

// Factory hands commands what they need, lazily: nothing dials Redis until a
// command asks for a client, so --help, version and completion never do.
type Factory struct {
	IO     *ui.IOStreams
	Getenv func(string) string
	G      Globals

	// Viper holds the settings: the command's flags, the LOCKCTL_*
	// variables and the config file (resolve binds and reads them).
	Viper      *viper.Viper
	configFile string // the config file read, "" when none was

	clientOnce sync.Once
	client     redis.UniversalClient
	clientErr  error

	redlockOnce    sync.Once
	redlockClients []redis.UniversalClient
	redlockErr     error

	eventsOnce sync.Once
	events     *events.Recorder
	// eventsDelay, when set before the recorder is made, is how long an
	// event waits for a later write to carry it (events.Options.Delay);
	// 0 is the recorder's default.
	eventsDelay time.Duration

	sigMu      sync.Mutex
	sigHandler func(os.Signal)
	interrupts chan struct{} // a signal that cancelled the command (notifySignals)

	warnMu sync.Mutex
	warned map[string]bool // warnOnce's

	filePassword string // the password read from --password-file, to keep out of messages

	partialTree bool // the root has only the invoked command below it (rootFor)
}

// NewFactory builds a factory over the given streams.
func NewFactory(io *ui.IOStreams) *Factory {
	return &Factory{IO: io, Getenv: os.Getenv, Viper: viper.New(), interrupts: make(chan struct{}, 1)}
}

// Client returns the Redis client, creating it on first use. Commands
// that work on one server (inspect, doctor, limit, once) use it; under
// --redlock it is a usage error, since no one server has the whole picture.
func (f *Factory) Client() (redis.UniversalClient, error) {
	redlock, err := f.redlock()
	if err != nil {
		return nil, err
	}
	if redlock {
		what := f.G.command
		if what == "" {
			what = "this command"
		}
		return nil, &UsageError{Err: fmt.Errorf("%s works on one server: pass --url", what),
			Hints: []string{"--redlock applies to lock, renew, release, run and fence; give one of the Redlock masters with --url to look at it alone"}}
	}
	f.clientOnce.Do(func() {
		f.client, f.clientErr = f.newClient()
		if f.clientErr == nil {
			f.announce()
			f.hook(f.client, "")
		}
	})
	return f.client, f.clientErr
}

// redlock reports whether locks go to the --redlock masters: --redlock is
// set, unless only LOCKCTL_REDLOCK (or the config file) set it and --url
// on the command line asks for one server.
func (f *Factory) redlock() (bool, error) {
	g := &f.G
	if len(g.Redlock) == 0 {
		return false, nil
	}
	if g.urlOnArgv && g.redlockOnArgv {
		return false, usageErrorf("--url and --redlock cannot be combined")
	}
	return !g.urlOnArgv, nil
}

// Locker returns a lock.Locker on the configured client and prefix: on one
// logical Redis, or on the --redlock masters. It records its operations'
// events unless they are off.
func (f *Factory) Locker() (*lock.Locker, error) {
	return f.locker(f.eventSink())
}

func (f *Factory) locker(sink events.Sink) (*lock.Locker, error) {
	opts := &lock.Options{
		Prefix:              f.G.Prefix,
		RawKeys:             f.G.Prefix == "",
		WaitReplicas:        f.G.WaitReplicas,
		WaitReplicasTimeout: f.G.WaitTimeout,
		Events:              sink,
	}
	redlock, err := f.redlock()
	if err != nil {
		return nil, err
	}
	if redlock {
		if f.G.WaitReplicas > 0 {
			return nil, &UsageError{Err: errors.New("--wait-replicas does not apply to --redlock"),
				Hints: []string{"Redlock's masters are independent servers without replicas; drop --wait-replicas"}}
		}
		f.redlockOnce.Do(func() {
			f.redlockClients, f.redlockErr = f.newRedlockClients()
			if f.redlockErr == nil {
				f.announce()
				for i, c := range f.redlockClients {
					f.hook(c, fmt.Sprintf("node %d", i+1))
				}
			}
		})
		if f.redlockErr != nil {
			return nil, f.redlockErr
		}
		l, err := lock.NewRedlock(f.redlockClients, opts)
		if err != nil {
			return nil, &UsageError{Err: fmt.Errorf("--redlock: %w", err),
				Hints: []string{"give the URLs of 3 (or 5) independent masters: --redlock redis://a:6379,redis://b:6379,redis://c:6379"}}
		}
		return l, nil
	}
	c, err := f.Client()
	if err != nil {
		return nil, err
	}
	return lock.New(c, opts), nil
}

// RefuseRedlock is a usage error when --redlock is in use: for options the
// Redlock backend does not support (flag names the option).
func (f *Factory) RefuseRedlock(flag string) error {
	redlock, err := f.redlock()
	if err != nil || !redlock {
		return err
	}
	return usageErrorf("%s is not supported with --redlock", flag)
}

// Close releases the clients' connections.
func (f *Factory) Close() {
	f.closeEvents()
	// Done with the connections: an error closing one has nothing left to
	// affect and nowhere better to go than the command's own result.
	if f.client != nil {
		_ = f.client.Close()
	}
	for _, c := range f.redlockClients {
		_ = c.Close()
	}
}

// OnSignal routes SIGINT, SIGTERM and SIGHUP to h instead of cancelling the
// command's context (run forwards them to its child). It returns a function
// restoring the default.
func (f *Factory) OnSignal(h func(os.Signal)) (restore func()) {
	f.sigMu.Lock()
	prev := f.sigHandler
	f.sigHandler = h
	f.sigMu.Unlock()
	return func() {
		f.sigMu.Lock()
		f.sigHandler = prev
		f.sigMu.Unlock()
	}
}

func (f *Factory) signalHandler() func(os.Signal) {
	f.sigMu.Lock()
	defer f.sigMu.Unlock()
	return f.sigHandler
}

// Verbosef writes a diagnostic line when -v is on.
func (f *Factory) Verbosef(format string, args ...any) {
	if f.G.Verbose {
		f.IO.Logf(ui.LevelDebug, nil, format, args...)
	}
}

// hook adds -v's diagnostics to c (node names a Redlock master).
func (f *Factory) hook(c redis.UniversalClient, node string) {
	if f.G.Verbose {
		c.AddHook(verboseHook{f: f, node: node})
	}
}

// notifySignals delivers SIGINT, SIGTERM and SIGHUP to the current handler,
// or cancels the command through cancel when there is none.
func (f *Factory) notifySignals(cancel func(error)) (stop func()) {
	ch := make(chan os.Signal, 4)
	signal.Notify(ch, sigInterrupts...)
	done := make(chan struct{})
	go func() {
		for {
			select {
			case s := <-ch:
				if h := f.signalHandler(); h != nil {
					h(s)
				} else {
					// Counted before the cancel: executeInterruptible
					// takes the first when it sees the context done.
					select {
					case f.interrupts <- struct{}{}:
					default:
					}
					cancel(&SignalError{Signal: toSyscall(s)})
				}
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
}

// interruptGrace is how long a command cancelled by a signal has to return
// by itself (releasing what it took on a fresh context, writing its
// report) before lockctl ends without it.
const interruptGrace = 2 * time.Second

// executeInterruptible runs the command tree, and gives up on it once a
// signal has cancelled ctx and the command has not returned within
// interruptGrace, or at a second signal: the command's error is then the
// signal (128+N). A Redis call does not watch its context while it waits
// for a reply (go-redis bounds the wait by --timeout alone), so a server
// that accepted the connection and never answers would otherwise hold ^C
// off until --timeout; so would a read of anything else that never ends.
func (f *Factory) executeInterruptible(ctx context.Context, root *cobra.Command) error {
	done := make(chan error, 1)
	go func() { done <- execute(ctx, root) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	if f.interrupts == nil {
		return <-done
	}
	<-f.interrupts // the signal that cancelled ctx
	grace := time.NewTimer(interruptGrace)
	defer grace.Stop()
	select {
	case err := <-done:
		return err
	case <-grace.C:
	case <-f.interrupts:
	}
	return context.Cause(ctx)
}

// target names the server(s) this invocation talks to, for messages.
func (f *Factory) target() server {
	g := &f.G
	if redlock, _ := f.redlock(); redlock {
		return server{Mode: "redlock"}
	}
	switch {
	case len(g.Cluster) > 0:
		return server{Mode: "cluster", Addr: strings.Join(g.Cluster, ",")}
	case len(g.Sentinel) > 0:
		return server{Mode: "sentinel", Addr: strings.Join(g.Sentinel, ",")}
	}
	s := server{Mode: "url", TLS: strings.HasPrefix(g.URL, "rediss://"), Origin: f.urlOrigin()}
	if opt, err := redis.ParseURL(g.URL); err == nil {
		s.Addr, s.DB = opt.Addr, opt.DB
	}
	return s
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
	case f.configFile != "" && f.Viper.InConfig("url"):
		return "the config file " + f.configFile
	}
	return ""
}

var sigInterrupts = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

func toSyscall(s os.Signal) syscall.Signal {
	if ss, ok := s.(syscall.Signal); ok {
		return ss
	}
	return syscall.SIGTERM
}
