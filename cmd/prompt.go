package cmd

import (
	"bufio"
	"context"
	"io"
	"strings"
)

// confirm reads a [y/N] answer from in. ^C (or SIGTERM, SIGHUP) ends the
// wait for it at once, as at apt's and rm -i's prompts, with the signal's
// error (exit 128+N) rather than after the next Enter; a closed stdin
// answers no.
func confirm(ctx context.Context, in io.Reader, errOut io.Writer) (bool, error) {
	answer := make(chan string, 1)
	go func() {
		// Left blocked on stdin when ctx ends first; lockctl exits then.
		line, _ := bufio.NewReader(in).ReadString('\n')
		answer <- line
	}()
	select {
	case line := <-answer:
		a := strings.ToLower(strings.TrimSpace(line))
		return a == "y" || a == "yes", nil
	case <-ctx.Done():
		// The shell's next prompt starts on a line of its own.
		_, _ = io.WriteString(errOut, "\n")
		if cause := context.Cause(ctx); cause != nil {
			return false, cause
		}
		return false, ctx.Err()
	}
}
