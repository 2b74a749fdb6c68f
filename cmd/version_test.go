package cmd

import (
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionOf: `go install …@v1.2.3` reports the module version; a build
// from a checkout reports its commit, the commit's time and local changes
// (from the build info, or make build's -X values where Go could not
// stamp a worktree).
func TestVersionOf(t *testing.T) {
	installed := &debug.BuildInfo{Main: debug.Module{Path: "github.com/lockctl/lockctl", Version: "v1.2.3"}}
	if v := versionOf(installed, true); v.Version != "v1.2.3" || v.Commit != "" || !strings.HasPrefix(v.String(), "lockctl v1.2.3 (go") {
		t.Errorf("go install @v1.2.3: %+v %q", v, v.String())
	}
	checkout := &debug.BuildInfo{Main: debug.Module{Version: "v0.0.0-20261201090236-d69b06136cb2+dirty"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "d69b06136cb2fb535e00092dd747cfdc7a422e73"},
		{Key: "vcs.time", Value: "2026-12-01T09:02:36Z"}, {Key: "vcs.modified", Value: "true"}}}
	v := versionOf(checkout, true)
	if v.Commit != "d69b06136cb2fb535e00092dd747cfdc7a422e73" || v.CommitTime != "2026-12-01T09:02:36Z" || !v.Modified ||
		!strings.Contains(v.String(), "(commit d69b06136cb2, 2026-12-01T09:02:36Z, modified)") {
		t.Errorf("checkout: %+v %q", v, v.String())
	}
	Commit, CommitTime = "0123456789abcdef0123", "2026-11-30T10:00:00Z"
	defer func() { Commit, CommitTime = "", "" }()
	worktree := &debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}
	v = versionOf(worktree, true)
	if v.Version != "devel" || !strings.Contains(v.String(), "lockctl devel (commit 0123456789ab, 2026-11-30T10:00:00Z)") {
		t.Errorf("worktree build: %+v %q", v, v.String())
	}
}
