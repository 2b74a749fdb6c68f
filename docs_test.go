package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/internal/testkit/docpages"
	"github.com/lockctl/lockctl/internal/testkit/promtest"
	"github.com/lockctl/lockctl/internal/testkit/shellwords"
	"go.yaml.in/yaml/v3"
)

// The documentation is README.md, short, and the manual under docs/. Every
// page comes from docpages.Pages, the one list of them, and every code block
// of every page is checked by some test: blockCoverage names the test for
// each kind of block, and TestDocsBlocksCovered fails on a block it cannot
// place.

// docPages is every documentation page (README.md and docs/*.md).
func docPages(t *testing.T) []docpages.Page {
	t.Helper()
	pages, err := docpages.Pages(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) < 2 {
		t.Fatalf("found %d documentation pages, want README.md and docs/*.md", len(pages))
	}
	return pages
}

// allBlocks is every fenced code block of pages, in page order.
func allBlocks(t *testing.T, pages []docpages.Page) []readmeBlock {
	t.Helper()
	var blocks []readmeBlock
	for _, p := range pages {
		blocks = append(blocks, readmeBlocks(t, p.Path, p.Text)...)
	}
	return blocks
}

// isLibraryExample: the ```go block that shows pkg/lock's Example whole
// (TestReadmeShowsLibraryExample).
func isLibraryExample(b readmeBlock) bool {
	return b.lang == "go" && strings.Contains(b.text, "func Example()")
}

// isKubernetesManifest: a ```yaml block of Kubernetes objects
// (TestDocsKubernetes).
func isKubernetesManifest(b readmeBlock) bool {
	return b.lang == "yaml" && regexp.MustCompile(`(?m)^apiVersion: `).MatchString(b.text) &&
		regexp.MustCompile(`(?m)^kind: `).MatchString(b.text)
}

// blockCoverage names the test that checks block b, or says why none does.
func blockCoverage(b readmeBlock) (string, error) {
	modeFor := map[string]string{"sample": "text", "lockctl-config": "yaml", "prometheus-alerts": "yaml", "prometheus-config": "yaml"}
	if want, ok := modeFor[b.mode]; ok && b.lang != want {
		return "", fmt.Errorf("readme-test %s is for ```%s blocks, not ```%s", b.mode, want, b.lang)
	}
	switch b.lang {
	case "sh", "bash", "shell":
		if b.mode == "parse-only" {
			return "TestReadmeExamples (bash -n and the lockctl command check)", nil
		}
		return "TestReadmeExamples (runs in bash against a real redis-server)", nil
	case "cron", "crontab":
		if b.mode == "parse-only" {
			return "TestReadmeExamples (the lockctl command check)", nil
		}
		return "TestReadmeExamples (each line under cron's environment, Redis up and down)", nil
	case "ini":
		if !unitNameRE.MatchString(strings.SplitN(b.text, "\n", 2)[0]) {
			return "", fmt.Errorf("an ```ini block must start with the unit's path (# /etc/systemd/system/NAME.service), which TestReadmeSystemdUnits verifies")
		}
		return "TestReadmeSystemdUnits (systemd-analyze verify)", nil
	case "yaml":
		switch {
		case b.mode == "lockctl-config":
			return "TestDocsConfigFiles (read by lockctl, no unknown key)", nil
		case b.mode == "prometheus-alerts":
			return "TestDocsPrometheusBlocks (the alerts of deploy/prometheus/lockctl-rules.yml)", nil
		case b.mode == "prometheus-config":
			return "TestDocsPrometheusBlocks (promtool check config)", nil
		case isKubernetesManifest(b):
			return "TestDocsKubernetes (objects checked field by field)", nil
		case len(findLockctlCalls(b.text, false)) > 0:
			return "TestReadmeExamples (a CI job: its lockctl command lines parse)", nil
		}
		return "", fmt.Errorf("a ```yaml block must be a CI job calling lockctl, Kubernetes objects (apiVersion, kind), or say what it is: <!-- readme-test: lockctl-config|prometheus-alerts|prometheus-config -->")
	case "go":
		if isLibraryExample(b) {
			return "TestReadmeShowsLibraryExample (pkg/lock's Example, word for word)", nil
		}
		return "TestDocsGoFragments (compiled as a function body)", nil
	case "json":
		return "TestDocsJSONBlocks (valid JSON)", nil
	case "dockerfile":
		return "TestDocsKubernetes (a job image on the Dockerfile's stages, whose build runs outside docker)", nil
	case "text":
		if b.mode == "sample" {
			return "TestDocsSamples (the lockctl command lines shown parse)", nil
		}
		return "", fmt.Errorf("a ```text block is output shown as an illustration: say so, and what it shows, with <!-- readme-test: sample (...) -->")
	case "":
		return "", fmt.Errorf("a code block needs a language (```sh, ```text, ...): no test covers a block without one")
	}
	return "", fmt.Errorf("no test covers ```%s blocks", b.lang)
}

