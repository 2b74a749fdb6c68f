package cmd

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// fault is what went wrong on the way to Redis or at it, as the contract
// classes it. classifyRedis is the one place that sorts Redis error replies
// and transport failures; ExitCode takes the exit code from it and the
// printed message takes its hint from it, so the two never disagree.
type fault int

const (
	faultNone          fault = iota
	faultUnreachable         // connect refused, reset, closed, EOF
	faultClosed              // the client closed the connection under the call (a failover)
	faultNoHost              // the host name does not resolve
	faultTimeout             // no answer within --timeout
	faultTLS                 // handshake or certificate failure
	faultPlainTLS            // rediss:// at a server that speaks plain Redis
	faultAuth                // NOAUTH, WRONGPASS
	faultNoPerm              // ACL: NOPERM
	faultReadOnly            // READONLY replica
	faultClusterDown         // CLUSTERDOWN, TRYAGAIN, a cluster that serves no slots
	faultIncomplete          // a Cluster listing read some nodes, not all (inspect.ErrIncomplete)
	faultNotCluster          // --cluster at a server without cluster mode
	faultMoved               // MOVED/ASK to a client that is no cluster client
	faultNotSentinel         // --sentinel at a server that is no Sentinel
	faultNoMaster            // the Sentinels monitor no master of that name
	faultLoading             // LOADING its dataset
	faultMasterDown          // MASTERDOWN (replica lost its master)
	faultBusy                // BUSY running a script
	faultOOM                 // OOM under maxmemory-policy noeviction
	faultNoReplicas          // NOREPLICAS: fewer replicas than min-replicas-to-write
	faultNotReplicated       // fewer WAIT acks than --wait-replicas
	faultDBIndex             // the URL's database index is out of range
	faultNoQuorum            // Redlock: too few masters answered
	faultWrongType           // WRONGTYPE: a key holds another type (someone else's)
	faultRefused             // any other error reply: "Redis refused"
	faultSlowLink            // replies slower than the lease allows (a slow *lock.LateError: slowLink)
	faultForeign             // a reply no Redis server sends: not Redis there
)

// classifyRedis sorts err into a fault, or faultNone when err did not come
// from Redis or the way to it. Error replies are matched by their prefix,
// the only type Redis gives them.
func classifyRedis(err error) fault {
	if err == nil {
		return faultNone
	}
	var plain *plainServerError
	if errors.As(err, &plain) {
		return faultPlainTLS
	}
	var quorum *lock.QuorumError
	if errors.As(err, &quorum) {
		return faultNoQuorum
	}
	if errors.Is(err, inspect.ErrClusterDown) {
		return faultClusterDown
	}
	var partial *inspect.IncompleteError
	if errors.As(err, &partial) {
		if partial.Down {
			return faultClusterDown
		}
		return faultIncomplete
	}
	if redisreply.IsNoClusterNodes(err) {
		return faultClusterDown
	}
	var repl *lock.ReplicationError
	if errors.As(err, &repl) {
		return faultNotReplicated
	}
	if slowLink(err) {
		return faultSlowLink
	}
	// go-redis reports a Sentinel setup it could not use with plain
	// errors, over the sentinels' own (an unknown master name is a nil
	// reply beneath them).
	sentinel := strings.Contains(err.Error(), "redis: all sentinels") || strings.Contains(err.Error(), "redis: can't find master")
	if sentinel && errors.Is(err, redis.Nil) {
		return faultNoMaster
	}
	if f := classifyCause(err); f != faultNone || !sentinel {
		return f
	}
	return faultNotSentinel
}

// classifyCause sorts what is beneath err: a reply, or the way to the server.
func classifyCause(err error) fault {
	if errors.Is(err, redis.Nil) {
		// go-redis's "no such key" is a reply lockctl must handle itself:
		// one that reaches the top is a bug.
		return faultNone
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return classifyReply(rerr.Error())
	}
	if redisreply.IsUnexpected(err) {
		// Whatever answered is no Redis (an impostor, another service on
		// the port, a proxy mangling replies): the environment's fault,
		// not lockctl's.
		return faultForeign
	}
	if isTLSError(err) {
		return faultTLS
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) {
		return faultTimeout
	}
	var dnsErr *net.DNSError
	if errors.As(err, &dnsErr) && !dnsErr.IsTimeout {
		return faultNoHost
	}
	if errors.Is(err, net.ErrClosed) {
		// Not the server: go-redis closes its own connections to a master
		// a failover demoted (Sentinel's +switch-master, a Cluster's new
		// slot map) while calls on them are in flight.
		return faultClosed
	}
	var netErr net.Error
	if errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, redis.ErrClosed) ||
		errors.Is(err, redis.ErrPoolTimeout) || errors.Is(err, io.EOF) ||
		errors.Is(err, io.ErrUnexpectedEOF) || errors.As(err, &netErr) {
		if netErr != nil && netErr.Timeout() {
			return faultTimeout
		}
		return faultUnreachable
	}
	return faultNone
}

