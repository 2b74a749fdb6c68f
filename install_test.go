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

// TestDebPackage builds the Debian package, installs it with dpkg into a
// directory of its own (its own dpkg database, so it needs no root and
// leaves the system alone), checks the binary, a man page, the bash
// completion and the copyright file as a user of the package would, and
// removes it again with dpkg. It needs dpkg, bash-completion and man-db
// (scripts/ensure-tools.sh).
func TestDebPackage(t *testing.T) {
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
	info := run(t, ".", nil, "dpkg-deb", "--field", deb, "Package", "Version", "Architecture")
	if want := "Package: lockctl\nVersion: " + version + "\nArchitecture: " + arch + "\n"; info != want {
		t.Errorf("dpkg-deb --field: %q, want %q", info, want)
	}

	// dpkg installs into root, with its database under root: the same
	// unpacking, file list and removal as on a system, without root
	// (--force-not-root; the package has no maintainer scripts).
	root := t.TempDir()
	admin := filepath.Join(root, "var", "lib", "dpkg")
	for _, d := range []string{"info", "updates"} {
		if err := os.MkdirAll(filepath.Join(admin, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(admin, "status"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	absDeb, _ := filepath.Abs(deb)
	// dpkg wants ldconfig and start-stop-daemon on PATH, in /sbin, which
	// a user's PATH seldom has.
	dpkgEnv := []string{"PATH=" + os.Getenv("PATH") + ":/usr/sbin:/sbin"}
	dpkg := func(args ...string) string {
		return run(t, ".", dpkgEnv, "dpkg", append([]string{"--force-not-root", "--root=" + root,
			"--admindir=" + admin, "--log=" + filepath.Join(root, "dpkg.log")}, args...)...)
	}
	dpkg("-i", absDeb)
	bin := filepath.Join(root, "usr", "bin", "lockctl")
	t.Cleanup(func() {
		if t.Failed() {
			return
		}
		dpkg("-r", "lockctl")
		if _, err := os.Stat(bin); err == nil {
			t.Error(bin + " is still there after dpkg -r")
		}
	})
	if out := dpkg("-s", "lockctl"); !strings.Contains(out, "Status: install ok installed\n") || !strings.Contains(out, "Version: "+version+"\n") {
		t.Errorf("dpkg -s lockctl after dpkg -i:\n%s", out)
	}
	if out := dpkg("-L", "lockctl"); !strings.Contains(out, "/usr/bin/lockctl\n") {
		t.Errorf("dpkg -L lockctl does not list /usr/bin/lockctl:\n%s", out)
	}

	if out := run(t, "/", nil, bin, "version"); !strings.Contains(out, "lockctl v"+version+" ") {
		t.Errorf("lockctl version: %q, want version v%s", out, version)
	}
	share := filepath.Join(root, "usr", "share")
	if out := run(t, "/", nil, "man", "-M", filepath.Join(share, "man"), "-w", "lockctl-run"); strings.TrimSpace(out) != filepath.Join(share, "man", "man1", "lockctl-run.1.gz") {
		t.Errorf("man -w lockctl-run: %q", out)
	}
	// bash-completion loads the completion on demand from the data
	// directories (the installed tree's first), and the completion asks
	// the installed binary: `lockctl ver<TAB>` completes to version.
	script := `source /usr/share/bash-completion/bash_completion
_completion_loader lockctl
complete -p lockctl
COMP_WORDS=(lockctl ver); COMP_CWORD=1; COMP_LINE='lockctl ver'; COMP_POINT=${#COMP_LINE}
fn=$(complete -p lockctl | sed -n 's/.*-F \([^ ]*\).*/\1/p')
"$fn" lockctl ver lockctl
printf 'reply:%s\n' "${COMPREPLY[@]}"
printf 'lockctl:%s\n' "$(command -v lockctl)"`
	out := run(t, "/", []string{"PATH=" + filepath.Join(root, "usr", "bin") + ":/usr/bin:/bin",
		"XDG_DATA_DIRS=" + share + ":/usr/share", "HOME=" + t.TempDir()},
		"bash", "--norc", "--noprofile", "-c", script)
	if !strings.Contains(out, "complete -o default -F") || !strings.Contains(out, " lockctl\n") {
		t.Errorf("bash-completion did not load lockctl's completion:\n%s", out)
	}
	if !strings.Contains(out, "reply:version") {
		t.Errorf("lockctl ver<TAB> did not complete to version:\n%s", out)
	}
	if !strings.Contains(out, "lockctl:"+bin+"\n") {
		t.Errorf("the completion did not run the installed lockctl:\n%s", out)
	}

	// The copyright file names the licence, Apache-2.0, whose text is
	// the tree's LICENSE.
	copyright, err := os.ReadFile(filepath.Join(share, "doc", "lockctl", "copyright"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nFiles: *\n", "\nLicense: Apache-2.0\n", "/usr/share/common-licenses/Apache-2.0"} {
		if !strings.Contains(string(copyright), want) {
			t.Errorf("copyright lacks %q:\n%s", want, copyright)
		}
	}
	if strings.Contains(string(copyright), "unspecified") {
		t.Errorf("copyright still says the licence is unspecified:\n%s", copyright)
	}
	license, err := os.ReadFile("LICENSE")
	if err != nil || !strings.Contains(string(license), "Apache License\n                           Version 2.0, January 2004") ||
		!strings.Contains(string(license), "APPENDIX: How to apply the Apache License to your work.") {
		t.Errorf("LICENSE is not the Apache License 2.0 with its appendix: %v", err)
	}
}
