package once_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/lockctl/lockctl/pkg/once"
	"github.com/redis/go-redis/v9"
)

// Run a job once per key: the second call does not run it again, and gets
// the recorded outcome of the first instead.
func ExampleStore_Do() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer client.Close()
	store := once.New(client, nil)

	var b [4]byte
	rand.Read(b[:])
	key := "example.invoice-2024-06." + hex.EncodeToString(b[:]) // one key per run

	job := func(ctx context.Context) int {
		fmt.Println("sending the invoice")
		return 0 // the exit code recorded
	}

	rec, err := store.Do(ctx, key, nil, job)
	if err != nil {
		fmt.Println("do:", err)
		return
	}
	fmt.Println("first call:", rec.State, "exit", rec.ExitCode)

	rec, err = store.Do(ctx, key, nil, job)
	fmt.Println("second call already done:", errors.Is(err, once.ErrDone))
	fmt.Println("recorded:", rec.State, "exit", rec.ExitCode, "attempts", rec.Attempts)
	// Output:
	// sending the invoice
	// first call: done exit 0
	// second call already done: true
	// recorded: done exit 0 attempts 1
}