// TestDocsBlocksCovered: every code block of every page is checked by a
// test (blockCoverage); a block none covers is an error.
func TestDocsBlocksCovered(t *testing.T) {
	n := map[string]int{}
	for _, b := range allBlocks(t, docPages(t)) {
		test, err := blockCoverage(b)
		if err != nil {
			t.Errorf("%s: ```%s block: %v", b.where(), b.lang, err)
			continue
		}
		n[strings.Fields(test)[0]]++
	}
	t.Logf("blocks per test: %v", n)
}

// TestDocsUncoveredBlockFails: a page with a block that no test covers
// fails TestDocsBlocksCovered's check, and one whose blocks are all covered
// passes it.
func TestDocsUncoveredBlockFails(t *testing.T) {
	for _, tc := range []struct {
		page string
		ok   bool
	}{
		{"```sh\nlockctl ls\n```\n", true},
		{"<!-- readme-test: sample (the waiting line) -->\n```text\nlockctl: waiting for deploy\n```\n", true},
		{"```\nlockctl: waiting for deploy\n```\n", false},                    // no language
		{"```text\nlockctl: waiting for deploy\n```\n", false},                // output, not marked as a sample
		{"```python\nprint(1)\n```\n", false},                                 // no test runs Python
		{"```yaml\nretries: 3\n```\n", false},                                 // a YAML block of nothing known
		{"```ini\n[Service]\nType=oneshot\n```\n", false},                     // a unit without its path
		{"<!-- readme-test: sample (a session) -->\n```sh\nls\n```\n", false}, // sample is for text
	} {
		var errs []error
		for _, b := range readmeBlocks(t, "docs/untested.md", tc.page) {
			if _, err := blockCoverage(b); err != nil {
				errs = append(errs, err)
			}
		}
		if (len(errs) == 0) != tc.ok {
			t.Errorf("page %q: coverage errors %v, want ok=%v", tc.page, errs, tc.ok)
		}
	}
}

var (
	fenceRE    = regexp.MustCompile("^```")
	headingRE  = regexp.MustCompile(`^(#{1,6}) +(.+?) *#*$`)
	codeSpanRE = regexp.MustCompile("`+[^`]*`+")
	linkRE     = regexp.MustCompile(`\]\(([^()\s]+)\)`)
)

// proseLines calls f with each line of text outside fenced code blocks.
func proseLines(text string, f func(i int, l string)) {
	in := false
	for i, l := range strings.Split(text, "\n") {
		if fenceRE.MatchString(l) {
			in = !in
			continue
		}
		if !in {
			f(i, l)
		}
	}
}

// githubAnchors returns the anchors GitHub gives the headings of a
// Markdown page: the heading's text lowercased, with everything but
// letters, digits, spaces, hyphens and underscores dropped and spaces made
// hyphens; a repeated anchor gets -1, -2, ...
func githubAnchors(text string) []string {
	var anchors []string
	seen := map[string]int{}
	proseLines(text, func(_ int, l string) {
		m := headingRE.FindStringSubmatch(l)
		if m == nil {
			return
		}
		a := githubAnchor(m[2])
		if n := seen[a]; n > 0 {
			seen[a]++
			a = fmt.Sprintf("%s-%d", a, n)
		} else {
			seen[a] = 1
		}
		anchors = append(anchors, a)
	})
	return anchors
}

// htmlAnchorRE finds an HTML anchor a page sets by hand (`<a id="x"></a>`),
// for a link into a paragraph rather than a heading.
var htmlAnchorRE = regexp.MustCompile(`<a (?:id|name)="([^"]+)"`)

