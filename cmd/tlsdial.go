package cmd

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"time"
)

// plainServerError: a rediss:// URL names a server that answers plain
// Redis. Such a server never answers a TLS handshake (it waits for the end
// of an inline command that never comes), so without a look the call would
// hang for the whole --timeout and say nothing about TLS.
type plainServerError struct{ Addr string }

func (e *plainServerError) Error() string {
	return fmt.Sprintf("TLS handshake with %s: the server answers plain Redis, not TLS", e.Addr)
}

// tlsProbeAfter is how long a TLS handshake may take before lockctl looks
// whether the server speaks plain Redis instead. A real TLS server answers
// well within it; the look itself is one PING on a second connection.
const tlsProbeAfter = 300 * time.Millisecond

// tlsDialer dials TCP and does the TLS handshake, as go-redis's own dialer
// does, but fails fast with *plainServerError when the server turns out to
// speak plain Redis on that port.
func tlsDialer(cfg *tls.Config, timeout time.Duration) func(context.Context, string, string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		d := &net.Dialer{Timeout: timeout}
		raw, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		c := cfg.Clone()
		if c.ServerName == "" {
			if host, _, err := net.SplitHostPort(addr); err == nil {
				c.ServerName = host
			}
		}
		conn := tls.Client(raw, c)
		if timeout > 0 {
			_ = raw.SetDeadline(time.Now().Add(timeout))
		}
		done := make(chan error, 1)
		go func() { done <- conn.HandshakeContext(ctx) }()
		// Look again while the handshake hangs: one look may itself be
		// slow on a loaded machine.
		probe := time.NewTicker(min(tlsProbeAfter, max(timeout/4, time.Millisecond)))
		defer probe.Stop()
	wait:
		for {
			select {
			case err = <-done:
				break wait
			case <-probe.C:
				if speaksPlainRedis(ctx, network, addr, timeout) {
					_ = raw.Close() // ends the handshake, whose error is not wanted
					<-done          //nolint:errcheck // the handshake was abandoned: its error is not wanted
					return nil, &plainServerError{Addr: addr}
				}
			}
		}
		if err != nil {
			_ = raw.Close() // the handshake's error is the one to report
			return nil, err
		}
		_ = raw.SetDeadline(time.Time{})
		return conn, nil
	}
}

// speaksPlainRedis sends PING in clear and reports whether a RESP reply
// comes back (+PONG, or an error such as -NOAUTH: either way plain Redis).
func speaksPlainRedis(ctx context.Context, network, addr string, timeout time.Duration) bool {
	wait := min(max(timeout/2, 100*time.Millisecond), 2*time.Second)
	d := &net.Dialer{Timeout: wait}
	c, err := d.DialContext(ctx, network, addr)
	if err != nil {
		return false
	}
	defer func() { _ = c.Close() }() // a probe: only its reply matters
	_ = c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || len(line) < 3 {
		return false
	}
	return (line[0] == '+' || line[0] == '-') && line[len(line)-2] == '\r'
}
