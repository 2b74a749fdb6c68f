// Command scannames is the floor for `lockctl inspect locks`: it only lists
// the names of the keys matching a pattern, SCAN with COUNT 1000 through
// go-redis (the batch size lockctl uses), one name per line, and reads
// nothing else. Listing locks cannot be cheaper than finding them.
//
//	scannames [-url redis://127.0.0.1:6379/0] [-match 'lock:*'] [-count 1000]
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"os"

	"github.com/redis/go-redis/v9"
)

func main() { os.Exit(run()) }

// run lists the names and returns the exit status.
func run() int {
	url := flag.String("url", os.Getenv("LOCKCTL_URL"), "Redis URL")
	match := flag.String("match", "lock:*", "SCAN MATCH pattern")
	count := flag.Int64("count", 1000, "SCAN COUNT")
	flag.Parse()
	opts, err := redis.ParseURL(*url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scannames:", err)
		return 64
	}
	c := redis.NewClient(opts)
	defer c.Close()
	w := bufio.NewWriter(os.Stdout)
	ctx := context.Background()
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, *match, *count).Result()
		if err != nil {
			_ = w.Flush() // the names found so far; the scan's error is the one to report
			fmt.Fprintln(os.Stderr, "scannames:", err)
			return 69
		}
		for _, k := range keys {
			// A bufio.Writer keeps its first error, and Flush returns it.
			_, _ = w.WriteString(k)
			_ = w.WriteByte('\n')
		}
		if cursor = next; cursor == 0 {
			if err := w.Flush(); err != nil {
				fmt.Fprintln(os.Stderr, "scannames:", err)
				return 74
			}
			return 0
		}
	}
}
