package exporter

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// ServerOptions bound what clients of the exporter's HTTP server may hold:
// it is often reachable beyond loopback, and a scrape must get through
// however many idle or slow clients are connected.
type ServerOptions struct {
	ReadHeaderTimeout time.Duration // 0 is 10s
	ReadTimeout       time.Duration // whole request; 0 is 30s
	WriteTimeout      time.Duration // whole response; 0 is 60s
	IdleTimeout       time.Duration // keep-alive connection with no request; 0 is 30s
	// MaxConns caps the open connections; 0 is DefaultMaxConns. At the
	// cap, a new connection closes the oldest one that is idle (or has not
	// sent a request yet); when every one is busy it waits for one to end.
	MaxConns int
}

// DefaultMaxConns is the connection cap of the exporter's server: far
// above what a few Prometheus servers need, far below a default
// descriptor limit.
const DefaultMaxConns = 64

func (o ServerOptions) withDefaults() ServerOptions {
	def := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	def(&o.ReadHeaderTimeout, 10*time.Second)
	def(&o.ReadTimeout, 30*time.Second)
	def(&o.WriteTimeout, 60*time.Second)
	def(&o.IdleTimeout, 30*time.Second)
	if o.MaxConns <= 0 {
		o.MaxConns = DefaultMaxConns
	}
	return o
}

// Serve serves h on ln with the bounds of opts until ctx ends, then shuts
// down gracefully (5s at most). A server stopped by ctx returns nil.
func Serve(ctx context.Context, ln net.Listener, h http.Handler, opts ServerOptions) error {
	opts = opts.withDefaults()
	cl := newCappedListener(ln, opts.MaxConns)
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: opts.ReadHeaderTimeout,
		ReadTimeout:       opts.ReadTimeout,
		WriteTimeout:      opts.WriteTimeout,
		IdleTimeout:       opts.IdleTimeout,
		MaxHeaderBytes:    16 << 10,
		ConnState:         cl.state,
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(cl) }()
	var err error
	select {
	case err = <-served:
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err = srv.Shutdown(shut)
	}
	if err == http.ErrServerClosed {
		err = nil
	}
	return err
}

// cappedListener keeps at most max connections open. The http.Server
// reports each connection's state (ConnState); at the cap, Accept closes
// the connection that has been idle, or new without a request, the
// longest, so idle keep-alive clients can never lock out a scrape.
type cappedListener struct {
	net.Listener
	max int

	mu    sync.Mutex
	conns map[net.Conn]connInfo
	freed chan struct{} // a connection closed
}

type connInfo struct {
	state http.ConnState
	since time.Time
}

func newCappedListener(ln net.Listener, max int) *cappedListener {
	return &cappedListener{Listener: ln, max: max, conns: map[net.Conn]connInfo{}, freed: make(chan struct{}, 1)}
}

func (l *cappedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.admit(c) {
			return c, nil
		}
	}
}

// admit makes room for c; when every open connection is busy, it waits
// (a bounded time) for one to finish, then refuses c.
func (l *cappedListener) admit(c net.Conn) bool {
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		if len(l.conns) < l.max {
			l.conns[c] = connInfo{state: http.StateNew, since: time.Now()}
			l.mu.Unlock()
			return true
		}
		var oldest net.Conn
		var at time.Time
		for oc, in := range l.conns {
			if in.state != http.StateIdle && in.state != http.StateNew {
				continue
			}
			if oldest == nil || in.since.Before(at) {
				oldest, at = oc, in.since
			}
		}
		if oldest != nil {
			// Forget it now: its StateClosed comes later, from the server.
			delete(l.conns, oldest)
			l.conns[c] = connInfo{state: http.StateNew, since: time.Now()}
			l.mu.Unlock()
			_ = oldest.Close() // dropped to make room: its close error changes nothing
			return true
		}
		l.mu.Unlock()
		wait := time.Until(deadline)
		if wait <= 0 {
			_ = c.Close() // refused: its close error changes nothing
			return false
		}
		t := time.NewTimer(min(wait, 100*time.Millisecond))
		select {
		case <-l.freed:
		case <-t.C:
		}
		t.Stop()
	}
}

func (l *cappedListener) state(c net.Conn, s http.ConnState) {
	l.mu.Lock()
	defer l.mu.Unlock()
	switch s {
	case http.StateClosed, http.StateHijacked:
		delete(l.conns, c)
		select {
		case l.freed <- struct{}{}:
		default:
		}
	default:
		if _, ok := l.conns[c]; ok {
			l.conns[c] = connInfo{state: s, since: time.Now()}
		}
	}
}
