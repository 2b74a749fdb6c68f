package once_test

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/lockctl/lockctl/pkg/once"
)

// A lock and a once claim taken without an owner by one process record the
// same owner, user@host:pid of that process, and the audit's operator is
// its user@host, also when $USER is not the login name of the uid (sudo
// -E, su, a container's environment). The check runs in a child process
// with such a $USER, so that nothing this test binary did before has read
// the environment already.
func TestDefaultOwnerAgreesWithLock(t *testing.T) {
	const user = "lockctl-owner-test"
	if os.Getenv("LOCKCTL_OWNER_TEST_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDefaultOwnerAgreesWithLock$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), "LOCKCTL_OWNER_TEST_CHILD=1", "USER="+user)
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: TestDefaultOwnerAgreesWithLock") {
			t.Fatalf("child with USER=%s: %v\n%s", user, err, out)
		}
		return
	}
	ctx := redistest.Context(t)
	c := srv.Client(t)
	key := redistest.UniqueKey(t)
	lease, err := lock.New(c, nil).Acquire(ctx, key, 10*time.Second, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = lease.Release(ctx) }()
	claim, err := once.New(c, nil).Claim(ctx, key, nil)
	if err != nil {
		t.Fatal(err)
	}
	pid := ":" + strconv.Itoa(os.Getpid())
	if lease.Owner() != claim.Owner || lease.Owner() != once.DefaultOwner() {
		t.Errorf("one process, three owners: lock %q, once claim %q, once.DefaultOwner %q", lease.Owner(), claim.Owner, once.DefaultOwner())
	}
	if want := identity.UserHost() + pid; lease.Owner() != want || !strings.HasPrefix(lease.Owner(), user+"@") {
		t.Errorf("lock owner %q, want %q (the audit operator, identity.UserHost, and this pid, user %s)", lease.Owner(), want, user)
	}
}