// linkTargets returns every #anchor a link into a page may name: its
// headings' and its HTML anchors'.
func linkTargets(text string) []string {
	targets := githubAnchors(text)
	proseLines(text, func(_ int, l string) {
		for _, m := range htmlAnchorRE.FindAllStringSubmatch(l, -1) {
			targets = append(targets, m[1])
		}
	})
	return targets
}

func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// linkErrors checks the links of pages: a relative link must name a file
// of the checkout (root), and an #anchor one of the headings of the
// Markdown page it points to (or of the page itself).
func linkErrors(root string, pages []docpages.Page) []string {
	var errs []string
	anchorsOf := map[string][]string{}
	for _, p := range pages {
		anchorsOf[p.Path] = linkTargets(p.Text)
	}
	anchors := func(file string) ([]string, error) {
		if a, ok := anchorsOf[file]; ok {
			return a, nil
		}
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(file)))
		if err != nil {
			return nil, err
		}
		anchorsOf[file] = linkTargets(string(b))
		return anchorsOf[file], nil
	}
	for _, p := range pages {
		proseLines(p.Text, func(i int, l string) {
			for _, m := range linkRE.FindAllStringSubmatch(codeSpanRE.ReplaceAllString(l, "code"), -1) {
				target := m[1]
				if regexp.MustCompile(`^[a-z]+:`).MatchString(target) {
					continue // https:, mailto:
				}
				file, frag, _ := strings.Cut(target, "#")
				where := fmt.Sprintf("%s:%d: link %q", p.Path, i+1, target)
				if file == "" {
					file = p.Path
				} else {
					if strings.HasPrefix(file, "/") {
						errs = append(errs, where+": an absolute path breaks outside GitHub; link relative to the page")
						continue
					}
					file = path.Clean(path.Join(path.Dir(p.Path), file))
					if strings.HasPrefix(file, "../") {
						errs = append(errs, where+": points outside the checkout")
						continue
					}
					if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(file))); err != nil {
						errs = append(errs, fmt.Sprintf("%s: %s does not exist", where, file))
						continue
					}
				}
				if frag == "" {
					continue
				}
				if !strings.HasSuffix(file, ".md") {
					errs = append(errs, fmt.Sprintf("%s: an anchor into %s, which is no Markdown page", where, file))
					continue
				}
				a, err := anchors(file)
				if err != nil {
					errs = append(errs, fmt.Sprintf("%s: %v", where, err))
					continue
				}
				found := false
				for _, x := range a {
					found = found || x == frag
				}
				if !found {
					errs = append(errs, fmt.Sprintf("%s: %s has no heading with the anchor #%s", where, file, frag))
				}
			}
		})
	}
	return errs
}

// TestDocsLinks: every relative link and #anchor of every page leads
// somewhere.
func TestDocsLinks(t *testing.T) {
	for _, e := range linkErrors(".", docPages(t)) {
		t.Error(e)
	}
}

// TestDocsLinkCheckFindsBroken: the link check refuses a missing file, a
// missing anchor in another page and in the page itself, and accepts links
// made by GitHub's anchor rules.
func TestDocsLinkCheckFindsBroken(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	other := "# Other\n\n## `lockctl run`: hold a lock\n\n## Notes\n\n## Notes\n"
	writeFile(t, filepath.Join(root, "docs", "other.md"), other)
	pages := []docpages.Page{
		{Path: "README.md", Text: "[ok](docs/other.md#lockctl-run-hold-a-lock) [ok](docs/other.md#notes-1) [ok](#top) [web](https://example.com/x#y)\n\n## Top\n"},
		{Path: "docs/other.md", Text: other},
		{Path: "docs/a.md", Text: "# A\n\n[missing file](missing.md) [bad anchor](other.md#lockctl-run) [own](#nowhere) [out](../../etc/passwd)\n\n```sh\n[in a block](nowhere.md)\n```\n"},
	}
	errs := linkErrors(root, pages)
	want := []string{"missing.md", "#lockctl-run", "#nowhere", "outside the checkout"}
	if len(errs) != len(want) {
		t.Fatalf("got %d errors, want %d: %q", len(errs), len(want), errs)
	}
	for i, w := range want {
		if !strings.Contains(errs[i], w) || !strings.HasPrefix(errs[i], "docs/a.md:3:") {
			t.Errorf("error %d = %q, want one at docs/a.md:3 about %s", i, errs[i], w)
		}
	}
}

