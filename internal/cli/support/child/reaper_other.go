//go:build !linux

package child

// becomeSubreaper: only Linux has subreapers; orphans go to init, which
// reaps them.
func becomeSubreaper() {}
