package helloconn_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli/support/helloconn"
	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"
)

// countingConn counts the writes that reach the socket: one per round trip
// for a client that waits for each reply.
type countingConn struct {
	*net.TCPConn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.TCPConn.Write(p)
}

// client is a go-redis client set up as lockctl's (protocol 2, no CLIENT
// SETINFO) on url, dialing through helloconn, with the socket writes
// counted.
func client(t *testing.T, url string) (*redis.Client, *atomic.Int64) {
	t.Helper()
	opt, err := redis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.Protocol, opt.DisableIdentity, opt.MaxRetries = 2, true, -1
	opt.DialTimeout, opt.ReadTimeout = 5*time.Second, 5*time.Second
	writes := new(atomic.Int64)
	opt.Dialer = helloconn.Dialer(func(ctx context.Context, network, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{c.(*net.TCPConn), writes}, nil
	})
	c := redis.NewClient(opt)
	t.Cleanup(func() { _ = c.Close() })
	return c, writes
}

// helloCalls is the server's count of HELLO calls, read on c's connection
// (another client would send a HELLO of its own).
func helloCalls(t *testing.T, c *redis.Client) string {
	t.Helper()
	info, err := c.Info(context.Background(), "commandstats").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(info, "\n") {
		if strings.HasPrefix(l, "cmdstat_hello:") {
			calls, _, _ := strings.Cut(strings.TrimPrefix(l, "cmdstat_hello:"), ",")
			return calls
		}
	}
	return "calls=0"
}

func TestPlainHelloTravelsWithTheFirstCommand(t *testing.T) {
	s := redistest.StartTest(t, nil)
	c, writes := client(t, s.URL)
	ctx := context.Background()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load(); n != 1 {
		t.Errorf("HELLO and SET took %d writes to the socket, want 1", n)
	}
	if got := helloCalls(t, c); got != "calls=1" {
		t.Errorf("server's HELLO %s, want calls=1: the HELLO must still reach it", got)
	}
	// The dropped reply must not shift the replies that follow.
	for i := range 3 {
		if v, err := c.Get(ctx, "k").Result(); err != nil || v != "v" {
			t.Fatalf("GET %d = %q, %v; want v", i, v, err)
		}
	}
	if n := writes.Load(); n != 5 {
		t.Errorf("%d writes for HELLO+SET, INFO and three GETs, want 5", n)
	}
}

func TestHelloWithAuthIsItsOwnRoundTrip(t *testing.T) {
	s := redistest.StartTest(t, &redistest.Options{Password: "s3cret"})
	c, writes := client(t, s.URL)
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load(); n != 2 {
		t.Errorf("HELLO ... AUTH and PING took %d writes, want 2: no command may go before the authentication's reply", n)
	}
}

func TestWrongPasswordStillRefused(t *testing.T) {
	s := redistest.StartTest(t, &redistest.Options{Password: "s3cret"})
	c, _ := client(t, strings.Replace(s.URL, "s3cret", "wrong", 1))
	err := c.Ping(context.Background()).Err()
	if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
		t.Fatalf("PING with a wrong password: %v, want WRONGPASS", err)
	}
}

// fakeServer answers every command (one RESP array of bulk strings each)
// with answer(command name).
func fakeServer(t *testing.T, answer func(cmd string) string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = c.Close() }()
				r := bufio.NewReader(c)
				for {
					args, err := readCommand(r)
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(answer(strings.ToUpper(args[0])))); err != nil {
						return
					}
				}
			}()
		}
	}()
	return "redis://" + ln.Addr().String() + "/0"
}

func readCommand(r *bufio.Reader) ([]string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(line, "*") {
		return nil, errors.New("not a command: " + line)
	}
	n, err := strconv.Atoi(strings.TrimSpace(line[1:]))
	if err != nil {
		return nil, err
	}
	args := make([]string, 0, n)
	for range n {
		if _, err := r.ReadString('\n'); err != nil {
			return nil, err
		}
		arg, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		args = append(args, strings.TrimRight(arg, "\r\n"))
	}
	return args, nil
}

func TestServerBeforeHelloStillServes(t *testing.T) {
	url := fakeServer(t, func(cmd string) string {
		if cmd == "HELLO" {
			return "-ERR unknown command 'HELLO'\r\n"
		}
		return "+PONG\r\n"
	})
	c, _ := client(t, url)
	if v, err := c.Ping(context.Background()).Result(); err != nil || v != "PONG" {
		t.Fatalf("PING = %q, %v; want PONG after the refused HELLO is dropped", v, err)
	}
}

func TestNoRedisReplyToHelloIsUnexpected(t *testing.T) {
	url := fakeServer(t, func(string) string { return "+OK\r\n" })
	c, _ := client(t, url)
	err := c.Ping(context.Background()).Err()
	if !errors.Is(err, redisreply.ErrUnexpected) {
		t.Fatalf("PING from a server answering +OK to HELLO: %v, want an error matching redisreply.ErrUnexpected", err)
	}
}
