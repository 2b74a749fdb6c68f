package exporter

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/inspect"
)

// lockctl_up says whether Redis answers from the start: a first scan that
// takes long (many keys) is shown by lockctl_scan_complete 0 and absent
// gauges, not by lockctl_up 0, which pages as "Redis unreachable".
func TestUpBeforeFirstScanEnds(t *testing.T) {
	s := redistest.StartTest(t, nil)
	c := redistest.ClientFor(t, s.URL)
	ctx := context.Background()
	const keys = 50000
	if err := c.Eval(ctx, `for i = 1, tonumber(ARGV[1]) do redis.call('SET', 'lock:k' .. i, 'v', 'PX', 600000) end return 1`, nil, keys).Err(); err != nil {
		t.Fatal(err)
	}
	// SCAN COUNT 10: the first scan takes thousands of round trips.
	e := New(Config{Client: c, Inspector: inspect.New(c, &inspect.Options{Count: 10}), ScanInterval: time.Hour, Timeout: time.Minute})
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); e.Run(runCtx) }()
	defer func() { stop(); <-done }()

	sawUpScanning := false
	deadline := time.Now().Add(2 * time.Minute)
	for {
		m := scrape(t, e)
		complete := strings.Contains(m, "\nlockctl_scan_complete 1\n")
		if complete {
			if !strings.Contains(m, "\nlockctl_locks_held 50000\n") || !strings.Contains(m, "\nlockctl_up 1\n") {
				t.Fatalf("after the scan:\n%s", m)
			}
			break
		}
		if strings.Contains(m, "\nlockctl_locks_held ") {
			t.Fatalf("gauges of a scan not complete:\n%s", m)
		}
		if strings.Contains(m, "\nlockctl_up 1\n") && strings.Contains(m, "\nlockctl_scan_complete 0\n") {
			sawUpScanning = true
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first scan did not end:\n%s", m)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if !sawUpScanning {
		t.Fatal("no scrape during the first scan showed lockctl_up 1 (Redis answered PING all along)")
	}
}
