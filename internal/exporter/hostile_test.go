package exporter

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/promtest"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/redis/go-redis/v9"
)

// Names that are not UTF-8, planted by other clients (keys under the lock
// prefix, entries of the event stream), never break a scrape: /metrics
// answers 200 with every series, the bad names shown with U+FFFD (two that
// then coincide merged into one series), and promtool accepts the output.
func TestHostileNamesKeepScrapesWhole(t *testing.T) {
	s := redistest.StartTest(t, nil)
	c := s.Client(t)
	ctx := context.Background()
	for _, k := range []string{"lock:bad\xff", "lock:bad\xfe", "lock:good", "lock:\xc3"} {
		if err := c.Set(ctx, k, "x", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"bad\xff", "good", "k\xfe"} {
		for _, kind := range []string{"acquired", "released", "rate_limited"} {
			if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "lockctl:events", Values: []any{"k", kind, "n", n, "ms", "5"}}).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	e := New(Config{Client: c, Inspector: inspect.New(c, nil), MaxNames: 10})
	if err := e.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e.ReadEvents(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %s\n%s", resp.Status, body)
	}
	out := string(body)
	for _, want := range []string{
		"lockctl_up 1\n",
		"lockctl_locks_held 4\n",
		`lockctl_lock_ttl_seconds{name="good"}`,
		`lockctl_lock_ttl_seconds{name="bad` + "\uFFFD" + `"}`,
		`lockctl_lock_ttl_seconds{name="` + "\uFFFD" + `"}`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("/metrics lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "goroutine") || strings.Contains(out, ".go:") {
		t.Errorf("/metrics shows a stack trace:\n%s", out)
	}
	bin, err := promtest.Need("promtool")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "check", "metrics")
	cmd.Stdin = strings.NewReader(out)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool check metrics: %v\n%s\n%s", err, msg, out)
	}
}
