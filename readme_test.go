package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/redis/go-redis/v9"
)

// The examples of the documentation (every page of docpages.Pages:
// README.md and docs/*.md) are run as a reader would run them, so that a
// change that breaks one fails the tests:
//
//   - a ```sh block runs in bash (errexit, nounset, pipefail) against a real
//     redis-server, with LOCKCTL_URL pointing at it, a temporary HOME, and
//     lockctl (this test binary) on PATH. Absolute paths under /etc, /opt,
//     /usr/local and /var are moved into a scratch root laid out as on
//     Debian 12 (so /usr/local/bin/lockctl is lockctl, and a directory the
//     README does not create does not exist), programs of the user's that
//     a block calls (./deploy.sh, /usr/local/bin/backup.sh) are stubs that
//     exit 0, and curl, which would reach the internet, is a stub too;
//   - a ```cron or ```crontab block runs each job line as cron would:
//     env -i PATH=/usr/bin:/bin SHELL=/bin/sh plus the crontab's own
//     variable lines, stdin from /dev/null; lockctl must be named by its
//     installed path; each line runs again with Redis down, and lockctl's
//     failure must then be printed, for cron to mail;
//   - ```ini (systemd units) and ```yaml (CI jobs) blocks cannot run here:
//     every lockctl command line in them must parse.
//
// Every other kind of block is checked by a test of its own, and a block
// that no test covers is an error: see blockCoverage in docs_test.go.
//
// Every lockctl command line of every block, run or not, must name a real
// command, real flags and acceptable arguments (cobra's own parser).
//
// An HTML comment on the line before a block changes how it is tested:
//
//	<!-- readme-test: parse-only (why) -->   bash -n and the command check only
//	<!-- readme-test: exit N (why) -->       the block is expected to exit N
//	<!-- readme-test: in-checkout -->        runs in the source tree
//	<!-- readme-test: read-only (why) -->    runs, once on a free lock and
//	                                         once on a held one, and must
//	                                         change no key of Redis
//	<!-- readme-test: go-module (why) -->    runs in a new Go module beside
//	                                         a checkout at ../lockctl, then
//	                                         builds and runs its program
//	<!-- readme-test: sample (why) -->       a ```text block: output shown as
//	                                         an illustration (see
//	                                         TestDocsSamples)
//	<!-- readme-test: lockctl-config -->     a ```yaml config file of lockctl's
//	<!-- readme-test: prometheus-alerts -->  ```yaml alerts of the rules file
//	<!-- readme-test: prometheus-config -->  a ```yaml Prometheus configuration
//
// A failure names the page and line of the block and of the command that
// failed.

// readmeBlock is one fenced code block of a documentation page.
type readmeBlock struct {
	file  string // the page, such as README.md or docs/kubernetes.md
	lang  string
	fence int // the page's line of the opening fence
	text  string
	mode  string // "", parse-only, exit, in-checkout, read-only, go-module
	exit  int
}

// line is the page's line of line i (0-based) of the block's text.
func (b readmeBlock) line(i int) int { return b.fence + 1 + i }

// at names the page and line of line i of the block's text.
func (b readmeBlock) at(i int) string { return fmt.Sprintf("%s:%d", b.file, b.line(i)) }

// where names the page and line of the block's opening fence.
func (b readmeBlock) where() string { return fmt.Sprintf("%s:%d", b.file, b.fence) }

var annotation = regexp.MustCompile(`^<!-- readme-test: ([a-z-]+)(?: ([0-9]+))?(?: \((.+)\))? -->$`)

