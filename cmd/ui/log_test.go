package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// Text mode is the lines lockctl always printed: "lockctl: " and the text,
// then a "lockctl: hint: " line per hint, each escaped.
func TestLogText(t *testing.T) {
	s, _, _, errOut := Test()
	s.SetLogField("name", "k")
	s.Log(Entry{Level: LevelError, Text: "held by a\x1b[2Jb", Hints: []string{"one", "two\nlines"},
		Fields: Fields("exit", 75)})
	s.Errorf("warning: %s", "careful")
	want := "lockctl: held by a\\x1b[2Jb\nlockctl: hint: one\nlockctl: hint: two\\nlines\nlockctl: warning: careful\n"
	if got := errOut.String(); got != want {
		t.Errorf("text log:\n%q\nwant\n%q", got, want)
	}
}

func TestLogJSON(t *testing.T) {
	s, _, _, errOut := Test()
	s.SetLogFormat("json")
	s.log.now = func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 6_789_000, time.FixedZone("X", 3600)) }
	s.SetLogField("name", "k\u202e")
	s.Log(Entry{Level: LevelError, Text: "not acquired", Hints: []string{"wait"},
		Fields: Fields("exit", 75, "ttl_ms", 1500*time.Millisecond, "error", fmt.Errorf("boom"))})
	s.Errorf("warning: careful")
	s.Log(Entry{Level: LevelInfo, Text: "other", Fields: Fields("name", "other")})
	want := `{"time":"2026-01-02T02:04:05.006Z","level":"error","msg":"not acquired","name":"k\u202e","exit":75,"ttl_ms":1500,"error":"boom","hint":["wait"]}
{"time":"2026-01-02T02:04:05.006Z","level":"warn","msg":"careful","name":"k\u202e"}
{"time":"2026-01-02T02:04:05.006Z","level":"info","msg":"other","name":"other"}
`
	if got := errOut.String(); got != want {
		t.Errorf("json log:\n%s\nwant\n%s", got, want)
	}
}

// Lines logged at once from several goroutines (a renewal warning, a
// status line) come out whole, one object per line.
func TestLogJSONConcurrent(t *testing.T) {
	s, _, _, _ := Test()
	var w chunkWriter
	s.ErrOut = &w
	s.SetLogFormat("json")
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				s.Log(Entry{Level: LevelWarn, Text: strings.Repeat("x", 100), Fields: Fields("g", g, "i", i)})
			}
		}()
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSuffix(w.String(), "\n"), "\n")
	if len(lines) != 400 {
		t.Fatalf("%d lines, want 400", len(lines))
	}
	for _, l := range lines {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("%v: %q", err, l)
		}
	}
}

// chunkWriter writes each Write in small pieces, yielding in between, as a
// pipe may take a long line: lines interleave unless writes are serialised.
type chunkWriter struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *chunkWriter) Write(p []byte) (int, error) {
	for i := 0; i < len(p); i += 16 {
		w.mu.Lock()
		w.buf.Write(p[i:min(i+16, len(p))])
		w.mu.Unlock()
		time.Sleep(time.Microsecond)
	}
	return len(p), nil
}

func (w *chunkWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
