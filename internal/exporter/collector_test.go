package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// allFamilies lists every family the exporter serves.
var allFamilies = []*family{descUp, descHeld, descLockHeld, descLockTTL, descLockWaiters, descOrphans,
	descWait, descHold, descAcq, descRel, descRenewFailed, descLost, descForce, descRateLimited, descScanDuration,
	descScanComplete, descChannels, descSubscribers, descClients}

// Every family has a valid, unique name, help, a kind, and valid label
// names in the sorted order the format writes them in.
func TestFamiliesWellFormed(t *testing.T) {
	metricName := regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)
	labelName := regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)
	seen := map[string]bool{}
	for _, f := range allFamilies {
		if !metricName.MatchString(f.name) || seen[f.name] {
			t.Errorf("%q: invalid or repeated name", f.name)
		}
		seen[f.name] = true
		if f.help == "" {
			t.Errorf("%s: no help", f.name)
		}
		if f.kind != kindGauge && f.kind != kindCounter && f.kind != kindHistogram {
			t.Errorf("%s: kind %q", f.name, f.kind)
		}
		if !slices.IsSorted(f.labels) {
			t.Errorf("%s: labels %q not sorted", f.name, f.labels)
		}
		for i, l := range f.labels {
			if !labelName.MatchString(l) || strings.HasPrefix(l, "__") || l == "le" || (i > 0 && f.labels[i-1] == l) {
				t.Errorf("%s: label name %q", f.name, l)
			}
		}
	}
}

func TestFloatFormat(t *testing.T) {
	for _, c := range []struct {
		v    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {1, "1"}, {-1, "-1"}, {0.5, "0.5"}, {0.001, "0.001"},
		{0.0001, "0.0001"}, {0.00001, "1e-05"}, {999999, "999999"}, {1e6, "1e+06"}, {1234567, "1.234567e+06"},
		{1800, "1800"}, {3601.25, "3601.25"}, {1.0 / 3, "0.3333333333333333"}, {math.MaxFloat64, "1.7976931348623157e+308"},
		{5e-324, "5e-324"}, {float64(math.MaxUint64), "1.8446744073709552e+19"},
		{math.NaN(), "NaN"}, {math.Inf(1), "+Inf"}, {math.Inf(-1), "-Inf"},
	} {
		if got := formatFloat(c.v); got != c.want {
			t.Errorf("formatFloat(%v) = %s, want %s", c.v, got, c.want)
		}
	}
}

// Label values escape backslash, double quote and newline; help text
// backslash and newline only; a histogram writes cumulative buckets by
// bound, +Inf with the count, _sum and _count; series come sorted by label
// values and families by name.
func TestExpositionText(t *testing.T) {
	g := &family{"b_gauge", "a \"quoted\" help\\ on\ntwo lines", kindGauge, []string{"name"}}
	h := &family{"a_hist", "H.", kindHistogram, []string{"key", "name"}}
	x := newExposition()
	x.gauge(g, 2, "z")
	x.gauge(g, 1.5, "q\"b\\n\nl")
	x.histogram(h, 7, 0.25, map[float64]uint64{1: 5, 0.1: 3}, "k", "é")
	var b bytes.Buffer
	if err := x.writeTo(&b, nil); err != nil {
		t.Fatal(err)
	}
	want := `# HELP a_hist H.
# TYPE a_hist histogram
a_hist_bucket{key="k",name="é",le="0.1"} 3
a_hist_bucket{key="k",name="é",le="1"} 5
a_hist_bucket{key="k",name="é",le="+Inf"} 7
a_hist_sum{key="k",name="é"} 0.25
a_hist_count{key="k",name="é"} 7
# HELP b_gauge a "quoted" help\\ on\ntwo lines
# TYPE b_gauge gauge
b_gauge{name="q\"b\\n\nl"} 1.5
b_gauge{name="z"} 2
`
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// One bad series is left out with its error, never the others: a label
// value that is not UTF-8, a label set collected twice (the first is
// kept), a wrong number of label values, a value of another kind; a family
// left with no series is not written at all.
func TestExpositionLeavesBadSeriesOut(t *testing.T) {
	g := &family{"g", "G.", kindGauge, []string{"name"}}
	lone := &family{"lone", "L.", kindCounter, []string{"name"}}
	x := newExposition()
	x.gauge(g, 1, "good")
	x.gauge(g, 2, "bad\xff")
	x.gauge(g, 3, "good")
	x.gauge(g, 4, "a", "b")
	x.counter(g, 5, "counter")
	x.histogram(g, 1, 1, nil, "hist")
	x.counter(lone, 1, "\xc3")
	x.gauge(g, 6, "other")
	var b bytes.Buffer
	if err := x.writeTo(&b, nil); err != nil {
		t.Fatal(err)
	}
	want := "# HELP g G.\n# TYPE g gauge\ng{name=\"good\"} 1\ng{name=\"other\"} 6\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
	if len(x.errs) != 6 {
		t.Errorf("%d errors, want 6: %v", len(x.errs), x.errs)
	}
}

// A bad series in the exporter's own state (here, a scanned name that is
// not UTF-8 and one that appears twice, which Scan never lets through)
// costs that series only: /metrics answers 200 with every other series and
// the errors go to the log.
func TestScrapeSurvivesBadSeries(t *testing.T) {
	var mu sync.Mutex
	var logged []string
	e := New(Config{Logf: func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(format, args...))
	}})
	e.reachable = true
	e.scan = scanResult{ok: true, held: 3, locks: []lockGauge{
		{name: "ok", held: 1, heldKnown: true},
		{name: "bad\xff", held: 2, heldKnown: true},
		{name: "ok", held: 3, heldKnown: true},
	}}
	out := scrape(t, e)
	for _, want := range []string{"\nlockctl_up 1\n", "\nlockctl_locks_held 3\n", "\nlockctl_lock_held_seconds{name=\"ok\"} 1\n", "\nlockctl_lock_waiters{name=\"ok\"} 0\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "bad") || strings.Contains(out, "} 3\n") {
		t.Errorf("a bad series was served:\n%s", out)
	}
	mu.Lock()
	defer mu.Unlock()
	// Each bad lock costs its held and waiters series.
	if len(logged) != 4 || !strings.Contains(strings.Join(logged, "\n"), "not valid UTF-8") || !strings.Contains(strings.Join(logged, "\n"), "collected twice") {
		t.Errorf("logged %q", logged)
	}
}