// readmeBlocks returns the fenced code blocks of the page file, whose text
// is text.
func readmeBlocks(t *testing.T, file, text string) []readmeBlock {
	t.Helper()
	lines := strings.Split(text, "\n")
	var blocks []readmeBlock
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if !strings.HasPrefix(l, "```") {
			if strings.HasPrefix(l, "<!-- readme-test") && (i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```")) {
				t.Errorf("%s:%d: a readme-test comment must be on the line right before a code block", file, i+1)
			}
			continue
		}
		b := readmeBlock{file: file, lang: strings.TrimSpace(strings.TrimPrefix(l, "```")), fence: i + 1}
		if i > 0 && strings.HasPrefix(lines[i-1], "<!-- readme-test") {
			m := annotation.FindStringSubmatch(lines[i-1])
			switch {
			case m == nil:
				t.Errorf("%s:%d: unreadable readme-test comment %q", file, i, lines[i-1])
			case m[1] == "parse-only" || m[1] == "go-module" || m[1] == "sample":
				if m[3] == "" {
					t.Errorf("%s:%d: readme-test %s needs a reason in parentheses", file, i, m[1])
				}
				b.mode = m[1]
			case m[1] == "exit" && m[2] != "":
				b.mode = "exit"
				b.exit, _ = strconv.Atoi(m[2])
			case m[1] == "in-checkout":
				b.mode = m[1]
			case m[1] == "read-only", m[1] == "lockctl-config", m[1] == "prometheus-alerts", m[1] == "prometheus-config":
				b.mode = m[1]
			default:
				t.Errorf("%s:%d: unknown readme-test mode %q", file, i, m[1])
			}
		}
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		b.text = strings.Join(body, "\n") + "\n"
		blocks = append(blocks, b)
	}
	return blocks
}

// TestReadmeExamples runs the examples of every documentation page (see
// above).
func TestReadmeExamples(t *testing.T) {
	pages := docPages(t)
	lockctl, err := exec.LookPath("lockctl")
	if err != nil {
		t.Fatalf("lockctl (this test binary) is not on PATH: %v", err)
	}
	checkout, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	srv := redistest.StartTest(t, nil)
	client := redis.NewClient(&redis.Options{Addr: srv.Addr})
	t.Cleanup(func() { client.Close() })
	// The server is set up as the README recommends (lockctl doctor: ok):
	// persistence on.
	if err := client.ConfigSet(context.Background(), "appendonly", "yes").Err(); err != nil {
		t.Fatal(err)
	}
	h := &readmeHarness{lockctl: lockctl, checkout: checkout, srv: srv, client: client}

	ran, sawGoModule := 0, false
	for _, b := range allBlocks(t, pages) {
		switch b.lang {
		case "sh", "bash", "shell":
			if !h.checkCalls(t, b, false) || !h.bashParses(t, b) {
				continue
			}
			switch b.mode {
			case "parse-only":
			case "go-module":
				h.runGoModule(t, b)
				sawGoModule = true
				ran++
			default:
				h.runShell(t, b)
				ran++
			}
		case "cron", "crontab":
			if h.checkCalls(t, b, true) && b.mode != "parse-only" {
				h.runCrontab(t, b)
				ran++
			}
		case "ini", "yaml":
			// systemd units and CI jobs: the lockctl lines must parse, and a
			// unit names the binary by its path.
			h.checkCalls(t, b, b.lang == "ini")
		}
	}
	if !sawGoModule {
		t.Error("no page has a go-module block: the library's install recipe is untested")
	}
	t.Logf("%d blocks of %d pages ran", ran, len(pages))
	if ran < 10 {
		t.Errorf("only %d blocks ran; the pages have more examples than that", ran)
	}
}

type readmeHarness struct {
	lockctl, checkout string
	srv               *redistest.Server
	client            *redis.Client
}

// lockctlCall is one lockctl command line found in a block.
type lockctlCall struct {
	line  int // 0-based line in the block
	bin   string
	args  []string
	shell string // the text it was found in
}

// checkCalls checks every lockctl command line of b against the command
// tree; withPath also requires the binary to be named by an absolute path
// (cron's PATH has no /usr/local/bin, and systemd wants one).
func (h *readmeHarness) checkCalls(t *testing.T, b readmeBlock, withPath bool) bool {
	t.Helper()
	ok := true
	for _, c := range findLockctlCalls(b.text, b.lang == "sh" || b.lang == "bash" || b.lang == "shell") {
		if withPath && !strings.HasPrefix(c.bin, "/") {
			t.Errorf("%s (```%s block at line %d): %q calls lockctl without its path; cron's PATH is /usr/bin:/bin (exit 127 there): write /usr/local/bin/lockctl",
				b.at(c.line), b.lang, b.fence, strings.TrimSpace(c.shell))
			ok = false
		}
		if err := checkLockctlArgs(c.args); err != nil {
			t.Errorf("%s (```%s block at line %d): lockctl %s: %v", b.at(c.line), b.lang, b.fence, strings.Join(c.args, " "), err)
			ok = false
		}
	}
	return ok
}

// checkLockctlArgs parses args as lockctl would, without running anything:
// the command must exist, its flags and their values must parse, and its
// positional arguments must be acceptable.
func checkLockctlArgs(args []string) error {
	io, _, _, _ := ui.Test()
	root := cmd.NewRootCmd(cmd.NewFactory(io))
	c, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := c.ParseFlags(rest); err != nil {
		return err
	}
	if c == root && len(c.Flags().Args()) > 0 {
		return fmt.Errorf("unknown command %q", c.Flags().Args()[0])
	}
	if !c.Runnable() {
		return fmt.Errorf("%q needs a subcommand", c.CommandPath())
	}
	return c.ValidateArgs(c.Flags().Args())
}

func (h *readmeHarness) bashParses(t *testing.T, b readmeBlock) bool {
	t.Helper()
	c := exec.Command("bash", "-n")
	c.Stdin = strings.NewReader(b.text)
	if out, err := c.CombinedOutput(); err != nil {
		t.Errorf("%s: ```sh block does not parse (bash -n): %v\n%s", b.where(), err, out)
		return false
	}
	return true
}

// sandbox is the scratch space one block runs in.
type sandbox struct {
	work, home, root, stubs string
}

// newSandbox lays out a work directory, an empty HOME, a scratch root
// with the directories a Debian 12 machine with the README's packages has,
// lockctl installed where the README installs it, and the stubs.
func (h *readmeHarness) newSandbox(t *testing.T) *sandbox {
	t.Helper()
	d := t.TempDir()
	s := &sandbox{work: filepath.Join(d, "work"), home: filepath.Join(d, "home"), root: filepath.Join(d, "root"), stubs: filepath.Join(d, "stubs")}
	for _, dir := range []string{
		s.work, s.home, s.stubs,
		s.root + "/etc/prometheus",                     // prometheus
		s.root + "/var/lib/prometheus/node-exporter",   // prometheus-node-exporter's textfile directory
		s.root + "/var/log", s.root + "/usr/local/bin", // base system
		s.root + "/usr/local/share/man", // base system: no man1/ in it
		s.root + "/opt",
	} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(h.lockctl, s.root+"/usr/local/bin/lockctl"); err != nil {
		t.Fatal(err)
	}
	writeExec(t, filepath.Join(s.stubs, "sudo"), "#!/bin/sh\n# the blocks run unprivileged, inside the scratch root\nexec \"$@\"\n")
	writeExec(t, filepath.Join(s.stubs, "curl"), "#!/bin/sh\n# no internet here: the API call succeeds\nexit 0\n")
	writeExec(t, filepath.Join(s.stubs, "write-orders"), "#!/bin/sh\n# the user's writer, guarded by fence check\nexit 0\n")
	// Inputs the examples read.
	writeFile(t, filepath.Join(s.work, "ids.txt"), "1\n2\n3\n")
	writeFile(t, filepath.Join(s.work, "payload.json"), "{\"amount\": 100}\n")
	return s
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeExec(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o755); err != nil {
		t.Fatal(err)
	}
}

var (
	// An absolute path of the system (not a URL's path, not one in the
	// middle of another path).
	systemPath = regexp.MustCompile(`(^|[\s=:"'<>(])(/(?:etc|opt|var|usr/local)/[^\s"'<>);|&]*)`)
	// A Redis URL of the examples' (redis.internal, redis.example, ...).
	redisURL = regexp.MustCompile(`rediss?://[^\s"'/]+(?:/[0-9]+)?`)
	// ./program: a program of the user's in the current directory.
	userProgram = regexp.MustCompile(`(?:^|[\s"'(])\./([A-Za-z0-9_.-]+)`)
)

// rewrite moves the system paths of text into the sandbox's root, points
// Redis URLs at the test server, and stubs the user's programs it calls.
func (h *readmeHarness) rewrite(t *testing.T, s *sandbox, text string) string {
	t.Helper()
	text = systemPath.ReplaceAllStringFunc(text, func(m string) string {
		sub := systemPath.FindStringSubmatch(m)
		p := sub[2]
		if strings.HasSuffix(p, ".sh") || strings.HasPrefix(p, "/opt/") {
			if _, err := os.Stat(s.root + p); err != nil {
				writeExec(t, s.root+p, "#!/bin/sh\n# a program of the user's\nexit 0\n")
			}
		}
		return sub[1] + s.root + p
	})
	text = redisURL.ReplaceAllString(text, h.srv.URL)
	for _, m := range userProgram.FindAllStringSubmatch(text, -1) {
		p := filepath.Join(s.work, m[1])
		if _, err := os.Stat(p); err != nil {
			writeExec(t, p, "#!/bin/sh\n# a program of the user's\nexit 0\n")
		}
	}
	return text
}

// environ is the block's environment: this process's, without any Redis
// or lockctl setting of the machine's, with the test server's URL and the
// sandbox's HOME and PATH.
func (h *readmeHarness) environ(s *sandbox) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "LOCKCTL_") || k == "REDIS_URL" || k == "HOME" || k == "XDG_CONFIG_HOME" || k == "PATH" {
			continue
		}
		env = append(env, kv)
	}
	return append(env,
		// Go keeps its caches where it did before HOME moved.
		"GOPATH="+goEnv("GOPATH"), "GOMODCACHE="+goEnv("GOMODCACHE"), "GOCACHE="+goEnv("GOCACHE"),
		"LOCKCTL_URL="+h.srv.URL,
		"HOME="+s.home,
		"PATH="+s.stubs+string(os.PathListSeparator)+filepath.Dir(h.lockctl)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"DELIVERY_ID=delivery-42",
	)
}

