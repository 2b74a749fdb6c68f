package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
	"github.com/lockctl/lockctl/pkg/once"
)

// inspectOnce runs `inspect once KEY` on its own (the inspect parent
// command attaches it) against srv.
func inspectOnce(t *testing.T, srv *redistest.Server, output string, tty bool, key string) (code int, stdout, stderr string) {
	t.Helper()
	io, _, out, errOut := ui.Test()
	io.SetTTY(false, tty, false)
	f := NewFactory(io)
	defer f.Close()
	f.G.URL, f.G.Timeout, f.G.Output, f.G.Color = srv.URL, 5*time.Second, output, "never"
	c := newInspectOnceCmd(f)
	c.SetArgs([]string{key})
	c.SetOut(out)
	c.SetErr(errOut)
	c.SilenceErrors, c.SilenceUsage = true, true
	err := c.ExecuteContext(context.Background())
	code = ExitCode(err)
	printError(io, err, code)
	return code, out.String(), errOut.String()
}

func TestInspectOnce(t *testing.T) {
	srv := redistest.StartTest(t, nil)
	client := redistest.ClientFor(t, srv.URL)
	ctx := context.Background()
	store := once.New(client, &once.Options{Owner: "ci@build:42"})

	// No record: state "none", as `inspect lock` says "free".
	code, stdout, stderr := inspectOnce(t, srv, "text", false, "nothing")
	if code != 0 || tsv(stdout)["state"] != "none" || tsv(stdout)["key"] != "once:nothing" || stderr != "" {
		t.Fatalf("missing record: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}
	code, stdout, stderr = inspectOnce(t, srv, "json", false, "nothing")
	if code != 0 || !strings.Contains(stdout, `"state": "none"`) || stderr != "" {
		t.Fatalf("missing record, json: code %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// Running: no exit code or finish time yet.
	claim, err := store.Claim(ctx, "job", &once.ClaimOptions{Fingerprint: "fp1"})
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = inspectOnce(t, srv, "text", false, "job")
	if code != 0 {
		t.Fatalf("running record: exit %d", code)
	}
	rows := tsv(stdout)
	for field, want := range map[string]string{
		"name": "job", "key": "once:job", "state": "running", "owner": "ci@build:42",
		"fingerprint": "fp1", "exit": "-", "finished": "-", "attempts": "1", "expired": "false",
	} {
		if rows[field] != want {
			t.Errorf("running: %s = %q, want %q (output %q)", field, rows[field], want, stdout)
		}
	}
	if _, err := time.Parse(time.RFC3339, rows["started"]); err != nil {
		t.Errorf("running: started %q: %v", rows["started"], err)
	}

	// Done: the recorded outcome, in JSON.
	if _, err := claim.Complete(ctx, 3); err != nil {
		t.Fatal(err)
	}
	code, stdout, _ = inspectOnce(t, srv, "json", false, "job")
	if code != 0 {
		t.Fatalf("done record: exit %d", code)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(stdout), &rec); err != nil {
		t.Fatalf("json %q: %v", stdout, err)
	}
	for field, want := range map[string]any{
		"name": "job", "key": "once:job", "state": "done", "owner": "ci@build:42",
		"fingerprint": "fp1", "exit": float64(3), "attempts": float64(1), "expired": false,
	} {
		if rec[field] != want {
			t.Errorf("done json: %s = %v, want %v", field, rec[field], want)
		}
	}
	if ttl, _ := rec["ttl_ms"].(float64); ttl <= 0 || ttl > float64(once.DefaultResultTTL.Milliseconds()) {
		t.Errorf("done json: ttl_ms %v, want within the result TTL", rec["ttl_ms"])
	}
	for _, field := range []string{"started_at", "finished_at"} {
		s, _ := rec[field].(string)
		if _, err := time.Parse(time.RFC3339Nano, s); err != nil {
			t.Errorf("done json: %s %q: %v", field, s, err)
		}
	}

	// On a terminal: a table with a header.
	code, stdout, _ = inspectOnce(t, srv, "text", true, "job")
	if code != 0 || !strings.Contains(stdout, "FIELD") || !strings.Contains(stdout, "once:job") {
		t.Fatalf("tty table: code %d, output %q", code, stdout)
	}

	// A key holding something else is refused as not a once record (65).
	if err := client.Set(ctx, "once:str", "x", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr = inspectOnce(t, srv, "text", false, "str"); code != ExitNotOwner {
		t.Fatalf("wrong type: exit %d, stderr %q", code, stderr)
	}
}

func tsv(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		k, v, _ := strings.Cut(line, "\t")
		m[k] = v
	}
	return m
}
