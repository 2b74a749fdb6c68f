package exporter

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
)

func scrape(t *testing.T, e *Exporter) string {
	t.Helper()
	srv := httptest.NewServer(e.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 200 {
		t.Fatalf("%s\n%s", resp.Status, b)
	}
	return string(b)
}

// A lock held without events gets its name from a scan; the names chosen
// are stored and a new exporter (a restart) keeps them and the bound, while
// the scan and event loops run concurrently with scrapes.
func TestNamesChosenByScanSurviveRestart(t *testing.T) {
	s := redistest.StartTest(t, nil)
	c := s.Client(t)
	ctx := context.Background()
	quiet := lock.New(c, nil) // no events
	if _, err := quiet.Acquire(ctx, "silent", time.Minute, nil); err != nil {
		t.Fatal(err)
	}
	rec := events.NewRecorder(c, nil)
	loud := lock.New(c, &lock.Options{Events: rec})
	cfg := Config{Client: c, Inspector: inspect.New(c, nil), MaxNames: 2, ScanInterval: 20 * time.Millisecond, EventInterval: 10 * time.Millisecond}
	e := New(cfg)
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); e.Run(runCtx) }()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(scrape(t, e), `lockctl_lock_held_seconds{name="silent"}`) {
		if time.Now().After(deadline) {
			t.Fatal("silent never got a series")
		}
		time.Sleep(20 * time.Millisecond)
	}
	for _, n := range []string{"first", "second", "third"} {
		l, err := loud.Acquire(ctx, n, time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
		scrape(t, e)
	}
	rec.Close()
	for !strings.Contains(scrape(t, e), `lockctl_acquisitions_total{name="_other",result="acquired"} 2`) {
		if time.Now().After(deadline) {
			t.Fatalf("events not counted:\n%s", scrape(t, e))
		}
		time.Sleep(20 * time.Millisecond)
	}
	stop()
	<-done

	e2 := New(cfg)
	if err := e2.ReadEvents(ctx); err != nil {
		t.Fatal(err)
	}
	if err := e2.Scan(ctx); err != nil {
		t.Fatal(err)
	}
	out := scrape(t, e2)
	for _, want := range []string{
		`lockctl_lock_held_seconds{name="silent"}`,
		`lockctl_acquisitions_total{name="first",result="acquired"} 1`,
		`lockctl_acquisitions_total{name="_other",result="acquired"} 2`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("after a restart, lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, `name="second"`) || strings.Contains(out, `name="third"`) {
		t.Errorf("the bound of 2 names was not kept:\n%s", out)
	}
}
