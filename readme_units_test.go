package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/promtest"
	"github.com/rogpeppe/go-internal/txtar"
)

var (
	unitNameRE = regexp.MustCompile(`^# /etc/systemd/system/(\S+\.(service|timer))$`)
	absPathRE  = regexp.MustCompile(`(^|[\s=])(/[^\s]+)`)
)

// TestReadmeSystemdUnits checks every systemd unit of the pages with
// systemd-analyze verify (after pointing its executables at stand-ins in a
// temporary directory, as verify checks that they exist), and that every
// service running `lockctl run` sets KillMode=mixed: the default
// control-group would SIGTERM the job twice, once from systemd and once
// forwarded by lockctl.
func TestReadmeSystemdUnits(t *testing.T) {
	analyze, err := promtest.Need("systemd-analyze")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	units := map[string]string{}
	var order []string
	for _, b := range allBlocks(t, docPages(t)) {
		if b.lang != "ini" {
			continue
		}
		name := ""
		for _, line := range strings.Split(b.text, "\n") {
			if u := unitNameRE.FindStringSubmatch(line); u != nil {
				name = u[1]
				order = append(order, name)
				continue
			}
			if name != "" {
				units[name] += line + "\n"
			}
		}
	}
	if len(units) < 4 {
		t.Fatalf("found %d units in the pages' ini blocks, want the service and timer examples: %v", len(units), order)
	}
	var paths []string
	for _, name := range order {
		text := units[name]
		var out strings.Builder
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			k, v, ok := strings.Cut(line, "=")
			if ok && !strings.HasPrefix(line, "#") && strings.Contains(v, " #") {
				t.Errorf("%s: %q: systemd takes no comment after a value; it becomes part of it", name, line)
			}
			if ok && strings.HasPrefix(k, "Exec") {
				// The executables: stand-ins under dir, so verify finds them.
				v = absPathRE.ReplaceAllStringFunc(v, func(p string) string {
					lead, path := "", p
					if p[0] != '/' {
						lead, path = p[:1], p[1:]
					}
					if strings.HasPrefix(path, "/var/") {
						return p // a data path, not an executable
					}
					stub := filepath.Join(dir, "bin", path)
					if err := os.MkdirAll(filepath.Dir(stub), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(stub, []byte("#!/bin/sh\n"), 0o755); err != nil {
						t.Fatal(err)
					}
					return lead + stub
				})
				line = k + "=" + v
			}
			out.WriteString(line + "\n")
		}
		if strings.HasSuffix(name, ".service") && strings.Contains(text, "lockctl run") &&
			!regexp.MustCompile(`(?m)^KillMode=mixed$`).MatchString(text) {
			t.Errorf("%s runs `lockctl run` without KillMode=mixed", name)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(out.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	args := append([]string{"verify", "--man=no", "--recursive-errors=no"}, paths...)
	out, err := exec.Command(analyze, args...).CombinedOutput()
	if err != nil || len(strings.TrimSpace(string(out))) > 0 {
		t.Fatalf("systemd-analyze %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// TestReadmeConditionalWrite: the documentation's conditional-write example is the
// script testdata/script/fence_conditional_write.txtar runs, word for word.
func TestReadmeConditionalWrite(t *testing.T) {
	var example string
	for _, b := range allBlocks(t, docPages(t)) {
		if b.lang == "sh" && strings.Contains(b.text, "# write-order.sh ") {
			example = b.text
		}
	}
	if example == "" {
		t.Fatal("no page has the write-order.sh example")
	}
	ar, err := txtar.ParseFile("testdata/script/fence_conditional_write.txtar")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range ar.Files {
		if f.Name == "write-order.sh" {
			if string(f.Data) != example {
				t.Errorf("the pages' write-order.sh:\n%s\ndiffers from the one the test runs:\n%s", example, f.Data)
			}
			return
		}
	}
	t.Fatal("fence_conditional_write.txtar has no write-order.sh")
}
