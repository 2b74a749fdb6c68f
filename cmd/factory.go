package cmd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/signal"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
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
	NoEvents       bool // --no-events: see events.go
	Headers        bool // --headers (listings)
	NoHeaders      bool // --no-headers (listings)
	Quiet          bool // -q (run, lock, once, limit): see quiet.go
	NoCIOutput     bool // --no-ci-output (run, lock, once, limit): see quiet.go

	urlOnArgv     bool   // the URL came from the command line (a password there leaks to ps)
	redlockOnArgv bool   // likewise for --redlock
	command       string // the command being run, below the root (for messages)
}

// Factory hands commands what they need, lazily: nothing dials Redis until a
// command asks for a client, so --help, version and completion never do.
type Factory struct {
	IO     *ui.IOStreams
	Getenv func(string) string
	Viper  *viper.Viper
	G      Globals

	clientOnce sync.Once
	client     redis.UniversalClient
	clientErr  error

	redlockOnce    sync.Once
	redlockClients []redis.UniversalClient
	redlockErr     error

	eventsOnce sync.Once
	events     *events.Recorder

	sigMu      sync.Mutex
	sigHandler func(os.Signal)

	warnMu sync.Mutex
	warned map[string]bool // warnOnce's

	filePassword string // the password read from --password-file, to keep out of messages
}

