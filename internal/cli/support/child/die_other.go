//go:build !linux

package child

import (
	"os/signal"
	"syscall"
)

// defaultAction is left to signal.Reset outside Linux.
func defaultAction(sig syscall.Signal) bool { return !signal.Ignored(sig) }
