package faultproxy_test

import (
	"context"
	"errors"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/faultproxy"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"
)

var srv *redistest.Server

func TestMain(m *testing.M) { redistest.Main(m, &srv) }

func newProxy(t *testing.T) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// client talks to Redis through p with one connection and no retries, so a
// fault shows up in the very call that meets it.
func client(t *testing.T, p *faultproxy.Proxy, timeout time.Duration) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{
		Addr: p.Addr(), PoolSize: 1, MaxRetries: -1,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout,
	})
	t.Cleanup(func() { c.Close() })
	return c
}

func timed(f func() error) (time.Duration, error) {
	start := time.Now()
	err := f()
	return time.Since(start), err
}

func TestPassThrough(t *testing.T) {
	p := newProxy(t)
	c := client(t, p, 2*time.Second)
	ctx := context.Background()
	key := redistest.UniqueKey(t)
	if err := c.Set(ctx, key, "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := srv.Do("GET", key); got != "v" {
		t.Fatalf("server has %q, want v", got)
	}
	if p.Conns() != 1 {
		t.Fatalf("Conns = %d, want 1", p.Conns())
	}
}

func TestLatencyBothWays(t *testing.T) {
	p := newProxy(t)
	c := client(t, p, 5*time.Second)
	ctx := context.Background()
	c.Ping(ctx) // dial before the fault, so only the round trip is measured
	// Large enough that a loaded machine's own stalls cannot pass for it.
	p.SetLatency(time.Second)
	d, err := timed(func() error { return c.Ping(ctx).Err() })
	if err != nil {
		t.Fatal(err)
	}
	// One delay on the way in and one on the way out.
	if d < 2*time.Second {
		t.Fatalf("PING took %v with 1s latency each way, want >= 2s", d)
	}
	p.SetLatency(0)
	if d, _ := timed(func() error { return c.Ping(ctx).Err() }); d > time.Second {
		t.Fatalf("PING took %v after the latency was cleared", d)
	}
}

func TestSlowRepliesOnlyDelayReplies(t *testing.T) {
	p := newProxy(t)
	c := client(t, p, 5*time.Second)
	ctx := context.Background()
	key := redistest.UniqueKey(t)
	c.Ping(ctx)
	p.SetSlowReplies(600 * time.Millisecond)
	start := time.Now()
	done := make(chan error, 1)
	go func() { done <- c.Set(ctx, key, "v", time.Minute).Err() }()
	// The request reaches the server at once; only the reply is late.
	deadline := time.Now().Add(400 * time.Millisecond)
	for {
		if got, _ := srv.Do("GET", key); got == "v" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the write did not reach the server while its reply was held back")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d < 600*time.Millisecond {
		t.Fatalf("reply came after %v, want >= 600ms", d)
	}
}

func TestBlackholeKeepsConnectionsAndForwardsNothing(t *testing.T) {
	p := newProxy(t)
	c := client(t, p, 300*time.Millisecond)
	ctx := context.Background()
	key := redistest.UniqueKey(t)
	c.Ping(ctx)
	p.Blackhole(true)
	err := c.Set(ctx, key, "v", time.Minute).Err()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("SET through a blackhole: %v, want a timeout", err)
	}
	if got, _ := srv.Do("EXISTS", key); got != "0" {
		t.Fatalf("the blackholed write reached the server (EXISTS %s)", got)
	}
	// A new connection is accepted but answers nothing either.
	raw, err := net.DialTimeout("tcp", p.Addr(), time.Second)
	if err != nil {
		t.Fatalf("dial during a blackhole: %v", err)
	}
	defer raw.Close()
	raw.Write([]byte("PING\r\n"))
	raw.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, err := raw.Read(make([]byte, 16)); !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read through a blackhole: %d bytes, %v; want a timeout", n, err)
	}
	p.Blackhole(false)
	if err := c.Set(ctx, key, "v", time.Minute).Err(); err != nil {
		t.Fatalf("after the blackhole: %v", err)
	}
}

func TestDropOneWay(t *testing.T) {
	p := newProxy(t)
	c := client(t, p, 300*time.Millisecond)
	ctx := context.Background()
	key := redistest.UniqueKey(t)
	c.Ping(ctx)

	p.DropOneWay(faultproxy.ServerToClient)
	if err := c.Set(ctx, key, "a", time.Minute).Err(); err == nil {
		t.Fatal("SET returned a reply that the proxy should have dropped")
	}
	if got, _ := srv.Do("GET", key); got != "a" {
		t.Fatalf("request half must flow: server has %q, want a", got)
	}

	p.DropOneWay(faultproxy.ClientToServer)
	if err := c.Set(ctx, key, "b", time.Minute).Err(); err == nil {
		t.Fatal("SET succeeded although its request was dropped")
	}
	if got, _ := srv.Do("GET", key); got != "a" {
		t.Fatalf("a dropped request reached the server: %q", got)
	}

	p.DropOneWay(faultproxy.None)
	if err := c.Set(ctx, key, "c", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
}

func TestResetSendsRST(t *testing.T) {
	p := newProxy(t)
	raw, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	raw.Write([]byte("PING\r\n"))
	buf := make([]byte, 16)
	raw.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := raw.Read(buf); err != nil {
		t.Fatal(err)
	}
	p.Reset()
	raw.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = raw.Read(buf)
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read after Reset: %v, want ECONNRESET", err)
	}
	// The proxy keeps serving new connections.
	c := client(t, p, 2*time.Second)
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("after Reset: %v", err)
	}
}

func TestUpstreamDownRefuses(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	p, err := faultproxy.New(net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: time.Second})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err == nil {
		t.Fatal("PING through a proxy to a closed port succeeded")
	}
}

func TestCloseEndsConnections(t *testing.T) {
	p, err := faultproxy.New(srv.Addr)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(&redis.Options{Addr: p.Addr(), MaxRetries: -1, ReadTimeout: time.Second})
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	p.SetLatency(time.Hour) // a pending delayed chunk must not hold Close up
	go c.Ping(context.Background())
	time.Sleep(50 * time.Millisecond)
	done := make(chan struct{})
	go func() { p.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return")
	}
	if _, err := net.DialTimeout("tcp", p.Addr(), time.Second); err == nil {
		t.Fatal("the proxy still accepts after Close")
	}
}

func TestRefuseResetsNewConnections(t *testing.T) {
	p := newProxy(t)
	p.Refuse(true)
	c := client(t, p, time.Second)
	if err := c.Ping(context.Background()).Err(); err == nil {
		t.Fatal("PING through a refusing proxy succeeded")
	}
	p.Refuse(false)
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("after Refuse(false): %v", err)
	}
}
