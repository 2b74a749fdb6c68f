package redistest

import "syscall"

// Kill stops the server with SIGKILL and waits for it, keeping its
// directory (and any AOF in it) for Restart.
func (s *Server) Kill() {
	// The server may have exited already; done tells when it is gone.
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Kill()
	<-s.done
}
