// Command genman writes lockctl's man pages into the directory given as
// its argument: `make man` runs it into man/, and TestManPagesUpToDate
// fails when the committed pages drift from the command tree.
package main

import (
	"fmt"
	"os"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/cmd/manpage"
	"github.com/lockctl/lockctl/cmd/ui"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: genman DIR")
		os.Exit(2)
	}
	if err := os.MkdirAll(os.Args[1], 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	io, _, _, _ := ui.Test()
	if err := manpage.Write(cmd.NewRootCmd(cmd.NewFactory(io)), os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
