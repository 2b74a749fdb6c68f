package exporter

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

func idleConn(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	return c
}

func serve(t *testing.T, opts ServerOptions) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprintln(w, "ok") })
	go func() { done <- Serve(ctx, ln, h, opts) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return ln.Addr().String()
}

// Keep-alive connections with no request are closed after the idle
// timeout, by the server.
func TestServerClosesIdleConnections(t *testing.T) {
	addr := serve(t, ServerOptions{IdleTimeout: 500 * time.Millisecond})
	var conns []net.Conn
	for i := 0; i < 20; i++ {
		conns = append(conns, idleConn(t, addr))
	}
	for i, c := range conns {
		// Past the idle timeout (with room for a loaded machine), a read
		// sees the server's close, not our own deadline.
		if err := c.SetReadDeadline(time.Now().Add(20 * time.Second)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(make([]byte, 1)); err != io.EOF {
			t.Errorf("connection %d: read %v, want EOF (closed by the server)", i, err)
		}
		_ = c.Close() // the server closed it already
	}
}

// At the connection cap, a new client closes the longest-idle one instead
// of waiting behind it: many idle clients never lock a scrape out.
func TestServerCapEvictsIdle(t *testing.T) {
	addr := serve(t, ServerOptions{MaxConns: 8, IdleTimeout: time.Hour})
	var conns []net.Conn
	for i := 0; i < 30; i++ {
		conns = append(conns, idleConn(t, addr))
	}
	defer func() {
		for _, c := range conns {
			_ = c.Close() // some were closed by the server already
		}
	}()
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}
	resp, err := client.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	// The first clients, idle the longest, were closed; the last ones are
	// still open.
	closed := 0
	for _, c := range conns {
		if err := c.SetReadDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read(make([]byte, 1)); err == io.EOF {
			closed++
		}
	}
	if closed < len(conns)-8 || closed == len(conns) {
		t.Errorf("%d of %d idle connections closed, want at least %d and not all", closed, len(conns), len(conns)-8)
	}
}
