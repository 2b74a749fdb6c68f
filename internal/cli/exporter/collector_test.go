package exporter

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"
)

// A bad series in the exporter's own state (here, a scanned name that is
// not UTF-8 and one that appears twice, which Scan never lets through)
// costs that series only: /metrics answers 200 with every other series and
// the errors go to the log.
func TestScrapeSurvivesBadSeries(t *testing.T) {
	var log logRecorder
	e := New(Config{Logf: log.logf})
	e.reachable = true
	e.scan = scanResult{ok: true, held: 3, locks: []lockGauge{
		{name: "ok", held: 1, heldKnown: true},
		{name: "bad\xff", held: 2, heldKnown: true},
		{name: "ok", held: 3, heldKnown: true},
	}}
	out := scrape(t, e)
	wantLines(t, out, "\nlockctl_up 1\n", "\nlockctl_locks_held 3\n", "\nlockctl_lock_held_seconds{name=\"ok\"} 1\n", "\nlockctl_lock_waiters{name=\"ok\"} 0\n")
	if strings.Contains(out, `name="bad`) || strings.Contains(out, "} 3\n") {
		t.Errorf("a bad series was served:\n%s", out)
	}
	// Each bad lock costs its held and waiters series.
	l := log.String()
	if len(log.lines) != 4 || !strings.HasPrefix(l, "metrics: ") || strings.Count(l, "not valid UTF-8") != 2 || strings.Count(l, "collected before") != 2 {
		t.Errorf("logged %q", l)
	}
}

// /metrics is the text format 0.0.4 by default, gzip-compressed when
// asked, the same series either way; name[] keeps only the families named.
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
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4; charset=utf-8") {
			t.Errorf("Content-Type %q", ct)
		}
		return resp, b
	}
	resp, plain := get("/metrics", "")
	if resp.Header.Get("Content-Encoding") != "" {
		t.Errorf("Content-Encoding %q unasked", resp.Header.Get("Content-Encoding"))
	}
	wantLines(t, string(plain), "\nlockctl_lock_ttl_seconds{name=\"a\"} 5\n", "\nlockctl_scan_duration_seconds 0.0015\n",
		"\nlockctl_events_malformed_total 0\n", "\nlockctl_exporter_state_discarded_total 0\n")
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