func goEnv(name string) string {
	out, err := exec.Command("go", "env", name).Output()
	if err != nil {
		panic(fmt.Sprintf("go env %s: %v", name, err))
	}
	return strings.TrimSpace(string(out))
}

func (h *readmeHarness) flush(t *testing.T) {
	t.Helper()
	if err := h.client.FlushAll(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
}

// A trap in the block's shell names the command that failed and its line.
const (
	shellPrelude = "set -eEu -o pipefail\n" +
		"trap 'echo \"readme-test: line $LINENO: exit $?: $BASH_COMMAND\" >&2' ERR\n"
	preludeLines = 2
)

var (
	trapLine = regexp.MustCompile(`readme-test: line ([0-9]+): exit ([0-9]+): (.*)`)
	// bash's own message, for what ends the shell without the trap (an
	// unset variable under set -u, a syntax error).
	bashLine = regexp.MustCompile(`\.readme-block\.sh: line ([0-9]+): (.*)`)
)

// failedAt maps the shell's report of the failing command to the block's
// README line and a description of it.
func failedAt(b readmeBlock, out string) (line int, what string) {
	if m := trapLine.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[1])
		return b.line(n - 1 - preludeLines), fmt.Sprintf(": %s exited %s", m[3], m[2])
	}
	if m := bashLine.FindStringSubmatch(out); m != nil {
		n, _ := strconv.Atoi(m[1])
		return b.line(n - 1 - preludeLines), ": " + m[2]
	}
	return b.fence, ""
}

