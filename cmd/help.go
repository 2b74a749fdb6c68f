package cmd

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// unsetZeroDurations hides pflag's "(default 0s)" on duration flags: in
// lockctl a zero duration default means "unset" (-w waits until acquired,
// --renew-every is ttl/3, renew --ttl keeps the lease's own), and the
// usage text says what that is.
func unsetZeroDurations(root *cobra.Command) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		fix := func(fl *pflag.Flag) {
			if _, ok := fl.Value.(*durationValue); ok && fl.DefValue == "0s" {
				fl.DefValue = ""
			}
		}
		c.LocalNonPersistentFlags().VisitAll(fix)
		c.PersistentFlags().VisitAll(fix)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}