// classifyReply sorts one Redis error reply.
func classifyReply(msg string) fault {
	has := func(prefixes ...string) bool {
		for _, p := range prefixes {
			if strings.HasPrefix(msg, p) {
				return true
			}
		}
		return false
	}
	switch {
	// An unauthenticated client sending a command of more than a few arguments
	// (a lock script) gets a protocol error, not NOAUTH.
	case has("NOAUTH", "WRONGPASS", "ERR AUTH", "ERR invalid password", "ERR Client sent AUTH", "ERR invalid username-password", "ERR Protocol error: unauthenticated"):
		return faultAuth
	case has("NOPERM"), refusedInScript(msg):
		return faultNoPerm
	case has("READONLY"):
		return faultReadOnly
	case has("CLUSTERDOWN", "TRYAGAIN"):
		return faultClusterDown
	case has("MOVED", "ASK "):
		return faultMoved
	case strings.Contains(msg, "cluster support disabled"):
		return faultNotCluster
	case strings.Contains(msg, "unknown command 'sentinel'"):
		return faultNotSentinel
	case has("LOADING"):
		return faultLoading
	case has("MASTERDOWN"):
		return faultMasterDown
	case has("BUSY"):
		return faultBusy
	case has("OOM"):
		return faultOOM
	case has("NOREPLICAS"):
		return faultNoReplicas
	case has("ERR DB index is out of range", "ERR invalid DB index"):
		return faultDBIndex
	case has("WRONGTYPE"):
		return faultWrongType
	}
	return faultRefused
}

// refusedInScript: the ACL refused a command a script called. Redis 7.0
// says so in words of its own, not with NOPERM ("ERR The user executing
// the script can't run this command or subcommand script: ..."); Redis 6
// wraps them ("ERR Error running script (call to f_...): ... The user
// executing the script can't ..."); later versions wrap a NOPERM reply.
func refusedInScript(msg string) bool {
	if strings.Contains(msg, "user executing the script can't") {
		return true
	}
	return strings.HasPrefix(msg, "ERR Error running script") &&
		(strings.Contains(msg, "NOPERM") || strings.Contains(msg, "No permissions") || strings.Contains(msg, "no permissions"))
}

func isTLSError(err error) bool {
	var (
		rec     tls.RecordHeaderError
		alert   tls.AlertError
		verify  *tls.CertificateVerificationError
		unknown x509.UnknownAuthorityError
		host    x509.HostnameError
		invalid x509.CertificateInvalidError
	)
	if errors.As(err, &rec) || errors.As(err, &alert) || errors.As(err, &verify) ||
		errors.As(err, &unknown) || errors.As(err, &host) || errors.As(err, &invalid) {
		return true
	}
	// crypto/tls reports most handshake failures as plain errors.
	return strings.Contains(err.Error(), "tls: ")
}

// server names what lockctl talks to, for messages: an address, never a
// password.
type server struct {
	Addr string // "127.0.0.1:6379", "/run/redis.sock", "cluster a:1,b:2", ...
	DB   int    // the --url database index
	TLS  bool   // rediss://
	Mode string // "url", "cluster", "sentinel", "redlock"
	// Origin is where the --url came from: "--url", "LOCKCTL_URL",
	// "REDIS_URL", "config file PATH", or "" for the default.
	Origin string
}

// name is how messages call s.
func (s server) name() string {
	switch s.Mode {
	case "cluster":
		return "redis cluster at " + s.Addr
	case "sentinel":
		return "redis via sentinel " + s.Addr
	}
	return "redis at " + s.Addr
}

