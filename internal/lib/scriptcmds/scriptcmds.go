// Package scriptcmds reads which Redis commands a Lua script calls, so that
// the commands a user must be allowed (lockctl doctor's ACL check and its
// hint) come from the scripts themselves rather than from a list kept by
// hand beside them.
package scriptcmds

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// Uncovered reads every script in dir (*.lua, a new one included) and
// says, one line each, which command a script calls that is not in listed:
// a package's tests check that the list doctor is built from leaves none
// out. It also returns every command the scripts call.
func Uncovered(dir string, listed []string) (missing, all []string, err error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.lua"))
	if err != nil {
		return nil, nil, err
	}
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("no scripts in %s", dir)
	}
	srcs := make([]string, 0, len(files))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, nil, err
		}
		srcs = append(srcs, string(b))
		for _, c := range Calls(string(b)) {
			if !slices.Contains(listed, c) {
				missing = append(missing, fmt.Sprintf("%s calls %s, which is not listed", filepath.Base(f), c))
			}
		}
	}
	return missing, Calls(srcs...), nil
}
