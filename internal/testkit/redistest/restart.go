package redistest

import "syscall"

// Kill stops the server with SIGKILL and waits for it, keeping its
// directory (and any AOF in it) for Restart.
func (s *Server) Kill() {
	s.cmd.Process.Signal(syscall.SIGCONT)
	s.cmd.Process.Kill()
	<-s.done
}