// hints says what to do about f at s.
func (f fault) hints(s server) []string {
	switch f {
	case faultUnreachable:
		if s.Mode == "url" && s.TLS {
			return []string{"is redis-server listening for TLS there? check the host, the port and the rediss:// scheme"}
		}
		switch s.Mode {
		case "redlock":
			return []string{"is redis-server running there? check the --redlock URLs"}
		case "cluster":
			return []string{"is redis-server running there? check the --cluster addresses (LOCKCTL_CLUSTER)"}
		case "sentinel":
			return []string{"is redis-sentinel running there? check the --sentinel addresses (LOCKCTL_SENTINEL; Sentinel's port is usually 26379)"}
		}
		if s.Origin == "" {
			return []string{"is redis-server running there? no URL was given, so lockctl tried the default redis://127.0.0.1:6379/0: set --url or LOCKCTL_URL"}
		}
		return []string{"is redis-server running there? the URL came from " + s.Origin + ": check the host and port there"}
	case faultClosed:
		if s.Mode == "sentinel" || s.Mode == "cluster" {
			return []string{"the client closed this connection as it followed a failover to a new master; the next call goes to the new master: try again"}
		}
		return []string{"the client closed this connection while the call was in flight; try again"}
	case faultNoHost:
		return []string{"the host name does not resolve: check the host in --url (or --cluster, --sentinel, --redlock)"}
	case faultTimeout:
		hs := []string{"the server did not answer within --timeout: is it overloaded, paused or far away? raise --timeout if it is just slow"}
		if s.Mode == "url" && s.TLS {
			hs = append(hs, "a server that does not speak TLS never answers a TLS handshake: check the port and the rediss:// scheme")
		}
		return hs
	case faultTLS:
		return []string{"check --tls-ca (the CA that signed the server's certificate), the host name in --url, or --tls-insecure for a test server; a server that does not speak TLS needs redis://"}
	case faultPlainTLS:
		return []string{"this server does not speak TLS on this port: use redis:// for it, or the port of its tls-port setting"}
	case faultAuth:
		return []string{"set the password with LOCKCTL_PASSWORD or --password-file, or the user in --url redis://user@host"}
	case faultNoPerm:
		return []string{"the Redis user lacks a command or key lockctl needs, or the channel &lockctl:*; `lockctl doctor` lists them"}
	case faultReadOnly:
		return []string{"this server is a replica; point --url at the master or use --sentinel"}
	case faultClusterDown:
		return []string{"the cluster cannot serve this slot now (a master is down or slots are unassigned); check CLUSTER INFO, then retry"}
	case faultIncomplete:
		return []string{"what was printed is true but lacks the keys of the slots named: they may hold locks; check CLUSTER INFO and CLUSTER NODES, then retry"}
	case faultNotCluster:
		return []string{"this server does not run in cluster mode: drop --cluster (and LOCKCTL_CLUSTER) and give it with --url"}
	case faultMoved:
		return []string{"this server is a Redis Cluster node: give the cluster's nodes with --cluster H:P,... instead of --url"}
	case faultNotSentinel:
		return []string{"--sentinel takes the addresses of Sentinel processes (usually port 26379) and --sentinel-master the name they monitor; for a plain server drop --sentinel and use --url"}
	case faultNoMaster:
		return []string{"the Sentinels monitor no master by the name --sentinel-master gives: check the name (SENTINEL MASTERS lists them)"}
	case faultLoading:
		return []string{"the server is loading its dataset after a restart; retry when it is done"}
	case faultMasterDown:
		return []string{"this replica lost its master; point --url at the master or use --sentinel"}
	case faultBusy:
		return []string{"the server is busy running a long script; wait for it or end it with SCRIPT KILL"}
	case faultOOM:
		return []string{"the server is out of memory (maxmemory reached under maxmemory-policy noeviction): raise maxmemory or free memory; never pick an allkeys-* or volatile-* policy for locks, it evicts them (`lockctl doctor` checks)"}
	case faultNoReplicas:
		return []string{"the server refuses writes while fewer replicas than its min-replicas-to-write are connected and in time (min-replicas-max-lag): check the replicas (INFO replication) or those settings"}
	case faultNotReplicated:
		return []string{"fewer replicas than --wait-replicas acknowledged the write in time (a lock just acquired is let go again): check that the replicas are up and connected (INFO replication), or give WAIT longer (--wait-replicas N:D) or ask for fewer"}
	case faultDBIndex:
		if s.Mode != "url" {
			return []string{"the server has no database of the index in the URL: its `databases` setting bounds it (CONFIG GET databases; the default is 16, so 0-15)"}
		}
		return []string{fmt.Sprintf("the server has no database %d: its `databases` setting bounds the index in --url (CONFIG GET databases; the default is 16, so 0-15)", s.DB)}
	case faultNoQuorum:
		return []string{"a majority of the --redlock masters must answer in time; check the servers named above"}
	case faultWrongType:
		return []string{"a key lockctl uses holds a value someone else wrote; look at it with redis-cli TYPE, and remove it only if nothing else needs it"}
	case faultSlowLink:
		return []string{"replies take longer than the lease's TTL less its margin, so no grant can count: raise --ttl (to 3 times the round trip or more, so that renewals arrive in time too), or find what slows the link"}
	case faultRefused:
		return []string{"the server refused the command; its reply is quoted above (`lockctl doctor` checks the server's version and settings)"}
	case faultForeign:
		return []string{"check that --url names a redis-server (not another service, or a proxy that changes replies); whatever listens there was sent the password, if one is set",
			"if it is a redis-server, this is a bug in lockctl: please report it with the command line and the output of -v"}
	}
	return nil
}

