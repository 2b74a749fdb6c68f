package lock

import (
	"regexp"
	"sort"
	"sync"
)

// scriptCall is compiled on first use: only doctor asks.
var scriptCall = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`redis\.p?call\('([A-Z]+)'`) })

// ScriptCommands lists, sorted, the Redis commands that the lock scripts
// call on the server, which the connected user must be allowed to run
// besides EVALSHA and EVAL themselves (an ACL applies inside scripts too).
func ScriptCommands() []string {
	seen := map[string]bool{}
	for _, src := range []string{fenceLua, holderLua, acquireLua, renewLua, releaseLua, inspectLua, checkLua, fenceNextLua,
		auxLua, semAcquireLua, semRenewLua, semReleaseLua, fifoAcquireLua, fifoLeaveLua, raiseLua, reenterLua, wakeLua} {
		for _, m := range scriptCall().FindAllStringSubmatch(src, -1) {
			seen[m[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}
