// Package helloconn sends go-redis's connection handshake with the
// connection's first command instead of as a round trip of its own.
//
// go-redis starts every connection with HELLO and waits for its reply
// before it writes the first command. When the HELLO carries nothing the
// server could refuse (protocol 2, no AUTH, no client name: exactly
// "HELLO 2"), its reply changes nothing go-redis does: it reads a map it
// does not keep, and an error reply only means the server predates HELLO,
// after which go-redis goes on in RESP2 all the same. Such a HELLO is held
// back, answered locally with an empty map, and written in front of the
// first command; the server's own reply to it is read and dropped ahead of
// the command's. A HELLO with credentials is never held back: the command
// behind it would run before the authentication it needs is known to have
// succeeded.
package helloconn

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"syscall"

	"github.com/lockctl/lockctl/internal/lib/redisreply"
)

// plainHello is go-redis's HELLO 2 without AUTH or SETNAME, as it writes it.
var plainHello = []byte("*2\r\n$5\r\nhello\r\n$1\r\n2\r\n")

// heldHelloReply answers a held-back HELLO: an empty map (in RESP2, an
// array of its keys and values).
var heldHelloReply = []byte("*0\r\n")

// Dialer returns a dialer that dials with dial and holds back a plain
// HELLO on each connection (see the package comment).
func Dialer(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		sc, ok := c.(syscallConn)
		if !ok {
			// go-redis checks a pooled connection's socket before reusing
			// it only through syscall.Conn; a wrapper would hide it.
			return c, nil
		}
		return &conn{syscallConn: sc}, nil
	}
}

type syscallConn interface {
	net.Conn
	syscall.Conn
}

type state int

const (
	fresh       state = iota // nothing written yet
	held                     // HELLO held back, its local reply being read
	dropping                 // HELLO sent; its reply is still to be dropped
	passThrough              // everything goes straight to the socket
)

// conn is a connection whose first HELLO may be held back. Reads and
// writes may come from two goroutines (a pub/sub connection's reader and
// its pings), so the state is under mu; reading the socket is not.
type conn struct {
	syscallConn

	mu    sync.Mutex
	state state
	local []byte // what is left of heldHelloReply to read

	br *bufio.Reader // the socket while the dropped reply is read, and what came after it
}

func (c *conn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case fresh:
		if bytes.Equal(p, plainHello) {
			c.state, c.local = held, heldHelloReply
			return len(p), nil
		}
		c.state = passThrough
	case held:
		// The first command: the HELLO goes in front of it, in one write.
		c.state = dropping
		buf := append(append(make([]byte, 0, len(plainHello)+len(p)), plainHello...), p...)
		n, err := c.syscallConn.Write(buf)
		return max(n-len(plainHello), 0), err
	}
	return c.syscallConn.Write(p)
}

func (c *conn) Read(p []byte) (int, error) {
	c.mu.Lock()
	switch c.state {
	case held:
		if len(c.local) > 0 {
			n := copy(p, c.local)
			c.local = c.local[n:]
			c.mu.Unlock()
			return n, nil
		}
		// More read than the local reply before a command was written:
		// send the HELLO now and read on as after a command.
		c.state = dropping
		if _, err := c.syscallConn.Write(plainHello); err != nil {
			c.mu.Unlock()
			return 0, err
		}
	case fresh, passThrough:
		c.mu.Unlock()
		return c.syscallConn.Read(p)
	}
	if c.br == nil {
		c.br = bufio.NewReader(c.syscallConn)
		c.mu.Unlock()
		if err := dropHelloReply(c.br); err != nil {
			return 0, err
		}
	} else {
		c.mu.Unlock()
	}
	n, err := c.br.Read(p)
	if c.br.Buffered() == 0 {
		c.mu.Lock()
		c.state = passThrough
		c.mu.Unlock()
	}
	return n, err
}

// dropHelloReply reads the server's reply to HELLO and drops it. What go-redis
// would have taken from it is taken: an error reply or a nil (a server
// before HELLO) is nothing, a map or an array is the server's description;
// anything else no Redis answers to HELLO, and go-redis would have refused
// the connection.
func dropHelloReply(r *bufio.Reader) error {
	line, err := readLine(r)
	if err != nil {
		return err
	}
	switch line[0] {
	case '-', '_', '*', '%':
	case '$':
		if string(line) != "$-1" {
			return redisreply.Unexpected("reply to HELLO", string(line))
		}
	default:
		return redisreply.Unexpected("reply to HELLO", string(line))
	}
	return skipRest(r, line)
}

// skipRest reads the rest of the RESP value whose first line is line.
func skipRest(r *bufio.Reader, line []byte) error {
	switch line[0] {
	case '+', '-', ':', '_', ',', '#', '(':
		return nil
	case '$', '=', '!':
		n, err := length(line)
		if err != nil || n < 0 {
			return err
		}
		_, err = r.Discard(n + 2)
		return err
	case '*', '~', '>', '%', '|':
		n, err := length(line)
		if err != nil || n < 0 {
			return err
		}
		if line[0] == '%' || line[0] == '|' {
			n *= 2
		}
		for range n {
			l, err := readLine(r)
			if err != nil {
				return err
			}
			if err := skipRest(r, l); err != nil {
				return err
			}
		}
		return nil
	}
	return redisreply.Unexpected("reply to HELLO", string(line))
}

// readLine is one CRLF-terminated line of RESP, without the CRLF.
func readLine(r *bufio.Reader) ([]byte, error) {
	line, err := r.ReadSlice('\n')
	if err != nil {
		if errors.Is(err, bufio.ErrBufferFull) {
			return nil, redisreply.Unexpected("reply to HELLO", "(a line longer than 4096 bytes)")
		}
		return nil, err
	}
	if len(line) < 3 || line[len(line)-2] != '\r' {
		return nil, redisreply.Unexpected("reply to HELLO", fmt.Sprintf("%q", line))
	}
	return line[:len(line)-2], nil
}

func length(line []byte) (int, error) {
	n, err := strconv.Atoi(string(line[1:]))
	if err != nil {
		return 0, redisreply.Unexpected("reply to HELLO", string(line))
	}
	return n, nil
}
