package redistest

import (
	"fmt"
	"os/exec"
	"syscall"
	"time"
)

// Kill stops the server with SIGKILL and waits for it, keeping its
// directory (and any AOF in it) for Restart.
func (s *Server) Kill() {
	s.cmd.Process.Signal(syscall.SIGCONT)
	s.cmd.Process.Kill()
	<-s.done
}

// Restart starts the server again on the same port, directory and
// arguments after Kill, as a crashed server that comes back would: what it
// remembers is whatever its persistence settings kept.
func (s *Server) Restart() error {
	var err error
	for attempt := 0; attempt < 50; attempt++ {
		cmd := exec.Command(s.bin, s.args...)
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL, Setpgid: true}
		if err = cmd.Start(); err != nil {
			return fmt.Errorf("restart redis-server: %w", err)
		}
		s.cmd, s.done = cmd, make(chan struct{})
		done := s.done
		go func() { cmd.Wait(); close(done) }()
		if err = s.waitReady(10 * time.Second); err == nil {
			return nil
		}
		// The port may still be in TIME_WAIT from the killed process.
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("redis-server on port %d did not come back: %w", s.Port, err)
}