// TestDocsTableOfContents: each page under docs/ opens with a table of
// contents that links to every one of its ## and ### sections, before the
// first of them.
func TestDocsTableOfContents(t *testing.T) {
	for _, p := range docPages(t) {
		if !strings.HasPrefix(p.Path, "docs/") {
			continue
		}
		lines := strings.Split(p.Text, "\n")
		if !strings.HasPrefix(lines[0], "# ") {
			t.Errorf("%s: the page does not start with its title (# ...)", p.Path)
		}
		toc := map[string]bool{}
		first := -1
		proseLines(p.Text, func(i int, l string) {
			if first >= 0 {
				return
			}
			if strings.HasPrefix(l, "## ") {
				first = i
				return
			}
			for _, m := range linkRE.FindAllStringSubmatch(l, -1) {
				if strings.HasPrefix(m[1], "#") {
					toc[m[1][1:]] = true
				}
			}
		})
		if first < 0 {
			t.Errorf("%s: no ## sections", p.Path)
			continue
		}
		anchors := githubAnchors(p.Text)
		i := 0
		proseLines(p.Text, func(n int, l string) {
			m := headingRE.FindStringSubmatch(l)
			if m == nil {
				return
			}
			a := anchors[i]
			i++
			if (m[1] == "##" || m[1] == "###") && !toc[a] {
				t.Errorf("%s:%d: section %q is not in the table of contents at the top of the page", p.Path, n+1, m[2])
			}
		})
	}
}

// TestDocsJSONBlocks: every ```json block is JSON.
func TestDocsJSONBlocks(t *testing.T) {
	for _, b := range allBlocks(t, docPages(t)) {
		if b.lang == "json" && !json.Valid([]byte(b.text)) {
			var v any
			t.Errorf("%s: ```json block is not JSON: %v", b.where(), json.Unmarshal([]byte(b.text), &v))
		}
	}
}

// TestDocsSamples: a sample of output (```text) that shows the command
// producing it (a line "$ lockctl ...") shows a command lockctl accepts.
func TestDocsSamples(t *testing.T) {
	for _, b := range allBlocks(t, docPages(t)) {
		if b.lang != "text" {
			continue
		}
		for i, l := range strings.Split(b.text, "\n") {
			if !strings.HasPrefix(l, "$ ") {
				continue
			}
			for _, c := range findLockctlCalls(strings.TrimPrefix(l, "$ "), true) {
				if err := checkLockctlArgs(c.args); err != nil {
					t.Errorf("%s: sample of lockctl %s: %v", b.at(i), strings.Join(c.args, " "), err)
				}
			}
		}
	}
}

// TestDocsGoFragments: a ```go block other than the library's Example is
// a fragment of a function of (ctx, client) returning an error, and
// compiles as one (go vet, so it is type-checked against pkg/).
func TestDocsGoFragments(t *testing.T) {
	pkgs := map[string]string{
		"context": "context", "errors": "errors", "fmt": "fmt", "time": "time",
		"lock": "github.com/lockctl/lockctl/pkg/lock", "events": "github.com/lockctl/lockctl/pkg/events",
		"limit": "github.com/lockctl/lockctl/pkg/limit", "once": "github.com/lockctl/lockctl/pkg/once",
		"inspect": "github.com/lockctl/lockctl/pkg/inspect",
		"redis":   "github.com/redis/go-redis/v9",
	}
	n := 0
	for _, b := range allBlocks(t, docPages(t)) {
		if b.lang != "go" || isLibraryExample(b) {
			continue
		}
		n++
		used := map[string]bool{"context": true, "redis": true}
		for _, m := range regexp.MustCompile(`\b([a-z]+)\.[A-Za-z]`).FindAllStringSubmatch(b.text, -1) {
			if pkgs[m[1]] != "" {
				used[m[1]] = true
			}
		}
		var imports []string
		for p := range used {
			imports = append(imports, fmt.Sprintf("%q", pkgs[p]))
		}
		sort.Strings(imports)
		src := "package fragment\n\nimport (\n\t" + strings.Join(imports, "\n\t") + "\n)\n\n" +
			"func fragment(ctx context.Context, client *redis.Client) error {\n" + b.text + "\treturn nil\n}\n"
		file := filepath.Join(t.TempDir(), "fragment.go")
		writeFile(t, file, src)
		c := exec.Command("go", "vet", file)
		if out, err := c.CombinedOutput(); err != nil {
			t.Errorf("%s: ```go block does not compile as the body of func(ctx context.Context, client *redis.Client) error: %v\n%s\n--- as compiled\n%s", b.where(), err, out, src)
		}
	}
	if n == 0 {
		t.Log("no go fragments")
	}
}

