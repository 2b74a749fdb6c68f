package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run runs name with args in dir and returns its combined output; a failure
// fails the test with that output.
func run(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	c := exec.Command(name, args...)
	c.Dir = dir
	c.Env = append(os.Environ(), env...)
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestMakeInstall: `make install` with PREFIX and DESTDIR puts the binary,
// every man page and the three completions where their tools look, making
// the directories a fresh system lacks (man1/ on Debian 12).
func TestMakeInstall(t *testing.T) {
	dest := t.TempDir()
	run(t, ".", nil, "make", "install", "DESTDIR="+dest)
	usr := filepath.Join(dest, "usr", "local")
	bin := filepath.Join(usr, "bin", "lockctl")
	if out := run(t, ".", nil, bin, "version"); !strings.HasPrefix(out, "lockctl ") {
		t.Errorf("%s version printed %q", bin, out)
	}
	pages, _ := filepath.Glob("man/*.1")
	if len(pages) == 0 {
		t.Fatal("no man pages in man/")
	}
	for _, p := range pages {
		want, _ := os.ReadFile(p)
		got, err := os.ReadFile(filepath.Join(usr, "share", "man", "man1", filepath.Base(p)))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("man page %s not installed as it is in the tree: %v", filepath.Base(p), err)
		}
	}
	for _, f := range []struct{ src, dst string }{
		{"completions/lockctl.bash", "share/bash-completion/completions/lockctl"},
		{"completions/_lockctl", "share/zsh/site-functions/_lockctl"},
		{"completions/lockctl.fish", "share/fish/vendor_completions.d/lockctl.fish"},
	} {
		want, _ := os.ReadFile(f.src)
		got, err := os.ReadFile(filepath.Join(usr, f.dst))
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s not installed as %s: %v", f.src, f.dst, err)
		}
	}
	// man finds the page in the installed tree by name.
	if out := run(t, ".", nil, "man", "-M", filepath.Join(usr, "share", "man"), "-w", "lockctl-run"); !strings.Contains(out, "man1/lockctl-run.1") {
		t.Errorf("man -w lockctl-run: %q", out)
	}

	// Another PREFIX moves everything; and once bin/lockctl is built, the
	// install needs no Go (sudo's PATH seldom has it).
	dest2 := t.TempDir()
	run(t, ".", []string{"PATH=/usr/bin:/bin"}, "make", "install", "DESTDIR="+dest2, "PREFIX=/opt/lockctl")
	for _, p := range []string{"bin/lockctl", "share/man/man1/lockctl.1", "share/bash-completion/completions/lockctl"} {
		if _, err := os.Stat(filepath.Join(dest2, "opt", "lockctl", p)); err != nil {
			t.Errorf("PREFIX=/opt/lockctl: %v", err)
		}
	}
}

// TestDebPackage builds the Debian package, installs it into this system
// with dpkg -i, checks the binary, a man page and the bash completion as a
// user of the package would, and removes it again. It needs root, as dpkg
// -i does (CI runs as root), and bash-completion and man-db
// (scripts/ensure-tools.sh).
func TestDebPackage(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Fatal("installing the package needs root (dpkg -i): run the tests as root, as CI does")
	}
	version := strings.TrimSpace(run(t, ".", nil, "./scripts/deb-version.sh"))
	arch := strings.TrimSpace(run(t, ".", nil, "dpkg", "--print-architecture"))
	deb := filepath.Join("dist", "lockctl_"+version+"_"+arch+".deb")
	if err := os.Remove(deb); err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	run(t, ".", nil, "make", "deb")
	if _, err := os.Stat(deb); err != nil {
		t.Fatalf("make deb did not write %s: %v", deb, err)
	}
	contents := run(t, ".", nil, "dpkg-deb", "-c", deb)
	for _, want := range []string{
		"./usr/bin/lockctl",
		"./usr/share/man/man1/lockctl-run.1.gz",
		"./usr/share/bash-completion/completions/lockctl",
		"./usr/share/zsh/vendor-completions/_lockctl",
		"./usr/share/fish/vendor_completions.d/lockctl.fish",
		"./usr/share/doc/lockctl/copyright",
	} {
		if !strings.Contains(contents, want+"\n") {
			t.Errorf("%s lacks %s:\n%s", deb, want, contents)
		}
	}

	t.Cleanup(func() {
		if out, err := exec.Command("dpkg", "-r", "lockctl").CombinedOutput(); err != nil {
			t.Errorf("dpkg -r lockctl: %v\n%s", err, out)
		}
		if _, err := os.Stat("/usr/bin/lockctl"); err == nil {
			t.Error("/usr/bin/lockctl is still there after dpkg -r")
		}
	})
	run(t, ".", nil, "dpkg", "-i", deb)

	if out := run(t, "/", nil, "/usr/bin/lockctl", "version"); !strings.Contains(out, "lockctl v"+version+" ") {
		t.Errorf("lockctl version: %q, want version v%s", out, version)
	}
	if out := run(t, "/", nil, "man", "-w", "lockctl-run"); strings.TrimSpace(out) != "/usr/share/man/man1/lockctl-run.1.gz" {
		t.Errorf("man -w lockctl-run: %q", out)
	}
	// bash-completion loads the completion on demand, and the completion
	// asks the installed binary: `lockctl ver<TAB>` completes to version.
	script := `source /usr/share/bash-completion/bash_completion
_completion_loader lockctl
complete -p lockctl
COMP_WORDS=(lockctl ver); COMP_CWORD=1; COMP_LINE='lockctl ver'; COMP_POINT=${#COMP_LINE}
fn=$(complete -p lockctl | sed -n 's/.*-F \([^ ]*\).*/\1/p')
"$fn" lockctl ver lockctl
printf 'reply:%s\n' "${COMPREPLY[@]}"`
	out := run(t, "/", []string{"PATH=/usr/bin:/bin"}, "bash", "--norc", "--noprofile", "-c", script)
	if !strings.Contains(out, "complete -o default -F") || !strings.Contains(out, " lockctl\n") {
		t.Errorf("bash-completion did not load lockctl's completion:\n%s", out)
	}
	if !strings.Contains(out, "reply:version") {
		t.Errorf("lockctl ver<TAB> did not complete to version:\n%s", out)
	}
}
