package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

// The release files (scripts/release.sh, make release) and the installer
// that the GitHub Action, GitLab CI and a shell use (scripts/install.sh,
// action.yml), checked against release files built here and served by a
// local HTTP server.

// buildRelease runs scripts/release.sh into a new directory and returns it.
func buildRelease(t *testing.T, platforms, debArches string) string {
	t.Helper()
	out := t.TempDir()
	run(t, ".", []string{"OUT=" + out, "PLATFORMS=" + platforms, "DEB_ARCHES=" + debArches}, "./scripts/release.sh")
	return out
}

// releaseVersion is the version make release stamps on this checkout.
func releaseVersion(t *testing.T) string {
	return "v" + strings.TrimSpace(run(t, ".", nil, "./scripts/deb-version.sh"))
}

// archiveFiles are what every archive holds besides the binary.
func archiveFiles(t *testing.T) []string {
	t.Helper()
	want := []string{"lockctl", "LICENSE", "README.md", "man/", "completions/"}
	for _, glob := range []string{"man/*.1", "completions/*"} {
		files, _ := filepath.Glob(glob)
		if len(files) == 0 {
			t.Fatalf("no %s in the checkout", glob)
		}
		want = append(want, files...)
	}
	return want
}

// checkRelease checks the release files in dir: exactly the archives of
// platforms, the .debs of debArches, install.sh and SHA256SUMS listing
// them all with their sums; each archive's entries (owned by 0:0, dated
// the commit, the binary executable, the other files as in the checkout).
func checkRelease(t *testing.T, dir string, platforms, debArches []string) {
	t.Helper()
	debVersion := strings.TrimPrefix(releaseVersion(t), "v")
	want := []string{"SHA256SUMS", "install.sh"}
	for _, p := range platforms {
		want = append(want, "lockctl_"+strings.Replace(p, "/", "_", 1)+".tar.gz")
	}
	for _, a := range debArches {
		want = append(want, "lockctl_"+debVersion+"_"+a+".deb")
	}
	slices.Sort(want)
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, want) {
		t.Fatalf("release files %q, want %q", got, want)
	}

	// SHA256SUMS: sha256sum's format, a line for every other file.
	sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, l := range strings.Split(strings.TrimSuffix(string(sums), "\n"), "\n") {
		sum, name, ok := strings.Cut(l, "  ")
		if !ok || len(sum) != 64 {
			t.Errorf("SHA256SUMS line %q is not sha256sum's format", l)
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Errorf("SHA256SUMS lists %s: %v", name, err)
			continue
		}
		if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != sum {
			t.Errorf("SHA256SUMS: %s has sum %x, the file says %s", name, h, sum)
		}
		listed = append(listed, name)
	}
	if w := slices.DeleteFunc(slices.Clone(want), func(s string) bool { return s == "SHA256SUMS" }); !slices.Equal(listed, w) {
		t.Errorf("SHA256SUMS lists %q, want %q", listed, w)
	}
	if out := run(t, dir, nil, "sha256sum", "-c", "SHA256SUMS"); strings.Count(out, ": OK\n") != len(want)-1 {
		t.Errorf("sha256sum -c SHA256SUMS:\n%s", out)
	}

	epoch, err := strconv.ParseInt(strings.TrimSpace(run(t, ".", nil, "git", "log", "-1", "--format=%ct")), 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range platforms {
		name := "lockctl_" + strings.Replace(p, "/", "_", 1) + ".tar.gz"
		files := readArchive(t, filepath.Join(dir, name))
		var names []string
		for _, f := range files {
			names = append(names, f.hdr.Name)
			if f.hdr.Uid != 0 || f.hdr.Gid != 0 || f.hdr.Uname != "" || f.hdr.Gname != "" {
				t.Errorf("%s: %s owned by %d:%d (%q:%q), want 0:0 and no names", name, f.hdr.Name, f.hdr.Uid, f.hdr.Gid, f.hdr.Uname, f.hdr.Gname)
			}
			if f.hdr.ModTime.Unix() != epoch {
				t.Errorf("%s: %s dated %v, want the commit's time %v", name, f.hdr.Name, f.hdr.ModTime, time.Unix(epoch, 0))
			}
			wantMode := int64(0o644)
			switch {
			case f.hdr.Typeflag == tar.TypeDir, f.hdr.Name == "lockctl":
				wantMode = 0o755
			default:
				src, err := os.ReadFile(f.hdr.Name)
				if err != nil || !bytes.Equal(src, f.data) {
					t.Errorf("%s: %s differs from the checkout's (%v)", name, f.hdr.Name, err)
				}
			}
			if f.hdr.Mode != wantMode {
				t.Errorf("%s: %s mode %#o, want %#o", name, f.hdr.Name, f.hdr.Mode, wantMode)
			}
		}
		wantNames := archiveFiles(t)
		if slices.Sort(names); !slices.Equal(names, slices.Sorted(slices.Values(wantNames))) {
			t.Errorf("%s holds %q, want %q", name, names, wantNames)
		}
		// The binary is for the platform, static, and stamped.
		bin := files[slices.IndexFunc(files, func(f archiveFile) bool { return f.hdr.Name == "lockctl" })].data
		checkBinary(t, name, bin, p)
	}
	for _, a := range debArches {
		deb := filepath.Join(dir, "lockctl_"+debVersion+"_"+a+".deb")
		info := run(t, ".", nil, "dpkg-deb", "--field", deb, "Package", "Version", "Architecture")
		if w := "Package: lockctl\nVersion: " + debVersion + "\nArchitecture: " + a + "\n"; info != w {
			t.Errorf("%s: dpkg-deb --field: %q, want %q", deb, info, w)
		}
		if c := run(t, ".", nil, "dpkg-deb", "-c", deb); !strings.Contains(c, "./usr/bin/lockctl\n") || !strings.Contains(c, "./usr/share/man/man1/lockctl-run.1.gz\n") {
			t.Errorf("%s lacks the binary or the man pages:\n%s", deb, c)
		}
	}
}

