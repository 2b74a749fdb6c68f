package scripttest

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/promtest"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
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

// node-exporter DIR [VAR]: start node_exporter with only its textfile
// collector, reading DIR, and export its URL as VAR (NODE_EXPORTER_URL by
// default): one per simulated host.
func cmdNodeExporter(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: node-exporter DIR [VAR]")
	}
	dir := ts.MkAbs(args[0])
	p, err := promtest.NodeExporter(dir, dir)
	ts.Check(err)
	ts.Defer(p.Stop)
	v := "NODE_EXPORTER_URL"
	if len(args) == 2 {
		v = args[1]
	}
	ts.Setenv(v, p.URL)
}

// httpget [-fresh] URL: GET URL; its body becomes stdout (a status other
// than 200 fails). -fresh uses a new connection, never one kept alive from
// an earlier request.
func cmdHTTPGet(ts *testscript.TestScript, neg bool, args []string) {
	get := promtest.Get
	if len(args) == 2 && args[0] == "-fresh" {
		get, args = promtest.GetFresh, args[1:]
	}
	if len(args) != 1 {
		ts.Fatalf("usage: httpget [-fresh] URL")
	}
	body, err := get(args[0])
	if neg {
		if err == nil {
			ts.Fatalf("httpget %s succeeded", args[0])
		}
		return
	}
	ts.Check(err)
	fmt.Fprint(ts.Stdout(), body)
}

// freeport VAR: set VAR to a free TCP port on 127.0.0.1.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	p, err := redistest.FreePort()
	ts.Check(err)
	ts.Setenv(args[0], strconv.Itoa(p))
}

// waithttp URL [REGEXP]: poll URL until it answers 200 (and its body
// matches REGEXP), for up to a minute; the body becomes stdout.
func cmdWaitHTTP(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: waithttp URL [REGEXP]")
	}
	var re *regexp.Regexp
	if len(args) == 2 {
		re = regexp.MustCompile("(?m)" + args[1])
	}
	deadline := time.Now().Add(time.Minute)
	var body string
	var err error
	for {
		body, err = promtest.Get(args[0])
		if err == nil && (re == nil || re.MatchString(body)) {
			fmt.Fprint(ts.Stdout(), body)
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("waithttp %s: %v; last body:\n%s", args[0], err, body)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// prometheus TARGET...: start a Prometheus server scraping each TARGET
// (host:port, or a URL) every second and export PROM_URL.
func cmdPrometheus(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 {
		ts.Fatalf("usage: prometheus TARGET...")
	}
	dir := ts.MkAbs("prometheus")
	ts.Check(os.MkdirAll(dir, 0o755))
	p, err := promtest.Prometheus(dir, args...)
	ts.Check(err)
	ts.Defer(p.Stop)
	ts.Setenv("PROM_URL", p.URL)
}

// promql QUERY WANT: poll the instant query on PROM_URL, for up to a
// minute, until it returns exactly one series whose value is WANT.
func cmdPromQL(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: promql QUERY WANT")
	}
	deadline := time.Now().Add(time.Minute)
	for {
		got, err := promtest.Query(ts.Getenv("PROM_URL"), args[0])
		if err == nil && len(got) == 1 {
			for _, v := range got {
				if v == args[1] {
					ts.Logf("%s = %s", args[0], v)
					return
				}
			}
		}
		if time.Now().After(deadline) {
			ts.Fatalf("promql %s: got %v (%v), want %s", args[0], got, err, args[1])
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// idleconns N URL: open N keep-alive connections to URL's host, each
// sending one GET of URL and reading its answer (for up to 5s), then left
// open and idle until the script ends; prints how many were answered.
func cmdIdleConns(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: idleconns N URL")
	}
	n, err := strconv.Atoi(args[0])
	ts.Check(err)
	u, err := url.Parse(args[1])
	ts.Check(err)
	conns := make([]net.Conn, 0, n)
	ts.Defer(func() {
		for _, c := range conns {
			_ = c.Close() // the script is over: some were closed by the server already
		}
	})
	var mu sync.Mutex
	answered := 0
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		c, err := net.DialTimeout("tcp", u.Host, 5*time.Second)
		if err != nil {
			ts.Logf("connection %d: %v", i, err)
			continue
		}
		conns = append(conns, c)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetDeadline(time.Now().Add(5 * time.Second)) // without it the read below may wait longer, no worse
			fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", u.RequestURI(), u.Host)
			resp, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				return
			}
			// The response came: answered, whatever becomes of its body.
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			_ = c.SetDeadline(time.Time{})
			mu.Lock()
			answered++
			mu.Unlock()
		}()
	}
	wg.Wait()
	fmt.Fprintf(ts.Stdout(), "%d answered\n", answered)
}

// dashboard FILE: hold the Grafana dashboard FILE (relative to the test's
// package directory) to its contract (promtest.Dashboard.Check), then run
// every panel's query on PROM_URL, variables expanded as for "All": each
// must be valid PromQL and return data (polled for up to a minute while
// the scrapes catch up).
func cmdDashboard(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: dashboard FILE")
	}
	d, err := promtest.LoadDashboard(args[0])
	ts.Check(err)
	ts.Check(d.Check())
	qs := d.Queries()
	deadline := time.Now().Add(time.Minute)
	pending := qs
	for {
		var still []promtest.PanelQuery
		var why []string
		for _, q := range pending {
			n, err := promtest.QueryAll(ts.Getenv("PROM_URL"), promtest.Expand(q.Expr))
			if err != nil && strings.Contains(err.Error(), "parse error") {
				ts.Fatalf("panel %q query %s: %v", q.Panel, q.RefID, err)
			}
			if err != nil || n == 0 {
				still = append(still, q)
				why = append(why, fmt.Sprintf("panel %q query %s (%s): %d series, %v", q.Panel, q.RefID, promtest.Expand(q.Expr), n, err))
			}
		}
		if len(still) == 0 {
			ts.Logf("%d queries of %d panels return data", len(qs), countPanels(qs))
			return
		}
		if time.Now().After(deadline) {
			ts.Fatalf("queries without data:\n%s", strings.Join(why, "\n"))
		}
		pending = still
		time.Sleep(500 * time.Millisecond)
	}
}

func countPanels(qs []promtest.PanelQuery) int {
	seen := map[string]bool{}
	for _, q := range qs {
		seen[q.Panel] = true
	}
	return len(seen)
}
