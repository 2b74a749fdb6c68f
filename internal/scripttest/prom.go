package scripttest

import (
	"github.com/lockctl/lockctl/internal/promtest"
	"github.com/rogpeppe/go-internal/testscript"
)

// need BIN...: fail, naming the install command, unless every BIN is on PATH.
func cmdNeed(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) == 0 {
		ts.Fatalf("usage: need BIN...")
	}
	for _, b := range args {
		if _, err := promtest.Need(b); err != nil {
			ts.Fatalf("%v", err)
		}
	}
}

// node-exporter DIR: start node_exporter with only its textfile collector,
// reading DIR, and export NODE_EXPORTER_URL.
func cmdNodeExporter(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: node-exporter DIR")
	}
	p, err := promtest.NodeExporter(ts.MkAbs(args[0]), ts.Getenv("WORK"))
	ts.Check(err)
	ts.Defer(p.Stop)
	ts.Setenv("NODE_EXPORTER_URL", p.URL)
}

// httpget URL: GET URL; its body becomes stdout (a status other than 200 fails).
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: httpget URL")
	}
	body, err := promtest.Get(args[0])
	if neg {
		if err == nil {
			ts.Fatalf("httpget %s succeeded", args[0])
		}
		return
	}
	ts.Check(err)
	ts.Stdout().Write([]byte(body))
}