// checkBinary: data is a Go binary for platform (os/arch) built by the
// release: CGO off, -trimpath; on this platform it runs and names the
// version and commit it was stamped with (-trimpath keeps -ldflags out of
// the build info).
func checkBinary(t *testing.T, where string, data []byte, platform string) {
	t.Helper()
	f := filepath.Join(t.TempDir(), "lockctl")
	if err := os.WriteFile(f, data, 0o755); err != nil {
		t.Fatal(err)
	}
	info := run(t, ".", nil, "go", "version", "-m", f)
	goos, goarch, _ := strings.Cut(platform, "/")
	commit := strings.TrimSpace(run(t, ".", nil, "git", "rev-parse", "HEAD"))
	for _, want := range []string{
		"\tbuild\tCGO_ENABLED=0\n", "\tbuild\t-trimpath=true\n",
		"\tbuild\tGOOS=" + goos + "\n", "\tbuild\tGOARCH=" + goarch + "\n",
	} {
		if !strings.Contains(info, want) {
			t.Errorf("%s: go version -m lacks %q:\n%s", where, want, info)
		}
	}
	if wd, _ := os.Getwd(); bytes.Contains(data, []byte(wd)) {
		t.Errorf("%s: the binary holds the checkout's path %s (-trimpath)", where, wd)
	}
	if platform == runtime.GOOS+"/"+runtime.GOARCH {
		out := run(t, "/", nil, f, "version")
		if !strings.HasPrefix(out, "lockctl "+releaseVersion(t)+" (commit "+commit[:12]) {
			t.Errorf("%s: lockctl version: %q, want version %s and commit %s", where, out, releaseVersion(t), commit[:12])
		}
	}
	if goos == "linux" {
		checkStaticELF(t.Errorf, where, f)
	}
}

type archiveFile struct {
	hdr  *tar.Header
	data []byte
}

func readArchive(t *testing.T, file string) []archiveFile {
	t.Helper()
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("%s: gzip header holds a name %q or a time %v (gzip -n)", file, zr.Name, zr.ModTime)
	}
	var files []archiveFile
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files
		}
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, archiveFile{h, data})
	}
}

// sameFiles: dirs a and b hold the same files, byte for byte.
func sameFiles(t *testing.T, a, b string) {
	t.Helper()
	entries, err := os.ReadDir(a)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		x, _ := os.ReadFile(filepath.Join(a, e.Name()))
		y, err := os.ReadFile(filepath.Join(b, e.Name()))
		if err != nil || !bytes.Equal(x, y) {
			t.Errorf("%s differs between two builds of the same commit (%v)", e.Name(), err)
		}
	}
}

