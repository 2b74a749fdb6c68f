package cmd_test

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/testkit/plant"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/inspect"
)

// cliTargets are where FuzzPlantedCLI plants data: the lock key, each
// auxiliary key, a fence-check record, a once record, a rate-limit key and
// the audit stream.
var cliTargets = []string{"lock", lockwire.KindFence, lockwire.KindSem, lockwire.KindSemVal, lockwire.KindQueue,
	lockwire.KindQueueHB, lockwire.KindChecked, "once", "limit", "audit"}

// FuzzPlantedCLI drives lockctl, in process, over foreign, corrupted, huge
// and wrong-type data at every key it reads. Whatever the data, the exit
// code is never 70: that code means a lockctl bug, and data someone else
// wrote is a condition of the environment.
func FuzzPlantedCLI(f *testing.F) {
	val := plant.LockValue
	plant.AddSeeds(f, len(cliTargets), []plant.Seed{
		{0, "foreign-uuid", false}, {0, val, false}, {0, "x", true}, {0, "abc", false},
		{0, "99999999999999999999:0", false}, {1, "state=done,exit=x,tk=inf,ts=nan", false},
		{1, "state=weird", false}, {2, "-inf=a,inf=b", false}, {3, "a,b", false}, {5, "f=v", false},
	})
	srv := redistest.StartTest(f, nil)
	f.Setenv("LOCKCTL_URL", srv.URL)
	f.Setenv("HOME", f.TempDir())
	f.Setenv("XDG_CONFIG_HOME", f.TempDir())
	for _, v := range []string{"LOCKCTL_CONFIG", "LOCKCTL_PREFIX", "REDIS_URL", "LOCKCTL_TOKEN", "LOCKCTL_KEY"} {
		f.Setenv(v, "")
	}
	c := srv.Client(f)
	f.Fuzz(func(t *testing.T, target, typ byte, payload string, huge bool) {
		ctx := redistest.Context(t)
		// A quarter of plant.Huge: twenty commands over 1 MB each take
		// longer than the fuzzer allows one input (the packages' own
		// targets read the full size).
		size := 0
		if huge {
			size = plant.Huge / 4
		}
		name := "f" + plant.Unique()
		key := "lock:" + name
		where := cliTargets[int(target)%len(cliTargets)]
		at := map[string]string{"lock": key, lockwire.KindChecked: lockwire.AuxKey(lockwire.KindChecked, name),
			"once": "once:" + name, "limit": "limit:" + name, "audit": inspect.AuditKey}[where]
		if at == "" {
			at = lockwire.AuxKey(where, key)
		}
		plant.At(ctx, t, c, at, typ, payload, size)
		defer c.Del(ctx, at, "limit:"+name)
		what := plant.Describe(typ, payload, at)
		lockctl := func(args ...string) (int, string) {
			t.Helper()
			io, _, out, errOut := ui.Test()
			code := cmd.MainArgs(args, io)
			if code == cmd.ExitInternal {
				t.Errorf("lockctl %s with %s: exit 70 (internal error) for data someone else wrote: %s",
					strings.Join(args, " "), what, plant.Abbrev(errOut.String()))
			}
			return code, strings.TrimSpace(out.String())
		}
		other := "0123456789abcdef0123456789abcdef"
		for _, mode := range [][]string{nil, {"--limit", "2"}, {"--fifo"}} {
			if code, token := lockctl(append([]string{"lock", name, "-n", "--ttl", "5s"}, mode...)...); code == 0 {
				lockctl("renew", name, "--token", token)
				lockctl("release", name, "--token", token)
			}
		}
		lockctl("renew", name, "--token", other)
		lockctl("release", name, "--token", other)
		lockctl("fence", "peek", name)
		lockctl("fence", "next", name)
		lockctl("fence", "check", name, "5")
		lockctl("ls")
		lockctl("ls", "-o", "json")
		lockctl("inspect", "lock", name)
		lockctl("inspect", "orphans")
		lockctl("inspect", "audit")
		lockctl("inspect", "force-release", name, "--token", other[:12], "--reason", "fuzz")
		for _, algo := range []string{"gcra", "sliding-log", "sliding-window", "token-bucket"} {
			// Each algorithm meets the planted data, not the last one's state.
			if where == "limit" {
				plant.At(ctx, t, c, at, typ, payload, size)
			} else {
				c.Del(ctx, "limit:"+name)
			}
			lockctl("limit", name, "--rate", "5/s", "--algo", algo)
		}
		lockctl("inspect", "once", name)
		lockctl("once", name, "--", "true")
	})
}
