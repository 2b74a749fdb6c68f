package chaos_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// naiveEnv turns the test binary into a naive holder, the stand-in of the
// unprotected variants of scenario 15: "run" takes a plain SET NX PX lock,
// runs CMD and keeps the key alive with GET + PEXPIRE, writing a warning to
// its stderr when a renewal fails; "lock" takes the lock and writes its
// token to stdout. It is a Go program that does not handle SIGPIPE, as
// lockctl did not before: a write to a stdout or stderr pipe whose reader
// has gone kills it.
const naiveEnv = "CHAOS_NAIVE"

// naiveMain is a naive holder's body. Its arguments are lockctl's:
// run|lock NAME [--url U] [--ttl D] [-w D] ... [-- CMD...]. It returns the
// exit status.
func naiveMain() int {
	args := os.Args[1:]
	if len(args) < 2 {
		fmt.Fprintln(os.Stderr, "naive: want run|lock NAME")
		return 64
	}
	verb, name := args[0], args[1]
	url, ttl, wait := "", time.Second, time.Duration(0)
	var cmdArgs []string
	for i := 2; i < len(args); i++ {
		switch args[i] {
		case "--url":
			i++
			url = args[i]
		case "--ttl":
			i++
			ttl, _ = time.ParseDuration(args[i])
		case "-w":
			i++
			wait, _ = time.ParseDuration(args[i])
		case "--":
			cmdArgs = args[i+1:]
			i = len(args)
		}
	}
	opt, err := redis.ParseURL(url)
	if err != nil {
		fmt.Fprintln(os.Stderr, "naive:", err)
		return 64
	}
	opt.MaxRetries = -1
	opt.ReadTimeout, opt.WriteTimeout, opt.DialTimeout = ttl/3, ttl/3, ttl/3
	c := redis.NewClient(opt)
	ctx := context.Background()
	key := "lock:" + name
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	deadline := time.Now().Add(wait)
	for {
		ok, err := c.SetNX(ctx, key, token, ttl).Result()
		if err == nil && ok {
			break
		}
		if !time.Now().Before(deadline) {
			return 75
		}
		time.Sleep(20 * time.Millisecond)
	}
	if verb == "lock" {
		// The token goes out once; whether anyone got it is not asked.
		fmt.Println(token)
		return 0
	}
	// A fence taken by hand, as a careful client without lockctl would.
	fence, err := c.Incr(ctx, "chaos:naive:fence:"+name).Result()
	if err != nil {
		return 69
	}
	child := exec.Command(cmdArgs[0], cmdArgs[1:]...)
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, naiveEnv+"=") {
			env = append(env, kv)
		}
	}
	env = append(env, "LOCKCTL_FENCE="+strconv.FormatInt(fence, 10), "LOCKCTL_TOKEN="+token)
	child.Env = env
	child.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := child.Start(); err != nil {
		return 70
	}
	done := make(chan error, 1)
	go func() { done <- child.Wait() }()
	tick := time.NewTicker(ttl / 3)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if v, _ := c.Get(ctx, key).Result(); v == token {
				c.Del(ctx, key)
			}
			return exitOf(err)
		case <-tick.C:
			v, err := c.Get(ctx, key).Result()
			if errors.Is(err, redis.Nil) {
				v, err = "", nil
			}
			if err == nil && v == token {
				err = c.PExpire(ctx, key, ttl).Err()
			}
			switch {
			case err != nil:
				// Go's runtime ends the program by SIGPIPE here when
				// stderr is a pipe whose reader has gone.
				fmt.Fprintf(os.Stderr, "naive: warning: renewal failed: %v\n", err)
			case v != token:
				// The command may be gone already.
				_ = syscall.Kill(-child.Process.Pid, syscall.SIGTERM)
				<-done //nolint:errcheck // its status is not the holder's
				return 76
			}
		}
	}
}
