package exporter

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"strings"
	"sync"
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
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
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

// logRecorder collects what an Exporter logs.
type logRecorder struct {
	mu    sync.Mutex
	lines []string
}

func (l *logRecorder) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *logRecorder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

func wantLines(t *testing.T, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("lacks %q:\n%s", w, out)
		}
	}
}

// Durations that a time.Duration cannot hold (NaN, Inf, 1e308 ms), planted
// in the event stream by another client, are malformed entries: counted as
// such and never observed, so no histogram sum turns negative, neither
// served nor stored for the next exporter.
func TestNonFiniteDurationsAreMalformed(t *testing.T) {
	s := redistest.StartTest(t, nil)
	c := s.Client(t)
	ctx := context.Background()
	for _, ms := range []string{"NaN", "Inf", "+Inf", "1e308", "5", "-0"} {
		for _, kind := range []string{"acquired", "released"} {
			if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "lockctl:events", Values: []any{"k", kind, "n", "x", "ms", ms}}).Err(); err != nil {
				t.Fatal(err)
			}
		}
	}
	for round := 0; round < 2; round++ { // the second: a restarted exporter, from the stored totals
		e := New(Config{Client: c, Inspector: inspect.New(c, nil), MaxNames: 10})
		if err := e.ReadEvents(ctx); err != nil {
			t.Fatal(err)
		}
		out := scrape(t, e)
		wantLines(t, out,
			"\nlockctl_events_malformed_total 8\n",
			"\nlockctl_acquire_wait_seconds_sum{name=\"x\"} 0.005\n",
			"\nlockctl_acquire_wait_seconds_count{name=\"x\"} 2\n",
			"\nlockctl_hold_seconds_sum{name=\"x\"} 0.005\n",
			"\nlockctl_hold_seconds_count{name=\"x\"} 1\n",
			"\nlockctl_acquisitions_total{name=\"x\",result=\"acquired\"} 2\n",
			"\nlockctl_releases_total{name=\"x\",result=\"released\"} 2\n",
		)
		raw, err := c.Get(ctx, "lockctl:events:exporter").Result()
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(raw, `"sum":-`) {
			t.Fatalf("round %d: a negative sum was stored: %s", round, raw)
		}
	}
}

// A stored state the exporter cannot read (not JSON, another type, a
// histogram sum no observation can make) is no reason to stop: the
// exporter says so, starts afresh from the stream and overwrites it;
// /healthz, the gauges and the counters carry on.
func TestUnreadableStateStartsAfresh(t *testing.T) {
	for _, c := range []struct {
		name  string
		plant func(ctx context.Context, c *redis.Client) error
	}{
		{"not json", func(ctx context.Context, c *redis.Client) error {
			return c.Set(ctx, "lockctl:events:exporter", "{not json", 0).Err()
		}},
		{"another type", func(ctx context.Context, c *redis.Client) error {
			return c.RPush(ctx, "lockctl:events:exporter", "x").Err()
		}},
		{"negative sum", func(ctx context.Context, c *redis.Client) error {
			return c.Set(ctx, "lockctl:events:exporter", `{"last_id":"","names":{"x":{"counts":{"acquired":1},"wait":{"counts":[1],"sum":-9223372036.854776,"count":1},"hold":{"counts":null,"sum":0,"count":0}}},"keys":{},"missed":0}`, 0).Err()
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := redistest.StartTest(t, nil)
			rc := s.Client(t)
			ctx := context.Background()
			if err := c.plant(ctx, rc); err != nil {
				t.Fatal(err)
			}
			if err := rc.Set(ctx, "lock:held", "x", time.Minute).Err(); err != nil {
				t.Fatal(err)
			}
			if err := rc.XAdd(ctx, &redis.XAddArgs{Stream: "lockctl:events", Values: []any{"k", "acquired", "n", "held", "ms", "2"}}).Err(); err != nil {
				t.Fatal(err)
			}
			var log logRecorder
			e := New(Config{Client: rc, Inspector: inspect.New(rc, nil), MaxNames: 10, Logf: log.logf})
			if err := e.Scan(ctx); err != nil {
				t.Fatalf("scan: %v", err)
			}
			if err := e.ReadEvents(ctx); err != nil {
				t.Fatalf("events: %v", err)
			}
			srv := httptest.NewServer(e.Handler())
			defer srv.Close()
			resp, err := http.Get(srv.URL + "/healthz")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("/healthz: %s %s", resp.Status, body)
			}
			wantLines(t, scrape(t, e),
				"\nlockctl_up 1\n",
				"\nlockctl_locks_held 1\n",
				"\nlockctl_lock_ttl_seconds{name=\"held\"} ",
				"\nlockctl_acquisitions_total{name=\"held\",result=\"acquired\"} 1\n",
				"\nlockctl_acquire_wait_seconds_sum{name=\"held\"} 0.002\n",
				"\nlockctl_exporter_state_discarded_total 1\n",
			)
			if l := log.String(); !strings.Contains(l, "lockctl:events:exporter") || !strings.Contains(l, "starting afresh") {
				t.Errorf("logged %q", l)
			}
			// Overwritten with totals a restart can read.
			raw, err := rc.Get(ctx, "lockctl:events:exporter").Bytes()
			if err != nil {
				t.Fatal(err)
			}
			back := newTotals()
			if err := json.Unmarshal(raw, back); err != nil || back.Names["held"] == nil || back.Names["x"] != nil {
				t.Errorf("stored %s (%v)", raw, err)
			}
		})
	}
}
