//go:build !linux

package cmd

// hideSecrets: only Linux has PR_SET_DUMPABLE; elsewhere the environment's
// own protections apply.
func hideSecrets() {}
