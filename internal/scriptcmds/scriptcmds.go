// Package scriptcmds reads which Redis commands a Lua script calls, so that
// the commands a user must be allowed (lockctl doctor's ACL check and its
// hint) come from the scripts themselves rather than from a list kept by
// hand beside them.
package scriptcmds

import (
	"regexp"
	"sort"
	"sync"
)

var call = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`redis\.p?call\('([A-Z]+)'`) })

// Calls lists, sorted and once each, the commands the scripts call with
// redis.call or redis.pcall.
func Calls(scripts ...string) []string {
	seen := map[string]bool{}
	for _, src := range scripts {
		for _, m := range call().FindAllStringSubmatch(src, -1) {
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
