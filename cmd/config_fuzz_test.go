package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
)

// FuzzConfig feeds config files and settings from the environment to the
// settings of a few commands (resolve, as every command runs it): whatever
// the bytes, reading them never panics nor hangs, and either applies or is
// refused as a usage error (64).
func FuzzConfig(f *testing.F) {
	for _, s := range []struct{ yaml, noEvents, timeout string }{
		{"", "", ""},
		{"ttl: 45s\nprefix: 'cfg:'\n", "", ""},
		{"verbose: yes\nnonblock: on\nrun:\n  nonblock: YES\n  ttl: 3m\n", "yes", "2s"},
		{"events: off\n", "maybe", "1d"},
		{"wait: 10s\nlock:\n  wait: 5m\n  nonblock: true\n", "", ""},
		{"run: [1, 2]\nlock: 5\n", "0", "0"},
		{"Run:\n  TTL: 1m\nrun.ttl: 2m\n", "", ""},
		{"prefix: [unclosed\n  : :\n", "", ""},
		{"- a\n- b\n", "", ""},
		{"a: &a [x, x, x]\nb: &b [*a, *a, *a]\nc: [*b, *b, *b]\n", "", ""},
		{"<<: {ttl: 1m}\nurl: redis://u:secret@h:1/0\n", "", ""},
		{"cluster: [a:1, b:2]\nsentinel: {x: 1}\ntimeout: 1e9\n", "on", "-1s"},
		{"tll: 5m\nruns:\n  ttl: 3s\nrun:\n  url: x\n", "", ""},
		{"k: 1\nk: 2\n", "", ""},
		{"1: x\ntrue: y\n~: z\n", "", ""},
		{"\xff\xfe: \x00\n", "\x01", ""},
	} {
		f.Add([]byte(s.yaml), s.noEvents, s.timeout)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, text []byte, noEvents, timeout string) {
		if strings.ContainsRune(noEvents, 0) || strings.ContainsRune(timeout, 0) {
			return // no environment variable holds a NUL
		}
		path := filepath.Join(dir, "config.yaml")
		if err := os.WriteFile(path, text, 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("LOCKCTL_NO_EVENTS", noEvents)
		t.Setenv("LOCKCTL_TIMEOUT", timeout)
		for _, args := range [][]string{
			{"run", "x", "--", "true"},
			{"lock", "x"},
			{"limit", "k", "--rate", "1/s"},
			{"inspect", "locks"},
		} {
			io, _, _, _ := ui.Test()
			fac := NewFactory(io)
			root := NewRootCmd(fac)
			c, rest, err := root.Find(append(args, "--config", path))
			if err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			if err := c.ParseFlags(rest); err != nil {
				t.Fatalf("%v: %v", args, err)
			}
			done := make(chan error, 1)
			go func() { done <- fac.resolve(c) }()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				t.Fatalf("%v with config %q: resolve still running after 20s", args, text)
			}
			if err == nil {
				continue
			}
			if code, _ := exitClass(err); code != ExitUsage {
				t.Fatalf("%v with config %q, LOCKCTL_NO_EVENTS=%q, LOCKCTL_TIMEOUT=%q: exit %d (%v), want 0 or 64",
					args, text, noEvents, timeout, code, err)
			}
		}
	})
}