// NewFactory builds a factory over the given streams.
func NewFactory(io *ui.IOStreams) *Factory {
	return &Factory{IO: io, Getenv: os.Getenv, Viper: viper.New()}
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

func (f *Factory) locker(sink lock.EventSink) (*lock.Locker, error) {
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

// newRedlockClients makes one client per --redlock URL, each set up as the
// --url client is (timeouts, no retries, password, TLS). --timeout bounds
// each node's call; pkg/lock bounds it further by a per-node timeout
// derived from the lease (a tenth of the ttl, within 50ms and 1s), so that
// a dead node costs little of it.
func (f *Factory) newRedlockClients() ([]redis.UniversalClient, error) {
	redis.SetLogger(redisLogger{f})
	password, err := f.password()
	if err != nil {
		return nil, err
	}
	var clients []redis.UniversalClient
	for _, raw := range f.G.Redlock {
		raw = strings.TrimSpace(raw)
		if !strings.Contains(raw, "://") {
			// host:port, as --cluster and --sentinel take them.
			raw = "redis://" + raw
		}
		opt, err := f.optionsFor(raw, "--redlock", f.G.redlockOnArgv, password)
		if err != nil {
			for _, c := range clients {
				c.Close()
			}
			return nil, err
		}
		clients = append(clients, redis.NewClient(opt))
	}
	return clients, nil
}

// Close releases the clients' connections.
func (f *Factory) Close() {
	f.closeEvents()
	if f.client != nil {
		f.client.Close()
	}
	for _, c := range f.redlockClients {
		c.Close()
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
		f.IO.Errorf(format, args...)
	}
}

// hook adds -v's diagnostics to c (node names a Redlock master).
func (f *Factory) hook(c redis.UniversalClient, node string) {
	if f.G.Verbose {
		c.AddHook(verboseHook{f: f, node: node})
	}
}

// redisLogger routes go-redis's own log lines to -v diagnostics.
type redisLogger struct{ f *Factory }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.f.Verbosef("redis: "+format, v...)
}

func (f *Factory) newClient() (redis.UniversalClient, error) {
	g := &f.G
	redis.SetLogger(redisLogger{f})
	password, err := f.password()
	if err != nil {
		return nil, err
	}
	// One attempt per call (MaxRetries -1): a lock command retried blindly
	// can report "not held" for a release that did happen; callers that
	// loop (waiting, renewal) retry on their own schedule.
	common := func(o *redis.UniversalOptions) {
		o.DialTimeout, o.ReadTimeout, o.WriteTimeout = g.Timeout, g.Timeout, g.Timeout
		o.ContextTimeoutEnabled = true
		o.MaxRetries = -1
		o.PoolSize = 16
		o.DisableIdentity = true
		o.Protocol = 2
		o.DialerRetries, o.DialerRetryTimeout = 1, 50*time.Millisecond
	}
	if err := checkAddrs("--cluster", g.Cluster); err != nil {
		return nil, err
	}
	if err := checkAddrs("--sentinel", g.Sentinel); err != nil {
		return nil, err
	}
	switch {
	case len(g.Cluster) > 0:
		o := &redis.UniversalOptions{Addrs: g.Cluster, IsClusterMode: true, Password: password}
		common(o)
		if o.TLSConfig, err = f.tlsConfig(false, ""); err != nil {
			return nil, err
		}
		return redis.NewUniversalClient(o), nil
	case len(g.Sentinel) > 0:
		if g.SentinelMaster == "" {
			return nil, usageErrorf("--sentinel needs --sentinel-master NAME")
		}
		o := &redis.UniversalOptions{Addrs: g.Sentinel, MasterName: g.SentinelMaster, Password: password}
		common(o)
		if o.TLSConfig, err = f.tlsConfig(false, ""); err != nil {
			return nil, err
		}
		return redis.NewUniversalClient(o), nil
	}
	opt, err := f.nodeOptions(password)
	if err != nil {
		return nil, err
	}
	return redis.NewClient(opt), nil
}

// NodeOptions returns the client options for the one server --url names,
// with the password and TLS settings applied: for commands that make their
// own clients (simulate opens one per simulated actor).
func (f *Factory) NodeOptions() (*redis.Options, error) {
	redis.SetLogger(redisLogger{f})
	password, err := f.password()
	if err != nil {
		return nil, err
	}
	return f.nodeOptions(password)
}

func (f *Factory) nodeOptions(password string) (*redis.Options, error) {
	return f.optionsFor(f.G.URL, "--url", f.G.urlOnArgv, password)
}

// optionsFor returns the client options for the server at raw, given by
// flag (onArgv: on the command line).
func (f *Factory) optionsFor(raw, flag string, onArgv bool, password string) (*redis.Options, error) {
	g := &f.G
	// Every message about raw hides its passwords, also those the parsers
	// quote back in pieces (redis:/:pw@h reads as the database ":pw@h").
	secrets := urlSecrets(raw)
	bad := func(hint, format string, args ...any) error {
		msg := fmt.Sprintf("bad %s %q", flag, redactRefusedURL(raw))
		if format != "" {
			msg += ": " + fmt.Sprintf(format, args...)
		}
		return &UsageError{Err: errors.New(redactSecrets(msg, secrets)), Hints: []string{hint}}
	}
	const forms = "use redis://[user:password@]host:port/db, rediss://... for TLS, or unix:///path/to/redis.sock?db=N"
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss" && u.Scheme != "unix") {
		return nil, bad(forms, "")
	}
	if u.Scheme != "unix" {
		if u.Hostname() == "" {
			// go-redis would dial localhost:6379 and send it the
			// password: whoever listens there gets it.
			return nil, bad("give the host after two slashes: "+u.Scheme+"://host:6379/0 (the password in LOCKCTL_PASSWORD or --password-file)", "no host")
		}
		if err := checkPort(u.Port()); err != nil {
			return nil, bad("the port is a number from 1 to 65535 (redis-server's default is 6379): redis://host:6379/0", "%v", err)
		}
	}
	if _, has := u.User.Password(); has && onArgv {
		f.IO.Errorf("warning: a password on the command line is visible to other users in ps; use LOCKCTL_PASSWORD or --password-file")
	}
	if err := f.checkTLSScheme(u.Scheme, flag); err != nil {
		return nil, err
	}
	opt, err := redis.ParseURL(raw)
	if err != nil {
		// go-redis may quote the URL, or a part of it, in its message.
		return nil, bad(forms, "%s", strings.ReplaceAll(err.Error(), raw, redactRefusedURL(raw)))
	}
	// go-redis takes any database number; a negative one would fail only
	// at SELECT, as if Redis were unavailable.
	if opt.DB < 0 {
		return nil, bad("the database is a number from 0 (redis-server has 16 by default, 0-15): redis://host:6379/0", "database %d is negative", opt.DB)
	}
	if password != "" {
		opt.Password = password
	}
	opt.DialTimeout, opt.ReadTimeout, opt.WriteTimeout = g.Timeout, g.Timeout, g.Timeout
	opt.ContextTimeoutEnabled = true
	opt.MaxRetries = -1
	opt.PoolSize = 16
	opt.DisableIdentity = true
	opt.Protocol = 2
	// A refused connection must fail fast (exit 69), not back off for seconds.
	opt.DialerRetries, opt.DialerRetryTimeout = 1, 50*time.Millisecond
	if u.Scheme == "rediss" {
		if opt.TLSConfig, err = f.tlsConfig(true, u.Hostname()); err != nil {
			return nil, err
		}
		opt.Dialer = tlsDialer(opt.TLSConfig, g.Timeout)
	}
	return opt, nil
}

