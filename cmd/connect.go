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
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/cli/support/helloconn"
	"github.com/redis/go-redis/v9"
)

// clientOptions gives o, the options of a client lockctl makes, the
// settings every one of them shares, whatever it talks to: *redis.Options
// for one server (the --url server, a Redlock master, a simulated actor),
// *redis.UniversalOptions for a Cluster or a Sentinel. go-redis has two
// types for the same settings; they are decided here once.
//
//   - One attempt per call (MaxRetries -1): a lock command retried blindly
//     can report "not held" for a release that did happen; callers that
//     loop (waiting, renewal) retry on their own schedule.
//   - --timeout bounds every dial, read and write, and the call's context
//     bounds them too.
//   - A refused connection fails fast (exit 69) rather than back off for
//     seconds: one dial retry, 50ms later.
//   - Pipelines (the event writer's) share the pool of the command's own
//     calls (PipelinePoolSize -1), rather than dial a connection of their
//     own on every invocation.
func clientOptions[O *redis.Options | *redis.UniversalOptions](g *Globals, o O) {
	fields := reflect.ValueOf(o).Elem()
	for _, s := range clientSettings(g.Timeout) {
		fields.FieldByName(s.field).Set(reflect.ValueOf(s.value))
	}
}

// clientSetting is one field of go-redis's client options, by the name
// both *redis.Options and *redis.UniversalOptions give it, and its value.
type clientSetting struct {
	field string
	value any
}

// clientSettings lists, once for both option types, what clientOptions
// sets; a value's type is its field's (TestClientOptionsBothTypes).
func clientSettings(timeout time.Duration) []clientSetting {
	return []clientSetting{
		{"DialTimeout", timeout}, {"ReadTimeout", timeout}, {"WriteTimeout", timeout},
		{"ContextTimeoutEnabled", true},
		{"MaxRetries", -1},
		{"PoolSize", 16}, {"PipelinePoolSize", -1},
		{"DisableIdentity", true},
		{"Protocol", 2},
		{"DialerRetries", 1}, {"DialerRetryTimeout", 50 * time.Millisecond},
	}
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
				_ = c.Close() // unused yet; the options error is the one to report
			}
			return nil, err
		}
		clients = append(clients, redis.NewClient(opt))
	}
	return clients, nil
}

// redisLogger routes go-redis's own log lines to -v diagnostics.
type redisLogger struct{ f *Factory }

func (l redisLogger) Printf(_ context.Context, format string, v ...any) {
	l.f.Verbosef("redis: "+format, v...)
}

// newClient makes the client of --cluster, --sentinel or --url (in that
// order of precedence), with clientOptions' settings.
func (f *Factory) newClient() (redis.UniversalClient, error) {
	g := &f.G
	redis.SetLogger(redisLogger{f})
	password, err := f.password()
	if err != nil {
		return nil, err
	}
	if err := checkAddrs("--cluster", g.Cluster); err != nil {
		return nil, err
	}
	if err := checkAddrs("--sentinel", g.Sentinel); err != nil {
		return nil, err
	}
	var o *redis.UniversalOptions
	switch {
	case len(g.Cluster) > 0:
		o = &redis.UniversalOptions{Addrs: g.Cluster, IsClusterMode: true}
	case len(g.Sentinel) > 0:
		if g.SentinelMaster == "" {
			return nil, usageErrorf("--sentinel needs --sentinel-master NAME")
		}
		o = &redis.UniversalOptions{Addrs: g.Sentinel, MasterName: g.SentinelMaster}
	default:
		opt, err := f.nodeOptions(password)
		if err != nil {
			return nil, err
		}
		return redis.NewClient(opt), nil
	}
	o.Password = password
	if o.TLSConfig, err = f.tlsConfig(false, ""); err != nil {
		return nil, err
	}
	clientOptions(g, o)
	return redis.NewUniversalClient(o), nil
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
	// Found only for such a message: finding them compiles a regexp,
	// which a good URL need not pay for.
	bad := func(hint, format string, args ...any) error {
		msg := fmt.Sprintf("bad %s %q", flag, redactRefusedURL(raw))
		if format != "" {
			msg += ": " + fmt.Sprintf(format, args...)
		}
		return &UsageError{Err: errors.New(redactSecrets(msg, urlSecrets(raw))), Hints: []string{hint}}
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
	clientOptions(g, opt)
	if u.Scheme == "rediss" {
		if opt.TLSConfig, err = f.tlsConfig(true, u.Hostname()); err != nil {
			return nil, err
		}
		opt.Dialer = tlsDialer(opt.TLSConfig, g.Timeout)
	} else {
		// HELLO travels with the connection's first command.
		opt.Dialer = helloconn.Dialer(redis.NewDialer(opt))
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
var userInfo = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([A-Za-z][A-Za-z0-9+.-]*://[^:@/]*):[^@]*@`)
})

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
	if r := userInfo().ReplaceAllString(raw, "$1:***@"); r != raw {
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
