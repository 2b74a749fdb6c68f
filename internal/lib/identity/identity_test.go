package identity_test

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/lib/identity"
)

// OwnerWithPID names another process (lock's caller) as Owner names this
// one: the same user@host.
func TestOwnerWithPID(t *testing.T) {
	own := identity.Owner()
	if want := identity.UserHost() + ":" + strconv.Itoa(os.Getpid()); own != want {
		t.Errorf("Owner() = %q, want %q", own, want)
	}
	if got, want := identity.OwnerWithPID(4242), identity.UserHost()+":4242"; got != want {
		t.Errorf("OwnerWithPID(4242) = %q, want %q", got, want)
	}
	if !regexp.MustCompile(`^[^@:]+@[^:]+:[0-9]+$`).MatchString(own) {
		t.Errorf("Owner() = %q, want user@host:pid", own)
	}
}

func TestToken(t *testing.T) {
	a, b := identity.Token(), identity.Token()
	if !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(a) || a == b {
		t.Errorf("Token() = %q, then %q: want two different 32-hex-digit tokens", a, b)
	}
}

// $USER names the user, else $LOGNAME, else the uid's login name (or the
// uid). Each case runs in a child, as UserHost reads the environment once.
func TestUserHost(t *testing.T) {
	if os.Getenv("IDENTITY_TEST_CHILD") != "" {
		fmt.Println("userhost=" + identity.UserHost())
		return
	}
	for _, tc := range []struct {
		env  []string
		user string
	}{
		{[]string{"USER=alice", "LOGNAME=bob"}, "alice"},
		{[]string{"USER=", "LOGNAME=bob"}, "bob"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestUserHost$", "-test.count=1")
		cmd.Env = append(append(os.Environ(), "IDENTITY_TEST_CHILD=1"), tc.env...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%v: %v\n%s", tc.env, err, out)
		}
		if !strings.Contains(string(out), "userhost="+tc.user+"@") {
			t.Errorf("%v: got %s, want user %s", tc.env, out, tc.user)
		}
	}
}

func TestCIJobURL(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{nil, ""},
		{map[string]string{"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "o/r", "GITHUB_RUN_ID": "7", "CI_JOB_URL": "x"},
			"https://github.com/o/r/actions/runs/7"},
		{map[string]string{"GITHUB_SERVER_URL": "https://github.com", "GITHUB_RUN_ID": "7", "CI_JOB_URL": "https://gitlab/job/1"},
			"https://gitlab/job/1"},
		{map[string]string{"BUILDKITE_BUILD_URL": "https://bk/b/2", "BUILD_URL": "https://jenkins/3"}, "https://bk/b/2"},
		{map[string]string{"BUILD_URL": "https://jenkins/3"}, "https://jenkins/3"},
	} {
		if got := identity.CIJobURL(func(k string) string { return tc.env[k] }); got != tc.want {
			t.Errorf("CIJobURL(%v) = %q, want %q", tc.env, got, tc.want)
		}
	}
}
