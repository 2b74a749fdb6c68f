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

func main() {
	url := flag.String("url", os.Getenv("LOCKCTL_URL"), "Redis URL")
	match := flag.String("match", "lock:*", "SCAN MATCH pattern")
	count := flag.Int64("count", 1000, "SCAN COUNT")
	flag.Parse()
	opts, err := redis.ParseURL(*url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "scannames:", err)
		os.Exit(64)
	}
	c := redis.NewClient(opts)
	defer c.Close()
	w := bufio.NewWriter(os.Stdout)
	defer w.Flush()
	ctx := context.Background()
	var cursor uint64
	for {
		keys, next, err := c.Scan(ctx, cursor, *match, *count).Result()
		if err != nil {
			w.Flush()
			fmt.Fprintln(os.Stderr, "scannames:", err)
			os.Exit(69)
		}
		for _, k := range keys {
			w.WriteString(k)
			w.WriteByte('\n')
		}
		if cursor = next; cursor == 0 {
			return
		}
	}
}
