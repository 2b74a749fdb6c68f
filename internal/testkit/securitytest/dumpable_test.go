package securitytest

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

// readParent is CMD's attack: read the parent's environment from /proc,
// as any process of the same user may from a dumpable process.
const readParent = `if tr '\0' '\n' < /proc/$PPID/environ 2>/dev/null | grep -qx 'LOCKCTL_PASSWORD=Dump4bleSecret'; then echo LEAKED; else echo SAFE; fi`

// readAny is CMD's wider attack: read the environment of every process it
// may, lockctl's helpers (the guard, the signal witness) included.
const readAny = `for f in /proc/[0-9]*/environ; do if tr '\0' '\n' < "$f" 2>/dev/null | grep -qx 'LOCKCTL_PASSWORD=Dump4bleSecret'; then echo "LEAKED $f"; exit; fi; done; echo SAFE`

// TestCMDCannotReadLockctlsEnviron: CMD runs as the same user as lockctl,
// yet cannot read the password from lockctl's /proc/<pid>/environ. The
// control shows the same read succeeding against a process that does not
// protect itself. Root reads any process's environ: when the test runs as
// root, lockctl and CMD run as nobody.
func TestCMDCannotReadLockctlsEnviron(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("PR_SET_DUMPABLE is Linux's")
	}
	s := redistest.StartTest(t, &redistest.Options{Password: "Dump4bleSecret"})
	bin := lockctlBinary(t)
	cred := unprivileged(t)
	env := []string{"PATH=/usr/bin:/bin", "HOME=/", "LOCKCTL_PASSWORD=Dump4bleSecret",
		"LOCKCTL_URL=redis://" + s.Addr + "/0", "LOCKCTL_CONFIG=/dev/null"}

	run := func(name string, argv ...string) string {
		t.Helper()
		c := exec.Command(argv[0], argv[1:]...)
		c.Env, c.Dir = env, "/"
		c.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
		var out, errOut bytes.Buffer
		c.Stdout, c.Stderr = &out, &errOut
		if err := c.Run(); err != nil {
			t.Fatalf("%s: %v; stdout %q, stderr %q", name, err, out.String(), errOut.String())
		}
		return strings.TrimSpace(out.String())
	}

	// The control: a plain process of the same user with the password
	// in its environment; its child reads it.
	if got := run("control", "/bin/sh", "-c", "sh -c \"$0\"", readParent); got != "LEAKED" {
		t.Fatalf("control: the child of a plain process printed %q, want LEAKED: this system hides environ by other means, the test proves nothing", got)
	}
	if got := run("control", "/bin/sh", "-c", "sh -c \"$0\"", readAny); !strings.HasPrefix(got, "LEAKED") {
		t.Fatalf("control: the child of a plain process scanning /proc printed %q, want LEAKED", got)
	}
	// lockctl run (with its guard), once and limit: CMD gets nothing.
	for _, argv := range [][]string{
		{bin, "run", "dump", "--", "/bin/sh", "-c", readParent},
		{bin, "run", "dump", "-c", readParent},
		{bin, "once", "dump", "--", "/bin/sh", "-c", readParent},
		{bin, "limit", "dump", "--rate", "10/s", "--", "/bin/sh", "-c", readParent},
		// every process CMD may read: lockctl, its guard and its
		// signal witness hold no password CMD can see
		{bin, "run", "dump", "--", "/bin/sh", "-c", readAny},
		{bin, "once", "dump-any", "--", "/bin/sh", "-c", readAny},
		{bin, "limit", "dump", "--rate", "10/s", "--", "/bin/sh", "-c", readAny},
	} {
		if got := run(strings.Join(argv[1:3], " "), argv...); got != "SAFE" {
			t.Errorf("%s: CMD printed %q, want SAFE: it read the password from lockctl's /proc/<pid>/environ", strings.Join(argv[1:], " "), got)
		}
	}
}

// lockctlBinary copies this test binary (which runs lockctl when called
// so, see TestMain) where any user may run it.
func lockctlBinary(t *testing.T) string {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "lockctl-dumpable-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "lockctl")
	in, err := os.Open(self)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return bin
}

// unprivileged is the user the test's processes run as: nobody when the
// test runs as root (who may read any process's environ), else nil (the
// test's own user).
func unprivileged(t *testing.T) *syscall.Credential {
	if os.Geteuid() != 0 {
		return nil
	}
	return &syscall.Credential{Uid: 65534, Gid: 65534, NoSetGroups: false, Groups: []uint32{}}
}