// password: LOCKCTL_PASSWORD, else --password-file, else the URL's.
func (f *Factory) password() (string, error) {
	if p := f.Getenv("LOCKCTL_PASSWORD"); p != "" {
		return p, nil
	}
	if f.G.PasswordFile == "" {
		return "", nil
	}
	f.checkSecretFile("--password-file", f.G.PasswordFile, true)
	b, err := os.ReadFile(f.G.PasswordFile)
	if err != nil {
		return "", &UsageError{Err: fmt.Errorf("--password-file: %v", err)}
	}
	f.filePassword = strings.TrimRight(string(b), "\r\n")
	return f.filePassword, nil
}

func (f *Factory) tlsConfig(force bool, serverName string) (*tls.Config, error) {
	g := &f.G
	if !force && g.TLSCA == "" && g.TLSCert == "" && !g.TLSInsecure {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, ServerName: serverName, InsecureSkipVerify: g.TLSInsecure}
	if g.TLSInsecure {
		f.warnOnce("tls-insecure", "warning: --tls-insecure: the server's certificate is not verified; anyone on the way can pose as the server and read the password")
	}
	if g.TLSCA != "" {
		pem, err := os.ReadFile(g.TLSCA)
		if err != nil {
			return nil, &UsageError{Err: fmt.Errorf("--tls-ca: %v", err)}
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, usageErrorf("--tls-ca %s: no PEM certificate found", g.TLSCA)
		}
		cfg.RootCAs = pool
	}
	if g.TLSCert != "" || g.TLSKey != "" {
		if g.TLSKey != "" {
			f.checkSecretFile("--tls-key", g.TLSKey, true)
		}
		cert, err := tls.LoadX509KeyPair(g.TLSCert, g.TLSKey)
		if err != nil {
			return nil, &UsageError{Err: fmt.Errorf("--tls-cert/--tls-key: %v", err)}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// checkPort accepts an empty port (the default) or 1..65535.
func checkPort(port string) error {
	if port == "" {
		return nil
	}
	n, err := strconv.Atoi(port)
	if err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("port %q is not in 1-65535", port)
	}
	return nil
}

// checkAddrs requires host:port with a valid port for --cluster and --sentinel.
func checkAddrs(flag string, addrs []string) error {
	for _, a := range addrs {
		_, port, err := net.SplitHostPort(strings.TrimSpace(a))
		if err == nil {
			err = checkPort(port)
		}
		if err == nil && port == "" {
			err = errors.New("missing port")
		}
		if err != nil {
			return &UsageError{Err: fmt.Errorf("bad %s address %q: %v", flag, a, err),
				Hints: []string{fmt.Sprintf("%s takes host:port,... (ports 1-65535)", flag)}}
		}
	}
	return nil
}

// userInfo is the user:password part of a URL, whether or not the rest parses.
var userInfo = regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^:@/]*):[^@]*@`)

// redactURL hides a password for messages (redis://user:***@host), also in
// a URL that does not parse.
func redactURL(raw string) string {
	return redactSecrets(redactUserInfo(raw), urlSecrets(raw))
}

func redactUserInfo(raw string) string {
	u, err := url.Parse(raw)
	if err == nil && u.User != nil {
		if _, has := u.User.Password(); has {
			name := u.User.Username()
			u.User = nil
			rest := strings.TrimPrefix(u.String(), u.Scheme+"://")
			return u.Scheme + "://" + url.User(name).String() + ":***@" + rest
		}
		return u.String()
	}
	if err == nil && !strings.Contains(raw, "@") {
		return raw
	}
	if r := userInfo.ReplaceAllString(raw, "$1:***@"); r != raw {
		return r
	}
	// Unparsable, or an '@' net/url did not read as user info (a typo in
	// the scheme, say): a password may still be in it, so hide everything
	// between the scheme and the last '@'.
	start := 0
	if i := strings.Index(raw, "://"); i >= 0 {
		start = i + 3
	}
	if at := strings.LastIndexByte(raw, '@'); at >= start {
		return raw[:start] + "***" + raw[at:]
	}
	return raw
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
					cancel(&SignalError{Signal: toSyscall(s)})
				}
			case <-done:
				return
			}
		}
	}()
	return func() { signal.Stop(ch); close(done) }
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

// OnMasterSwitch calls fn each time a --sentinel announces a new master for
// --sentinel-master (lock.WatchMasterSwitch), until the returned stop is
// called. Without --sentinel it does nothing.
func (f *Factory) OnMasterSwitch(fn func()) (stop func()) {
	g := &f.G
	if len(g.Sentinel) == 0 || g.SentinelMaster == "" {
		return func() {}
	}
	tlsCfg, err := f.tlsConfig(false, "")
	if err != nil {
		return func() {}
	}
	return lock.WatchMasterSwitch(g.Sentinel, g.SentinelMaster, tlsCfg, g.Timeout, fn)
}
