package securitytest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/internal/testkit/scripttest"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary double as lockctl (as main_test.go does),
// so that scripts and tests run it as a separate process.
func TestMain(m *testing.M) { scripttest.Main(m, cmd.Main) }

// TestSecurityScripts runs testdata/security_*.txtar, each against its own
// redis-server, with scripttest's commands and the attackers below.
func TestSecurityScripts(t *testing.T) {
	testscript.Run(t, scripttest.Params("testdata", map[string]func(ts *testscript.TestScript, neg bool, args []string){
		"impostor": cmdImpostor,
		"listener": cmdListener,
		"heard":    cmdHeard,
	}))
}

// impostor [-nohello] [-nil]: a server on a free loopback port that
// answers +OK (with -nil, a nil bulk string) to every command, as a
// squatter on a Redis port or a careless proxy might; it exports
// IMPOSTOR_ADDR. With -nohello it refuses HELLO as a Redis before 6 does,
// so that the client goes on to send its commands. A fault to inject, not
// a model of Redis.
func cmdImpostor(ts *testscript.TestScript, neg bool, args []string) {
	nohello, answer := false, "+OK\r\n"
	for _, a := range args {
		switch a {
		case "-nohello":
			nohello = true
		case "-nil":
			answer = "$-1\r\n"
		default:
			ts.Fatalf("usage: impostor [-nohello] [-nil]")
		}
	}
	if neg {
		ts.Fatalf("usage: impostor [-nohello] [-nil]")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	ts.Defer(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					name, err := skipCommand(r)
					if err != nil {
						return
					}
					reply := answer
					if nohello && strings.EqualFold(name, "hello") {
						reply = "-ERR unknown command 'HELLO'\r\n"
					}
					if _, err := io.WriteString(c, reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	ts.Setenv("IMPOSTOR_ADDR", ln.Addr().String())
}

// skipCommand reads one command (a RESP array of bulk strings, or an
// inline command line) and returns its name.
func skipCommand(r *bufio.Reader) (string, error) {
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	if !strings.HasPrefix(line, "*") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		return name, nil
	}
	var n int
	if _, err := fmt.Sscanf(line, "*%d", &n); err != nil {
		return "", err
	}
	var name string
	for i := 0; i < n; i++ {
		hdr, err := r.ReadString('\n')
		if err != nil {
			return "", err
		}
		var size int
		if _, err := fmt.Sscanf(hdr, "$%d", &size); err != nil {
			return "", err
		}
		b := make([]byte, size+2)
		if _, err := io.ReadFull(r, b); err != nil {
			return "", err
		}
		if i == 0 {
			name = string(b[:size])
		}
	}
	return name, nil
}

// listener: a server on a free loopback port that records what anyone
// sends it and then hangs up; it exports LISTEN_PORT. `heard` asserts that
// someone connected (and, given a regexp, that what was sent matches it);
// `! heard` that nobody connected.
type listener struct {
	mu    sync.Mutex
	conns int
	got   strings.Builder
}

var (
	listenersMu sync.Mutex
	listeners   = map[*testscript.TestScript]*listener{}
)

func cmdListener(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 0 {
		ts.Fatalf("usage: listener")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	ts.Check(err)
	l := &listener{}
	listenersMu.Lock()
	listeners[ts] = l
	listenersMu.Unlock()
	ts.Defer(func() {
		ln.Close()
		listenersMu.Lock()
		delete(listeners, ts)
		listenersMu.Unlock()
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			// Recorded before the hang-up the client sees: once the
			// client has exited, what it sent is here.
			buf := make([]byte, 4096)
			n, _ := c.Read(buf)
			l.mu.Lock()
			l.conns++
			l.got.Write(buf[:n])
			l.mu.Unlock()
			c.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	ts.Setenv("LISTEN_PORT", port)
}

func cmdHeard(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) > 1 {
		ts.Fatalf("usage: heard [REGEXP]")
	}
	listenersMu.Lock()
	l := listeners[ts]
	listenersMu.Unlock()
	if l == nil {
		ts.Fatalf("heard: no listener")
	}
	l.mu.Lock()
	conns, got := l.conns, l.got.String()
	l.mu.Unlock()
	ts.Logf("listener: %d connection(s), received %q", conns, got)
	heard := conns > 0
	if heard && len(args) == 1 {
		heard = regexp.MustCompile(args[0]).MatchString(got)
	}
	switch {
	case neg && heard:
		ts.Fatalf("the listener was reached")
	case !neg && !heard:
		ts.Fatalf("the listener did not hear that")
	}
}