// TestRelease builds the linux/amd64 release files twice with the script
// make release runs, checks them, and installs them with scripts/install.sh
// and the Action as a runner would, from a local HTTP server.
func TestRelease(t *testing.T) {
	if runtime.GOOS != "linux" || runtime.GOARCH != "amd64" {
		t.Skip("the subset built here is linux/amd64, which must run here")
	}
	// make release runs the same script, into dist/, which git ignores.
	if out := run(t, ".", nil, "make", "-n", "release"); !strings.Contains(out, "./scripts/release.sh\n") {
		t.Errorf("make -n release does not run scripts/release.sh:\n%s", out)
	}
	if err := exec.Command("git", "check-ignore", "-q", "dist/release/SHA256SUMS").Run(); err != nil {
		t.Errorf("git does not ignore dist/release: %v", err)
	}
	platforms := []string{"linux/amd64"}
	dir := buildRelease(t, "linux/amd64", "")
	checkRelease(t, dir, platforms, nil)
	t.Run("reproducible", func(t *testing.T) {
		sameFiles(t, dir, buildRelease(t, "linux/amd64", ""))
	})

	srv := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(srv.Close)
	version := releaseVersion(t)

	t.Run("install", func(t *testing.T) {
		bin := filepath.Join(t.TempDir(), "bin")
		stdout, stderr, err := installScript(t, nil, "--version", version, "--base-url", srv.URL, "--bin-dir", bin)
		if err != nil {
			t.Fatalf("install.sh: %v\n%s", err, stderr)
		}
		if stdout != filepath.Join(bin, "lockctl")+"\n" {
			t.Errorf("install.sh printed %q, want the installed path", stdout)
		}
		if out := run(t, "/", nil, filepath.Join(bin, "lockctl"), "version"); !strings.HasPrefix(out, "lockctl "+version+" ") {
			t.Errorf("the installed lockctl version: %q, want %s", out, version)
		}
		// The release's own copy of the script works the same, from a pipe
		// (curl ... | sh -s -- ...).
		bin2 := filepath.Join(t.TempDir(), "bin")
		script, _ := os.ReadFile(filepath.Join(dir, "install.sh"))
		c := exec.Command("sh", "-s", "--", "--base-url", srv.URL+"/", "--bin-dir", bin2)
		c.Stdin = bytes.NewReader(script)
		if out, err := c.CombinedOutput(); err != nil {
			t.Fatalf("sh -s install.sh: %v\n%s", err, out)
		}
		if _, err := os.Stat(filepath.Join(bin2, "lockctl")); err != nil {
			t.Error(err)
		}
	})

	t.Run("tampered archive", func(t *testing.T) {
		bad := t.TempDir()
		for _, f := range []string{"SHA256SUMS", "lockctl_linux_amd64.tar.gz"} {
			data, err := os.ReadFile(filepath.Join(dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(f, ".tar.gz") {
				data[len(data)/2] ^= 0x01
			}
			if err := os.WriteFile(filepath.Join(bad, f), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		badSrv := httptest.NewServer(http.FileServer(http.Dir(bad)))
		defer badSrv.Close()
		bin := filepath.Join(t.TempDir(), "bin")
		// --source too: a bad checksum is never a reason to build instead.
		_, stderr, err := installScript(t, nil, "--base-url", badSrv.URL, "--bin-dir", bin, "--source", ".")
		if err == nil {
			t.Fatal("install.sh installed an archive whose checksum does not match")
		}
		if !strings.Contains(stderr, "checksum mismatch for lockctl_linux_amd64.tar.gz") {
			t.Errorf("install.sh's message: %q", stderr)
		}
		if _, err := os.Stat(bin); !os.IsNotExist(err) {
			t.Errorf("after a checksum mismatch the bin directory exists: %v", err)
		}
		// And a SHA256SUMS without the archive's line installs nothing either.
		if err := os.WriteFile(filepath.Join(bad, "SHA256SUMS"), []byte(strings.Repeat("0", 64)+"  lockctl_darwin_arm64.tar.gz\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, stderr, err := installScript(t, nil, "--base-url", badSrv.URL, "--bin-dir", bin); err == nil || !strings.Contains(stderr, "no line for lockctl_linux_amd64.tar.gz") {
			t.Errorf("SHA256SUMS without the archive: %v %q", err, stderr)
		}
	})

	t.Run("no release files: built from source", func(t *testing.T) {
		empty := httptest.NewServer(http.FileServer(http.Dir(t.TempDir())))
		defer empty.Close()
		bin := filepath.Join(t.TempDir(), "bin")
		if _, stderr, err := installScript(t, nil, "--version", "main", "--base-url", empty.URL, "--bin-dir", bin); err == nil || !strings.Contains(stderr, "not found") {
			t.Errorf("404 without --source: %v %q", err, stderr)
		}
		checkout, _ := filepath.Abs(".")
		_, stderr, err := installScript(t, nil, "--version", "main", "--base-url", empty.URL, "--bin-dir", bin, "--source", checkout)
		if err != nil {
			t.Fatalf("install.sh --source: %v\n%s", err, stderr)
		}
		if !strings.Contains(stderr, "not found; building "+checkout) {
			t.Errorf("install.sh did not say it builds from source: %q", stderr)
		}
		commit := strings.TrimSpace(run(t, ".", nil, "git", "rev-parse", "HEAD"))
		if out := run(t, "/", nil, filepath.Join(bin, "lockctl"), "version"); !strings.Contains(out, "(commit "+commit[:12]) {
			t.Errorf("the lockctl built from source: %q, want commit %s", out, commit[:12])
		}
	})

	t.Run("action", func(t *testing.T) {
		step := readAction(t)
		dirOf := func(githubPath string) string {
			data, err := os.ReadFile(githubPath)
			if err != nil {
				t.Fatal(err)
			}
			return strings.TrimSpace(string(data))
		}
		// The ref the action is used at names the version; base-url
		// points at the local server.
		env, githubPath, githubOutput := actionEnv(t, step, map[string]string{"base-url": srv.URL}, version)
		if out, err := runStep(step, env); err != nil {
			t.Fatalf("the action's step: %v\n%s", err, out)
		}
		bin := dirOf(githubPath)
		if out := run(t, "/", nil, filepath.Join(bin, "lockctl"), "version"); !strings.HasPrefix(out, "lockctl "+version+" ") {
			t.Errorf("the action's lockctl version: %q", out)
		}
		if out, _ := os.ReadFile(githubOutput); string(out) != "path="+filepath.Join(bin, "lockctl")+"\n" {
			t.Errorf("GITHUB_OUTPUT: %q", out)
		}

		// Without base-url, the version input (else the ref) names the
		// GitHub release to download from; nothing is reachable here (a
		// proxy that refuses), so the step fails naming the URL, and does
		// not build instead: only a 404 does.
		for _, tc := range []struct{ input, ref, want string }{
			{"", "v9.8.7", "https://github.com/lockctl/lockctl/releases/download/v9.8.7/lockctl_linux_amd64.tar.gz"},
			{"v1.2.3", "v9.8.7", "https://github.com/lockctl/lockctl/releases/download/v1.2.3/lockctl_linux_amd64.tar.gz"},
		} {
			env, githubPath, _ := actionEnv(t, step, map[string]string{"version": tc.input}, tc.ref)
			env = append(env, "https_proxy=http://127.0.0.1:1", "HTTPS_PROXY=http://127.0.0.1:1")
			out, err := runStep(step, env)
			if err == nil || !strings.Contains(out, "cannot download "+tc.want) {
				t.Errorf("version %q at ref %s: %v, want a failed download of %s:\n%s", tc.input, tc.ref, err, tc.want, out)
			}
			if data, _ := os.ReadFile(githubPath); len(data) != 0 {
				t.Errorf("a failed install added %q to PATH", data)
			}
		}
	})
}

// installScript runs scripts/install.sh with args.
func installScript(t *testing.T, env []string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var o, e bytes.Buffer
	c := exec.Command("./scripts/install.sh", args...)
	c.Env = append(os.Environ(), env...)
	c.Stdout, c.Stderr = &o, &e
	err = c.Run()
	return o.String(), e.String(), err
}

// actionYAML is the part of action.yml the test reads.
type actionYAML struct {
	Name        string            `yaml:"name"`
	Description string            `yaml:"description"`
	Author      string            `yaml:"author"`
	Branding    map[string]string `yaml:"branding"`
	Outputs     map[string]struct {
		Description string `yaml:"description"`
		Value       string `yaml:"value"`
	} `yaml:"outputs"`
	Inputs map[string]struct {
		Description string `yaml:"description"`
		Required    bool   `yaml:"required"`
		Default     string `yaml:"default"`
	} `yaml:"inputs"`
	Runs struct {
		Using string       `yaml:"using"`
		Steps []actionStep `yaml:"steps"`
	} `yaml:"runs"`
}

type actionStep struct {
	ID    string            `yaml:"id"`
	Shell string            `yaml:"shell"`
	Env   map[string]string `yaml:"env"`
	Run   string            `yaml:"run"`
}

// readAction reads action.yml: a composite action whose one step runs
// scripts/install.sh from the action's checkout with the inputs.
func readAction(t *testing.T) actionStep {
	t.Helper()
	data, err := os.ReadFile("action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a actionYAML
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	if a.Runs.Using != "composite" || len(a.Runs.Steps) != 1 {
		t.Fatalf("action.yml: runs.using %q with %d steps, want one composite step", a.Runs.Using, len(a.Runs.Steps))
	}
	for _, in := range []string{"version", "base-url", "install-dir"} {
		i, ok := a.Inputs[in]
		if !ok || i.Required || i.Default != "" || i.Description == "" {
			t.Errorf("action.yml: input %s: %+v, want an optional input, described, empty by default", in, i)
		}
	}
	if a.Name == "" || a.Description == "" {
		t.Errorf("action.yml: name %q, description %q: GitHub needs both", a.Name, a.Description)
	}
	s := a.Runs.Steps[0]
	if o := a.Outputs["path"]; s.ID == "" || o.Value != "${{ steps."+s.ID+".outputs.path }}" {
		t.Errorf("action.yml: output path is %q, want the step's (id %q) path", o.Value, s.ID)
	}
	if s.Shell != "sh" {
		t.Errorf("action.yml: shell %q, want sh (POSIX, on Linux and macOS runners)", s.Shell)
	}
	if !strings.Contains(s.Run, `"$GITHUB_ACTION_PATH/scripts/install.sh" --version "$version" --base-url`) {
		t.Errorf("action.yml's step does not run scripts/install.sh with the inputs:\n%s", s.Run)
	}
	if strings.Contains(s.Run, "${{") {
		t.Errorf("action.yml's run: script holds an expression (inputs go through env:, where they cannot inject shell code):\n%s", s.Run)
	}
	return s
}

var expression = regexp.MustCompile(`\$\{\{\s*([a-z_.-]+)\s*\}\}`)

// actionEnv evaluates the step's env: as the runner would for inputs
// (unset ones empty) and github.action_ref, and adds the runner's
// variables: GITHUB_ACTION_PATH is this checkout, GITHUB_PATH and
// GITHUB_OUTPUT new files.
func actionEnv(t *testing.T, s actionStep, inputs map[string]string, ref string) (env []string, githubPath, githubOutput string) {
	t.Helper()
	tmp := t.TempDir()
	checkout, _ := filepath.Abs(".")
	githubPath, githubOutput = filepath.Join(tmp, "path"), filepath.Join(tmp, "output")
	for _, f := range []string{githubPath, githubOutput} {
		if err := os.WriteFile(f, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	env = append(os.Environ(), "GITHUB_ACTION_PATH="+checkout, "GITHUB_PATH="+githubPath,
		"GITHUB_OUTPUT="+githubOutput, "RUNNER_TEMP="+filepath.Join(tmp, "runner"))
	for k, v := range s.Env {
		v = expression.ReplaceAllStringFunc(v, func(e string) string {
			name := expression.FindStringSubmatch(e)[1]
			switch {
			case strings.HasPrefix(name, "inputs."):
				return inputs[strings.TrimPrefix(name, "inputs.")]
			case name == "github.action_ref":
				return ref
			}
			t.Fatalf("action.yml: env %s uses %s, which the test does not evaluate", k, e)
			return ""
		})
		env = append(env, k+"="+v)
	}
	return env, githubPath, githubOutput
}

func runStep(s actionStep, env []string) (string, error) {
	c := exec.Command(s.Shell, "-e", "-c", s.Run)
	c.Env = env
	out, err := c.CombinedOutput()
	return string(out), err
}

// TestReleaseFull checks what make release builds: every platform and
// .deb, and the same bytes from a second build. It takes minutes (four
// cross-builds), so it runs under make release-check only.
func TestReleaseFull(t *testing.T) {
	if os.Getenv("LOCKCTL_RELEASE_FULL") == "" {
		t.Skip("make release-check runs it (LOCKCTL_RELEASE_FULL=1): four cross-builds take minutes")
	}
	platforms := []string{"darwin/amd64", "darwin/arm64", "linux/amd64", "linux/arm64"}
	debs := []string{"amd64", "arm64"}
	all := func() string {
		return buildRelease(t, strings.Join(platforms, " "), strings.Join(debs, " "))
	}
	dir := all()
	checkRelease(t, dir, platforms, debs)
	sameFiles(t, dir, all())
}
