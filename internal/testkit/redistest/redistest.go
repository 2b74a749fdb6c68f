// Package redistest starts private redis-server processes for tests: one per
// test package or script, on a free loopback port, with persistence off.
//
// Tests never mock Redis; when redis-server is not installed the caller gets
// an error that says how to install it, so a missing server fails the run
// instead of skipping it.
package redistest

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// InstallHint is the one command that makes the tests runnable.
const InstallHint = "redis-server is not installed: run `apt-get update && apt-get install -y redis-server` (Debian/Ubuntu) or `make test`, which installs it"

// Server is a running redis-server owned by the test process.
type Server struct {
	Addr string // host:port on loopback
	Port int
	URL  string // redis://[:password@]host:port/0
	Dir  string // working directory (removed by Stop)

	cmd      *exec.Cmd
	done     chan struct{}
	password string
	bin      string
	args     []string // the command line, for Restart
}

// Options configure a server. Args are extra redis-server arguments in
// command-line form, e.g. "--maxmemory-policy", "allkeys-lru".
type Options struct {
	Args     []string
	Password string // sets requirepass and puts the password in URL
	Port     int    // 0 picks a free port
}

// Binary returns the path of redis-server or an error carrying InstallHint.
func Binary() (string, error) {
	if p := os.Getenv("LOCKCTL_REDIS_SERVER"); p != "" {
		return p, nil
	}
	p, err := exec.LookPath("redis-server")
	if err != nil {
		return "", errors.New(InstallHint)
	}
	return p, nil
}

// Start launches a server and waits until it answers.
func Start(opts *Options) (*Server, error) {
	if opts == nil {
		opts = &Options{}
	}
	bin, err := Binary()
	if err != nil {
		return nil, err
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port := opts.Port
		if port == 0 {
			if port, err = FreePort(); err != nil {
				return nil, err
			}
		}
		s, err := start(bin, port, opts)
		if err == nil {
			return s, nil
		}
		lastErr = err
		if opts.Port != 0 {
			break
		}
	}
	return nil, lastErr
}

func start(bin string, port int, opts *Options) (*Server, error) {
	dir, err := os.MkdirTemp("", "lockctl-redis-")
	if err != nil {
		return nil, err
	}
	s := &Server{
		Addr:     net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Port:     port,
		Dir:      dir,
		password: opts.Password,
		bin:      bin,
	}
	if opts.Password != "" {
		s.URL = fmt.Sprintf("redis://:%s@%s/0", opts.Password, s.Addr)
	} else {
		s.URL = fmt.Sprintf("redis://%s/0", s.Addr)
	}
	s.args = []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--save", "",
		"--appendonly", "no",
		"--dir", dir,
		"--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"),
	}
	if opts.Password != "" {
		s.args = append(s.args, "--requirepass", opts.Password)
	}
	s.args = append(s.args, opts.Args...)
	if err := s.launch(s.args); err != nil {
		_ = os.RemoveAll(dir) // best effort: err, the start's, is the one to report
		return nil, err
	}
	return s, nil
}

// launch runs redis-server with args and waits until it answers.
func (s *Server) launch(args []string) error {
	cmd := exec.Command(s.bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start redis-server: %w", err)
	}
	s.cmd, s.done = cmd, make(chan struct{})
	done := s.done
	go func() { _ = cmd.Wait(); close(done) }() // the server is killed in the end: its status says nothing
	if err := s.waitReady(10 * time.Second); err != nil {
		log, _ := os.ReadFile(filepath.Join(s.Dir, "redis.log"))
		_ = cmd.Process.Kill() // it may have exited already; done tells when it is gone
		<-done
		return fmt.Errorf("redis-server on port %d did not start: %v\n%s", s.Port, err, tail(string(log), 20))
	}
	return nil
}

// Restart crashes the server (SIGKILL: nothing is flushed beyond what its
// fsync policy already wrote) and starts it again on the same port and in
// the same directory, with its original arguments followed by args. What
// survives is what the server's persistence kept: with the default
// arguments (no RDB, no AOF) nothing; after CONFIG SET appendonly yes and
// appendfsync always, pass "--appendonly", "yes" to load the AOF. A
// background AOF rewrite (the one CONFIG SET appendonly yes starts) is
// waited for first, since a crash during it leaves no AOF to load.
func (s *Server) Restart(args ...string) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		info, err := s.Do("INFO", "persistence")
		rewriting := strings.Contains(info, "aof_rewrite_in_progress:1") || strings.Contains(info, "aof_rewrite_scheduled:1")
		if err != nil || !rewriting {
			break
		}
		if time.Now().After(deadline) {
			return errors.New("restart: the AOF rewrite did not finish within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The server may have exited already; done tells when it is gone.
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	<-s.done
	return s.launch(append(append([]string{}, s.args...), args...))
}

func (s *Server) waitReady(limit time.Duration) error {
	deadline := time.Now().Add(limit)
	var lastErr error
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return errors.New("redis-server exited")
		default:
		}
		reply, err := s.Do("PING")
		if err == nil && (reply == "PONG" || strings.HasPrefix(reply, "NOAUTH")) {
			return nil
		}
		if err == nil {
			err = fmt.Errorf("unexpected reply %q", reply)
		}
		lastErr = err
		time.Sleep(10 * time.Millisecond)
	}
	return lastErr
}

// Do sends one command over a fresh connection (authenticating first when
// the server has a password) and returns the first line of the reply with
// the RESP type byte removed. It is meant for setup and probes, not for the
// code under test.
func (s *Server) Do(args ...string) (string, error) {
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(5 * time.Second)); err != nil {
		return "", err
	}
	r := bufio.NewReader(conn)
	if s.password != "" {
		if _, err := conn.Write(encode("AUTH", s.password)); err != nil {
			return "", err
		}
		if _, err := r.ReadString('\n'); err != nil {
			return "", err
		}
	}
	if _, err := conn.Write(encode(args...)); err != nil {
		return "", err
	}
	line, err := r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if line == "" {
		return "", errors.New("empty reply")
	}
	switch line[0] {
	case '$':
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io.ReadFull(r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	default:
		return line[1:], nil
	}
}

func encode(args ...string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(&b, "$%d\r\n%s\r\n", len(a), a)
	}
	return []byte(b.String())
}

// Pid is the server's process id.
func (s *Server) Pid() int { return s.cmd.Process.Pid }

// Signal sends sig to the server (SIGSTOP/SIGCONT simulate a paused server).
func (s *Server) Signal(sig syscall.Signal) error { return s.cmd.Process.Signal(sig) }

// Stop kills the server by pid, waits for it and removes its directory.
func (s *Server) Stop() {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	// The server may have exited already; done tells when it is gone.
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(5 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	_ = os.RemoveAll(s.Dir) // a temporary directory: a leftover harms nothing
}

// FreePort asks the kernel for a free loopback TCP port.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// RunMain starts one server for a test package, exports its URL in
// LOCKCTL_TEST_REDIS_URL, runs the tests and stops the server. A missing
// redis-server fails the run with InstallHint; it never skips.
//
//	func TestMain(m *testing.M) { redistest.Main(m, &srv) }
//
// Main wraps it for the common case.
func RunMain(m *testing.M, opts *Options, out **Server) int {
	s, err := Start(opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	defer s.Stop()
	if err := os.Setenv("LOCKCTL_TEST_REDIS_URL", s.URL); err != nil {
		fmt.Fprintln(os.Stderr, "FAIL:", err)
		return 1
	}
	if out != nil {
		*out = s
	}
	return m.Run()
}