// TestDocsConfigFiles: a config file shown (readme-test: lockctl-config) is
// read by lockctl without an unknown-key warning; the same file with a
// misspelt key gets one, so the check can fail.
func TestDocsConfigFiles(t *testing.T) {
	lockctl, err := exec.LookPath("lockctl")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, b := range allBlocks(t, docPages(t)) {
		if b.mode != "lockctl-config" {
			continue
		}
		n++
		for _, tc := range []struct {
			text string
			warn bool
		}{{b.text, false}, {b.text + "tll: 1m\n", true}} {
			f := filepath.Join(t.TempDir(), "config.yaml")
			writeFile(t, f, tc.text)
			// A free port: the command fails to connect after reading
			// the file, which is all this needs.
			out, _ := exec.Command(lockctl, "--config", f, "--url", "redis://127.0.0.1:1/0", "--timeout", "1s", "lock", "probe", "--test").CombinedOutput()
			got := strings.Contains(string(out), "unknown key")
			if got != tc.warn {
				t.Errorf("%s: config file read with unknown-key warning %v, want %v:\n%s\n--- output\n%s", b.where(), got, tc.warn, tc.text, out)
			}
		}
	}
	if n == 0 {
		t.Error("no page shows a config file (readme-test: lockctl-config)")
	}
}

// TestDocsPrometheusBlocks: alerts shown (readme-test: prometheus-alerts)
// are those of deploy/prometheus/lockctl-rules.yml, expression for
// expression, and a Prometheus configuration shown (prometheus-config)
// passes promtool check config with its rule file pointed at that file.
func TestDocsPrometheusBlocks(t *testing.T) {
	type rule struct {
		Alert string `yaml:"alert"`
		Expr  string `yaml:"expr"`
	}
	var rules struct {
		Groups []struct {
			Rules []rule `yaml:"rules"`
		} `yaml:"groups"`
	}
	const rulesFile = "deploy/prometheus/lockctl-rules.yml"
	src, err := os.ReadFile(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(src, &rules); err != nil {
		t.Fatal(err)
	}
	exprs := map[string]string{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs[r.Alert] = strings.Join(strings.Fields(r.Expr), " ")
		}
	}
	saw := map[string]bool{}
	for _, b := range allBlocks(t, docPages(t)) {
		switch b.mode {
		case "prometheus-alerts":
			saw[b.mode] = true
			var shown []rule
			if err := yaml.Unmarshal([]byte(b.text), &shown); err != nil || len(shown) == 0 {
				t.Errorf("%s: not a list of alerts: %v", b.where(), err)
				continue
			}
			for _, r := range shown {
				want, ok := exprs[r.Alert]
				switch {
				case !ok:
					t.Errorf("%s: alert %q is not in %s", b.where(), r.Alert, rulesFile)
				case strings.Join(strings.Fields(r.Expr), " ") != want:
					t.Errorf("%s: alert %q is\n  %s\nbut %s has\n  %s", b.where(), r.Alert, r.Expr, rulesFile, want)
				}
			}
		case "prometheus-config":
			saw[b.mode] = true
			promtool, err := promtest.Need("promtool")
			if err != nil {
				t.Fatal(err)
			}
			abs, err := filepath.Abs(rulesFile)
			if err != nil {
				t.Fatal(err)
			}
			cfg := regexp.MustCompile(`/etc/prometheus/lockctl-rules\.yml`).ReplaceAllString(b.text, abs)
			f := filepath.Join(t.TempDir(), "prometheus.yml")
			writeFile(t, f, cfg)
			if out, err := exec.Command(promtool, "check", "config", f).CombinedOutput(); err != nil {
				t.Errorf("%s: promtool check config: %v\n%s", b.where(), err, out)
			}
		}
	}
	for _, m := range []string{"prometheus-alerts", "prometheus-config"} {
		if !saw[m] {
			t.Errorf("no page has a readme-test: %s block", m)
		}
	}
}