// A block's time bound, generous for a loaded 2-core machine: one that
// builds gets minutes, any other a minute (a command that waits forever,
// such as a server, fails instead of hanging the suite).
const buildLimit = 5 * time.Minute

func blockLimit(b readmeBlock) time.Duration {
	if b.mode == "in-checkout" || b.mode == "go-module" {
		return buildLimit
	}
	return time.Minute
}

// runShell runs an sh block in bash and checks its exit status. A
// read-only block runs twice, on a free lock and while another process
// holds it, and must leave every key as it was.
func (h *readmeHarness) runShell(t *testing.T, b readmeBlock) {
	t.Helper()
	if b.mode != "read-only" {
		h.runShellOnce(t, b)
		return
	}
	for _, held := range []bool{false, true} {
		h.flush(t)
		if held {
			out, code := runWithTimeout(t, time.Minute, ".", h.environ(h.newSandbox(t)), nil, h.lockctl, "lock", "deploy", "--ttl", "5m", "--owner", "ops@bastion:1")
			if code != 0 {
				t.Fatalf("lockctl lock deploy: exit %d: %s", code, out)
			}
		}
		before := h.keyspace(t)
		h.runShellOnce(t, b)
		after := h.keyspace(t)
		var changed []string
		for k, v := range after {
			if before[k] != v {
				changed = append(changed, k)
			}
		}
		for k := range before {
			if _, ok := after[k]; !ok {
				changed = append(changed, k+" (deleted)")
			}
		}
		if len(changed) > 0 {
			sort.Strings(changed)
			t.Errorf("%s: ```sh block wrote to Redis (lock held: %v), but it only asks who holds the lock: %s", b.where(), held, strings.Join(changed, ", "))
		}
	}
}

