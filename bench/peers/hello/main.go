// Command hello is the start-up floor for `lockctl version`: a Go program
// that prints one line, built the same way (CGO_ENABLED=0, static).
package main

import "os"

func main() {
	if _, err := os.Stdout.WriteString("hello\n"); err != nil {
		os.Exit(1)
	}
}