func TestAcceptsGzip(t *testing.T) {
	for _, c := range []struct {
		header []string
		gzip   bool
	}{
		{nil, false},
		{[]string{"gzip"}, true},
		{[]string{"GZIP"}, true},
		{[]string{"identity"}, false},
		{[]string{"deflate, gzip;q=0.8"}, true},
		{[]string{"br", "gzip"}, true},
		{[]string{"gzip;q=0"}, false},
		{[]string{"gzip;q=0.5, identity"}, false},
		{[]string{"gzip, identity;q=0.5"}, true},
		{[]string{"*"}, false},
		{[]string{"*;q=0.5, gzip"}, true},
		{[]string{"gzip;q=x"}, false},
		{[]string{"deflate"}, false},
	} {
		h := http.Header{}
		for _, v := range c.header {
			h.Add("Accept-Encoding", v)
		}
		if got := acceptsGzip(h); got != c.gzip {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", c.header, got, c.gzip)
		}
	}
}

// /metrics is the text format 0.0.4, gzip-compressed when asked, the
// same series either way; name[] keeps only the families named.
func TestMetricsHTTP(t *testing.T) {
	e := New(Config{})
	e.reachable = true
	e.scan = scanResult{ok: true, held: 1, duration: 1500 * time.Microsecond, locks: []lockGauge{{name: "a", ttl: 5, ttlKnown: true}}}
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	client := &http.Client{Transport: &http.Transport{DisableCompression: true}}
	get := func(path, encoding string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, srv.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if encoding != "" {
			req.Header.Set("Accept-Encoding", encoding)
		}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != 200 {
			t.Fatalf("%s: %s", path, resp.Status)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "text/plain; version=0.0.4; charset=utf-8" {
			t.Errorf("Content-Type %q", ct)
		}
		return resp, b
	}
	resp, plain := get("/metrics", "")
	if resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("Content-Encoding %q unasked", resp.Header.Get("Content-Encoding"))
	}
	if !strings.Contains(string(plain), "\nlockctl_lock_ttl_seconds{name=\"a\"} 5\n") || !strings.Contains(string(plain), "\nlockctl_scan_duration_seconds 0.0015\n") {
		t.Errorf("plain:\n%s", plain)
	}
	resp, zipped := get("/metrics", "gzip")
	if resp.Header.Get("Content-Encoding") != "gzip" || !slices.Contains(resp.Header.Values("Vary"), "Accept-Encoding") {
		t.Errorf("headers %v", resp.Header)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		t.Fatal(err)
	}
	unzipped, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(unzipped, plain) {
		t.Errorf("gzip body differs:\n%s\n---\n%s", unzipped, plain)
	}
	_, some := get("/metrics?name[]=lockctl_up&name[]=lockctl_lock_ttl_seconds", "")
	if !strings.HasPrefix(string(some), "# HELP lockctl_lock_ttl_seconds ") || strings.Count(string(some), "# TYPE ") != 2 || !strings.Contains(string(some), "\nlockctl_up 1\n") {
		t.Errorf("name[] filter:\n%s", some)
	}
}