// keyspace is every key with its value (DUMP), to compare.
func (h *readmeHarness) keyspace(t *testing.T) map[string]string {
	t.Helper()
	ctx := context.Background()
	keys, err := h.client.Keys(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, k := range keys {
		m[k], _ = h.client.Dump(ctx, k).Result()
	}
	return m
}

func (h *readmeHarness) runShellOnce(t *testing.T, b readmeBlock) {
	t.Helper()
	s := h.newSandbox(t)
	if b.mode != "read-only" {
		h.flush(t)
	}
	dir := s.work
	if b.mode == "in-checkout" {
		dir = h.checkout
	}
	script := filepath.Join(s.work, ".readme-block.sh")
	writeFile(t, script, shellPrelude+h.rewrite(t, s, b.text))
	out, code := runWithTimeout(t, blockLimit(b), dir, h.environ(s), nil, "bash", "--noprofile", "--norc", script)
	if code == b.exit {
		return
	}
	line, what := failedAt(b, out)
	t.Errorf("%s:%d (```sh block at line %d): the block exited %d, want %d%s\n--- output ---\n%s", b.file, line, b.fence, code, b.exit, what, out)
}

// runCrontab runs each job line of a crontab block as cron runs it, twice:
//
//   - with Redis up, the job (a stub that prints a line) runs; cron mails
//     what the line prints, so a line that appends to a log must leave
//     the job's output in the log and print nothing itself;
//   - with Redis down, lockctl's own failure (69) must reach what cron
//     mails: a line may log the job, never lockctl's errors.
func (h *readmeHarness) runCrontab(t *testing.T, b readmeBlock) {
	t.Helper()
	s := h.newSandbox(t)
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	down := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	vars := []string{"PATH=/usr/bin:/bin", "SHELL=/bin/sh", "HOME=" + s.home, "LOGNAME=" + os.Getenv("USER")}
	assign := regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	appendLog := regexp.MustCompile(`>>\s*(\S+)`)
	for i, l := range strings.Split(strings.TrimRight(b.text, "\n"), "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if assign.MatchString(l) {
			// cron takes the value literally, less one pair of quotes.
			k, v, _ := strings.Cut(h.rewrite(t, s, l), "=")
			v = strings.TrimSpace(v)
			if len(v) >= 2 && (v[0] == '"' || v[0] == '\'') && v[len(v)-1] == v[0] {
				v = v[1 : len(v)-1]
			}
			vars = append(vars, strings.TrimSpace(k)+"="+v)
			continue
		}
		f := strings.Fields(l)
		n := 5
		if strings.HasPrefix(f[0], "@") {
			n = 1
		}
		if len(f) <= n {
			t.Errorf("%s: crontab line has no command: %q", b.at(i), l)
			continue
		}
		// The command is the rest of the line after the schedule.
		rest := l
		for j := 0; j < n; j++ {
			rest = strings.TrimLeft(rest, " \t")
			rest = rest[strings.IndexAny(rest+" ", " \t"):]
		}
		command, stdin := cronPercent(strings.TrimSpace(rest))
		// The user's programs print a line, as a job does.
		for _, m := range systemPath.FindAllStringSubmatch(command, -1) {
			if p := m[2]; strings.HasSuffix(p, ".sh") || strings.HasPrefix(p, "/opt/") {
				writeExec(t, s.root+p, "#!/bin/sh\necho \"output of "+p+"\"\n")
			}
		}
		command = h.rewrite(t, s, command)
		run := func(env []string) (string, int) {
			h.flush(t)
			args := append(append([]string{"-i"}, env...), "/bin/sh", "-c", command)
			var in *strings.Reader
			if stdin != "" {
				in = strings.NewReader(stdin)
			}
			return runWithTimeout(t, time.Minute, s.home, nil, in, "env", args...)
		}
		where := fmt.Sprintf("%s (```%s block at line %d): under cron (env -i PATH=/usr/bin:/bin SHELL=/bin/sh, stdin /dev/null) %q", b.at(i), b.lang, b.fence, command)

		out, code := run(vars)
		if code != 0 {
			t.Errorf("%s exited %d\n--- output ---\n%s", where, code, out)
			continue
		}
		if m := appendLog.FindStringSubmatch(command); m != nil {
			logged, err := os.ReadFile(m[1])
			if err != nil || !strings.Contains(string(logged), "output of ") {
				t.Errorf("%s: the job's output did not reach its log %s (%v): %q", where, m[1], err, logged)
			}
			if out != "" {
				t.Errorf("%s logs the job, yet printed (cron mails this on every run):\n%s", where, out)
			}
		}

		// Redis down: lockctl's failure is printed, so cron mails it.
		downVars, named := make([]string, 0, len(vars)+1), false
		for _, v := range vars {
			if strings.Contains(v, h.srv.URL) {
				named = true
			}
			downVars = append(downVars, strings.ReplaceAll(v, h.srv.URL, down))
		}
		if !named && !strings.Contains(command, h.srv.URL) {
			downVars = append(downVars, "LOCKCTL_URL="+down)
		}
		saved := command
		command = strings.ReplaceAll(command, h.srv.URL, down)
		out, code = run(downVars)
		command = saved
		if code != 69 || !strings.Contains(out, "lockctl: ") {
			t.Errorf("%s with Redis down exited %d and printed %q: cron mails only what a job prints, so lockctl's own failure (69) must be printed, not appended to the job's log", where, code, out)
		}
	}
}

