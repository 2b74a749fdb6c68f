package limit_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/redis/go-redis/v9"
)

// A limiter admitting 3 calls a minute per key: the fourth call in a row is
// refused, with the time after which it would be admitted.
func ExampleNew() {
	ctx := context.Background()
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer client.Close()

	limiter, err := limit.New(client, limit.Rate{Limit: 3, Period: time.Minute}, nil)
	if err != nil {
		fmt.Println("new:", err)
		return
	}
	var b [4]byte
	rand.Read(b[:])
	key := "example.api." + hex.EncodeToString(b[:]) // one key per run

	for i := 1; i <= 4; i++ {
		res, err := limiter.Allow(ctx, key, 1)
		if err != nil {
			fmt.Println("allow:", err)
			return
		}
		if res.Allowed {
			fmt.Printf("call %d: allowed, %d remaining\n", i, res.Remaining)
		} else {
			fmt.Printf("call %d: denied, limited: %v, retry later: %v\n",
				i, errors.Is(res.Err(), limit.ErrLimited), res.RetryAfter > 0)
		}
	}
	// Output:
	// call 1: allowed, 2 remaining
	// call 2: allowed, 1 remaining
	// call 3: allowed, 0 remaining
	// call 4: denied, limited: true, retry later: true
}
