package luascript_test

import (
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/lib/luascript"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"
)

var srv *redistest.Server

func TestMain(m *testing.M) { redistest.Main(m, &srv) }

// incr writes, so a call that ran twice or not at all shows in the count.
var incr = luascript.New(`return redis.call('INCR', KEYS[1])`)

// rejected is how often the server refused cmd (an ACL denial or an
// unknown command) since its stats were reset.
func rejected(t *testing.T, cmd string) int {
	t.Helper()
	info, err := srv.Do("INFO", "commandstats")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`cmdstat_` + cmd + `:[^\r\n]*rejected_calls=(\d+)`).FindStringSubmatch(info)
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// userClient is a client of a fresh ACL user with every command but deny.
func userClient(t *testing.T, user string, deny ...string) *redis.Client {
	t.Helper()
	args := []string{"ACL", "SETUSER", user, "reset", "on", ">pw", "~*", "&*", "+@all"}
	for _, d := range deny {
		args = append(args, "-"+d)
	}
	if _, err := srv.Do(args...); err != nil {
		t.Fatal(err)
	}
	for _, c := range [][]string{{"SCRIPT", "FLUSH"}, {"CONFIG", "RESETSTAT"}} {
		if _, err := srv.Do(c...); err != nil {
			t.Fatal(err)
		}
	}
	return redistest.ClientFor(t, strings.Replace(srv.URL, "redis://", "redis://"+user+":pw@", 1))
}

func runTwice(t *testing.T, c *redis.Client, key string) {
	t.Helper()
	ctx := context.Background()
	for want := int64(1); want <= 2; want++ {
		n, err := incr.Run(ctx, c, []string{key}).Int64()
		if err != nil || n != want {
			t.Fatalf("run %d: %d, %v; want %d", want, n, err, want)
		}
	}
}

func TestEvalShaRefused(t *testing.T) {
	c := userClient(t, "nosha", "evalsha")
	runTwice(t, c, t.Name())
	// The refusal is remembered: the second call went straight to EVAL.
	if n := rejected(t, "evalsha"); n != 1 {
		t.Fatalf("EVALSHA refused %d times, want 1 (the first call only)", n)
	}
}

func TestEvalRefused(t *testing.T) {
	c := userClient(t, "noeval", "eval")
	runTwice(t, c, t.Name())
	if n := rejected(t, "eval"); n != 1 {
		t.Fatalf("EVAL refused %d times, want 1 (the first call only)", n)
	}
}

func TestBothRefused(t *testing.T) {
	for _, tc := range []struct {
		user string
		deny []string
	}{
		{"neither", []string{"eval", "evalsha"}},
		// EVALSHA allowed, but the script cannot be loaded.
		{"noload", []string{"eval", "script|load"}},
	} {
		t.Run(tc.user, func(t *testing.T) {
			c := userClient(t, tc.user, tc.deny...)
			_, err := incr.Run(context.Background(), c, []string{t.Name()}).Result()
			if !redis.HasErrorPrefix(err, "NOPERM") {
				t.Fatalf("err = %v, want a NOPERM refusal", err)
			}
			if n := srv.Int(t, "EXISTS", t.Name()); n != 0 {
				t.Fatal("the script ran although the call failed")
			}
		})
	}
}