// README.md stays short: what lockctl is, install, the first commands, an
// example for each kind of user and the map of docs/.
const readmeMaxLines = 200

// TestReadmeShort: README.md has at most readmeMaxLines lines, and its
// first commands are the two a newcomer needs: simulate, which needs no
// server, then the whole test suite. The simulate line runs as written
// (lockctl here is this test binary) with no Redis to reach, and make
// knows the target.
func TestReadmeShort(t *testing.T) {
	src, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page under docs/ and link it", n, readmeMaxLines)
	}
	blocks := readmeBlocks(t, "README.md", string(src))
	if len(blocks) == 0 {
		t.Fatal("README.md has no code block")
	}
	var cmds [][]string
	for _, ll := range logicalLines(blocks[0].text) {
		if w := shellwords.Split(shellwords.StripComment(ll.text)); len(w) > 0 {
			cmds = append(cmds, w)
		}
	}
	want := [][]string{{"go", "run", ".", "simulate", "stale-del"}, {"make", "test"}}
	if fmt.Sprint(cmds) != fmt.Sprint(want) {
		t.Fatalf("%s: README.md's first commands are %q, want %q", blocks[0].where(), cmds, want)
	}
	lockctl, err := exec.LookPath("lockctl")
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(lockctl, cmds[0][3:]...)
	c.Env = append(os.Environ(), "LOCKCTL_URL=redis://127.0.0.1:1/0", "REDIS_URL=redis://127.0.0.1:1/0")
	out, err := c.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "UNSAFE") || !strings.Contains(string(out), "SAFE") {
		t.Errorf("lockctl %s with no server: %v\n%s", strings.Join(cmds[0][3:], " "), err, out)
	}
	if out, err := exec.Command("make", "-n", "test").CombinedOutput(); err != nil {
		t.Errorf("make -n test: %v\n%s", err, out)
	}
}

// renewClaimRE finds what a page says of the renewal period: "renews every
// ttl/6", "renewed every 10 s" after a `--ttl`.
var renewClaimRE = regexp.MustCompile(`(?i)\brenew(?:s|ed)? every (?:--)?ttl ?/ ?(\d+)\b|\((?:` + "`" + `(\d+)([smh])` + "`" + `|(\d+)([smh])) above, renewed every (\d+) ?s\)`)

// TestDocsRenewalPeriod: every page that says how often a lease is renewed
// says what leasetime.DefaultRenewEvery does (ttl/6), and a TTL shown "renewed
// every N s" is renewed every ttl/6 of it. Only `once`'s claims renew
// every ttl/3 (a line that names once is left alone).
func TestDocsRenewalPeriod(t *testing.T) {
	for _, p := range docPages(t) {
		proseLines(p.Text, func(i int, l string) {
			if strings.Contains(l, "once") {
				return
			}
			for _, m := range renewClaimRE.FindAllStringSubmatch(l, -1) {
				if m[1] != "" {
					if n, _ := strconv.Atoi(m[1]); n == 0 || leasetime.DefaultRenewEvery(time.Hour) != time.Hour/time.Duration(n) {
						t.Errorf("%s:%d: %q: the default renewal period is %v of an hour's lease (leasetime.DefaultRenewEvery)", p.Path, i+1, m[0], leasetime.DefaultRenewEvery(time.Hour))
					}
					continue
				}
				num, unit := m[2]+m[4], m[3]+m[5]
				ttl, err := time.ParseDuration(num + unit)
				if err != nil {
					t.Fatalf("%s:%d: %q: %v", p.Path, i+1, m[0], err)
				}
				if every, _ := strconv.Atoi(m[6]); time.Duration(every)*time.Second != leasetime.DefaultRenewEvery(ttl) {
					t.Errorf("%s:%d: %q: a %v lease is renewed every %v (leasetime.DefaultRenewEvery)", p.Path, i+1, m[0], ttl, leasetime.DefaultRenewEvery(ttl))
				}
			}
		})
	}
}