// quorumHints adds to the Redlock hint those of the nodes' own faults
// (out of memory, a database index, ...), each once.
func quorumHints(err error, s server) []string {
	hints := faultNoQuorum.hints(s)
	var q *lock.QuorumError
	if !errors.As(err, &q) {
		return hints
	}
	seen := map[fault]bool{}
	for _, e := range q.Errs {
		if f := classifyRedis(e); f != faultNone && f != faultNoQuorum && !seen[f] {
			seen[f] = true
			hints = append(hints, f.hints(s)...)
		}
	}
	return hints
}

// explain makes err, a failure classified as f, name the server: the
// server's own text stays as it was, preceded by who said it.
func explain(err error, f fault, s server) error {
	if f == faultNone || s.Addr == "" || s.Mode == "redlock" {
		return err
	}
	msg := err.Error()
	if strings.Contains(msg, s.Addr) {
		return err
	}
	if errors.Is(err, inspect.ErrIncomplete) {
		// It quotes the nodes' own errors, each after its address.
		return &msgError{msg: s.name() + ": " + msg, err: err}
	}
	var (
		leaf string
		verb = s.name() + ": "
		rerr redis.Error
	)
	if errors.As(err, &rerr) {
		leaf = rerr.Error()
		verb = s.name() + " refused: "
	} else if f == faultForeign {
		verb = "the server at " + s.Addr + " answered something Redis would not (not a Redis reply): "
		for e := err; e != nil; e = errors.Unwrap(e) {
			leaf = e.Error()
		}
	} else if inner := errors.Unwrap(err); inner != nil {
		// Before the network layer's own words ("dial tcp: ..."), else
		// before the innermost cause.
		for e := err; e != nil; e = errors.Unwrap(e) {
			leaf = e.Error()
			if _, ok := e.(*net.OpError); ok {
				break
			}
		}
	}
	if i := strings.LastIndex(msg, leaf); leaf != "" && i >= 0 {
		msg = msg[:i] + verb + msg[i:]
	} else {
		msg = strings.TrimSuffix(verb, ": ") + ": " + msg
	}
	return &msgError{msg: msg, err: err}
}

// foreignNil tells a nil reply that reached the top, which lockctl would
// otherwise call its own bug (every nil a Redis may send, a missing key's
// GET, is handled where it is read), from one sent by a server that is no
// Redis (an impostor answering nil to every command): asked PING, a Redis
// answers PONG. Only then is err unchanged; otherwise it is the server's
// fault, a reply no Redis sends (69).
func (f *Factory) foreignNil(err error) error {
	if f.client == nil || !errors.Is(err, redis.Nil) || classifyRedis(err) != faultNone {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pong, perr := f.client.Ping(ctx).Result()
	switch {
	case perr == nil && pong == "PONG":
		return err // a Redis: the nil is lockctl's to handle
	case perr == nil:
		return fmt.Errorf("%s: %w", err, redisreply.Unexpected("reply to PING", pong))
	case errors.Is(perr, redis.Nil):
		return fmt.Errorf("%s: %w", err, redisreply.Unexpected("reply to PING", "nil"))
	case redisreply.IsUnexpected(perr):
		return fmt.Errorf("%s: %w", err, perr)
	}
	return err
}

// slowLink reports a link too slow for the lease: a *lock.LateError with
// Slow set.
func slowLink(err error) bool {
	var late *lock.LateError
	return errors.As(err, &late) && late.Slow
}
