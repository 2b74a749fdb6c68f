// Command lockctl makes Redis locks, fencing tokens, rate limits and
// idempotent runs safe to use from shells, cron and CI.
package main

import (
	"os"

	"github.com/lockctl/lockctl/cmd"
)

func main() { os.Exit(cmd.Main()) }