// cronPercent splits a crontab command as cron does: an unescaped % ends
// the command and the rest, with % as newlines, is its stdin; \% is a %.
func cronPercent(s string) (command, stdin string) {
	var cmdB strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '%':
			cmdB.WriteByte('%')
			i++
		case s[i] == '%':
			return cmdB.String(), strings.ReplaceAll(s[i+1:], "%", "\n") + "\n"
		default:
			cmdB.WriteByte(s[i])
		}
	}
	return cmdB.String(), ""
}

// runGoModule runs the block in a new Go module beside a checkout of
// lockctl at ../lockctl, whose main.go imports pkg/lock, then builds the
// program and runs it against the test server: the library recipe works
// from outside the source tree, with the module proxy as the environment
// has it.
func (h *readmeHarness) runGoModule(t *testing.T, b readmeBlock) {
	t.Helper()
	s := h.newSandbox(t)
	h.flush(t)
	if err := os.Symlink(h.checkout, filepath.Join(s.work, "lockctl")); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(s.work, "app")
	if err := os.MkdirAll(app, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(app, "go.mod"), "module example.com/app\n\ngo 1.22\n")
	writeFile(t, filepath.Join(app, "main.go"), goModuleProgram)
	env := append(h.environ(s), "GOFLAGS=-mod=mod "+os.Getenv("GOFLAGS"))
	script := filepath.Join(s.work, ".readme-block.sh")
	writeFile(t, script, shellPrelude+b.text)
	out, code := runWithTimeout(t, buildLimit, app, env, nil, "bash", "--noprofile", "--norc", script)
	if code != 0 {
		line, what := failedAt(b, out)
		t.Errorf("%s:%d (```sh block at line %d, in a new module): exited %d%s\n%s", b.file, line, b.fence, code, what, out)
		return
	}
	if out, code := runWithTimeout(t, buildLimit, app, env, nil, "go", "build", "-o", "app", "."); code != 0 {
		t.Errorf("%s: after the recipe, go build of a program importing pkg/lock fails:\n%s", b.where(), out)
		return
	}
	out, code = runWithTimeout(t, time.Minute, app, env, nil, "./app")
	if code != 0 || !strings.Contains(out, "acquired readme-go with fence ") || !strings.Contains(out, "released") {
		t.Errorf("%s: the program built with the recipe exited %d:\n%s", b.where(), code, out)
		return
	}
}

const goModuleProgram = `package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

func main() {
	opt, err := redis.ParseURL(os.Getenv("LOCKCTL_URL"))
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	l := lock.New(redis.NewClient(opt), nil)
	lease, err := l.Acquire(ctx, "readme-go", 10*time.Second, nil)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("acquired readme-go with fence", lease.Fence())
	if err := lease.Release(ctx); err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("released")
}
`

// runWithTimeout runs a command in its own process group, stdin from
// /dev/null unless given, and kills the group if it runs past limit.
func runWithTimeout(t *testing.T, limit time.Duration, dir string, env []string, stdin *strings.Reader, name string, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	c := exec.CommandContext(ctx, name, args...)
	c.Dir = dir
	c.Env = env
	if stdin != nil {
		c.Stdin = stdin
	}
	var out bytes.Buffer
	c.Stdout, c.Stderr = &out, &out
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = 5 * time.Second
	err := c.Run()
	if ctx.Err() != nil {
		return out.String() + fmt.Sprintf("\n(killed: still running after %s)", limit), -1
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return out.String(), exit.ExitCode()
	}
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return out.String(), 0
}
