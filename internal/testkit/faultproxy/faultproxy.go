// Package faultproxy is a loopback TCP proxy whose faults can be changed while
// connections are open: latency, slow replies, a blackhole, one-way loss and
// connection resets. Tests put it between a client and Redis, or on a
// replication link, to make the network misbehave the way real ones do.
//
// Faults apply to bytes as they are read from either side, so a fault set now
// affects data that arrives from now on; data already queued keeps the delay
// it was given.
package faultproxy

import (
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// Direction names one half of a proxied connection.
type Direction int

const (
	// None clears a one-way drop.
	None Direction = iota
	// ClientToServer is the request half: bytes the client sends.
	ClientToServer
	// ServerToClient is the reply half: bytes the server sends.
	ServerToClient
)

func (d Direction) String() string {
	switch d {
	case ClientToServer:
		return "client-to-server"
	case ServerToClient:
		return "server-to-client"
	}
	return "none"
}

// Proxy forwards every connection accepted on Addr to one upstream address.
type Proxy struct {
	upstream string
	ln       net.Listener

	mu        sync.Mutex
	latency   time.Duration
	slow      time.Duration
	blackhole bool
	drop      Direction
	refuse    bool
	conns     map[*pair]struct{}
	closed    bool

	wg sync.WaitGroup
}

// pair is one client connection and its upstream connection.
type pair struct {
	client, server net.Conn
	once           sync.Once
	dead           chan struct{} // closed by abort, wakes delayed writers
	pumps          int           // pumps still running, guarded by Proxy.mu
}

// New listens on a free loopback port and forwards to upstream (host:port).
func New(upstream string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{upstream: upstream, ln: ln, conns: map[*pair]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's host:port; clients dial it instead of the upstream.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Upstream is the address the proxy forwards to.
func (p *Proxy) Upstream() string { return p.upstream }

// SetLatency delays every chunk by d in both directions (0 clears it).
func (p *Proxy) SetLatency(d time.Duration) {
	p.mu.Lock()
	p.latency = d
	p.mu.Unlock()
}

// SetSlowReplies delays server-to-client chunks by d more than the latency,
// so requests arrive on time and their replies come late (0 clears it).
func (p *Proxy) SetSlowReplies(d time.Duration) {
	p.mu.Lock()
	p.slow = d
	p.mu.Unlock()
}

// Blackhole makes the proxy forward nothing while on: connections stay open
// and new ones are accepted, but every byte in either direction is discarded,
// as on a partitioned network where no RST ever comes back.
func (p *Proxy) Blackhole(on bool) {
	p.mu.Lock()
	p.blackhole = on
	p.mu.Unlock()
}

// DropOneWay discards every byte travelling in dir while the other direction
// still flows; None restores both.
func (p *Proxy) DropOneWay(dir Direction) {
	p.mu.Lock()
	p.drop = dir
	p.mu.Unlock()
}

// Refuse makes the proxy reset every new connection as soon as it is
// accepted while on, like a host whose port is closed; with Reset it keeps
// a client from reaching the server at all for as long as it lasts.
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

// Reset aborts every current connection with a TCP RST on both sides. New
// connections are accepted as usual afterwards.
func (p *Proxy) Reset() {
	p.mu.Lock()
	conns := make([]*pair, 0, len(p.conns))
	for c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.abort()
	}
}

// Conns is the number of connections currently proxied.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// Close stops accepting, resets every connection and waits for the proxy's
// goroutines to end.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Reset()
	p.wg.Wait()
	return err
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			time.Sleep(5 * time.Millisecond)
			continue
		}
		p.mu.Lock()
		refuse := p.refuse
		p.mu.Unlock()
		if refuse {
			rst(c)
			continue
		}
		s, err := net.DialTimeout("tcp", p.upstream, 2*time.Second)
		if err != nil {
			// An upstream that is down looks to the client like a refused
			// connection, which is what it would see without the proxy.
			rst(c)
			continue
		}
		pr := &pair{client: c, server: s, pumps: 2, dead: make(chan struct{})}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			pr.abort()
			return
		}
		p.conns[pr] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pump(pr, c, s, ClientToServer)
		go p.pump(pr, s, c, ServerToClient)
	}
}

type chunk struct {
	data []byte
	due  time.Time
}

// pump copies src to dst. A reader goroutine timestamps each chunk with the
// delay in force when it arrived; the writer sleeps until it is due, so a
// delay never reorders bytes and a long delay does not stop reading.
func (p *Proxy) pump(pr *pair, src, dst net.Conn, dir Direction) {
	defer p.wg.Done()
	q := make(chan chunk, 4096)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for c := range q {
			if d := time.Until(c.due); d > 0 {
				t := time.NewTimer(d)
				select {
				case <-t.C:
				case <-pr.dead:
					t.Stop()
				}
			}
			if _, err := dst.Write(c.data); err != nil {
				pr.abort()
				for range q {
				}
				return
			}
		}
		// The source closed cleanly: pass the half-close on.
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite() // a peer that is gone already needs no half-close
		}
	}()
	buf := make([]byte, 32*1024)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			p.mu.Lock()
			discard := p.blackhole || p.drop == dir
			delay := p.latency
			if dir == ServerToClient {
				delay += p.slow
			}
			p.mu.Unlock()
			if !discard {
				data := make([]byte, n)
				copy(data, buf[:n])
				q <- chunk{data: data, due: time.Now().Add(delay)}
			}
		}
		if err != nil {
			close(q)
			<-done
			if err != io.EOF {
				pr.abort()
			}
			p.forget(pr)
			return
		}
	}
}

func (p *Proxy) forget(pr *pair) {
	p.mu.Lock()
	if pr.pumps--; pr.pumps == 0 {
		delete(p.conns, pr)
	}
	p.mu.Unlock()
}

func (pr *pair) abort() {
	pr.once.Do(func() {
		close(pr.dead)
		rst(pr.client)
		rst(pr.server)
	})
}

// rst closes c with SO_LINGER 0, so the peer gets a RST instead of a FIN.
func rst(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0) // without it the close is a FIN: no worse than a conn already gone
	}
	_ = c.Close()
}
