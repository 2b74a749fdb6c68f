package simulate_test

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/cli/simulate"
	"github.com/lockctl/lockctl/internal/testkit/redistest"
)

var update = flag.Bool("update", false, "rewrite the golden files")

var srv *redistest.Server

func TestMain(m *testing.M) { redistest.Main(m, &srv) }

func names() []string {
	var out []string
	for _, s := range simulate.List() {
		out = append(out, s.Name)
	}
	return out
}

func render(t *testing.T, name string, opts *simulate.Options) (text, js []byte, res *simulate.Result) {
	t.Helper()
	res, err := simulate.Run(context.Background(), name, opts)
	if err != nil {
		t.Fatalf("Run(%s): %v", name, err)
	}
	var tb, jb bytes.Buffer
	if err := simulate.RenderText(&tb, res, simulate.Style{}); err != nil {
		t.Fatal(err)
	}
	if err := simulate.RenderJSON(&jb, res); err != nil {
		t.Fatal(err)
	}
	return tb.Bytes(), jb.Bytes(), res
}

func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", file)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/cli/simulate -update)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output; rerun with -update if the change is meant.\n--- got ---\n%s", path, got)
	}
}

func TestList(t *testing.T) {
	want := "stale-del setnx-expire no-renew failover redlock-pause redlock-clock torn-read rate-boundary"
	if got := strings.Join(names(), " "); got != want {
		t.Fatalf("List() = %s, want %s", got, want)
	}
	var b bytes.Buffer
	if err := simulate.RenderList(&b, simulate.List()); err != nil {
		t.Fatal(err)
	}
	golden(t, "list.txt", b.Bytes())
}

// TestGolden pins the plain text and JSON of every scenario on the
// embedded server, and the verdicts each scenario exists to teach.
func TestGolden(t *testing.T) {
	for _, name := range names() {
		t.Run(name, func(t *testing.T) {
			text, js, res := render(t, name, nil)
			golden(t, name+".txt", text)
			golden(t, name+".json", js)
			if len(res.Variants) < 2 {
				t.Fatalf("%d variants", len(res.Variants))
			}
			if res.Variants[0].Technique != "broken" || res.Variants[0].Verdict.Safe {
				t.Errorf("first variant should be the broken technique, found unsafe: %+v", res.Variants[0])
			}
			last := res.Variants[len(res.Variants)-1]
			if last.Technique != "correct" || !last.Verdict.Safe {
				t.Errorf("last variant should be a correct technique found safe: %+v", last.Verdict)
			}
		})
	}
}

// TestStaleDelStory checks the facts of the first scenario, not only
// that the output did not change.
func TestStaleDelStory(t *testing.T) {
	_, _, res := render(t, "stale-del", nil)
	v := res.Variants
	if v[0].Verdict.OverlapMS != 1500 || !strings.Contains(v[0].Verdict.Summary, "B and C") {
		t.Errorf("plain DEL: %+v, want B and C overlapping 1.5 s", v[0].Verdict)
	}
	if v[1].Verdict.OverlapMS != 0 || !strings.Contains(v[1].Verdict.Summary, "stale write landed") {
		t.Errorf("compare-and-delete: %+v, want no overlap and a stale write", v[1].Verdict)
	}
	if v[2].Verdict.OverlapMS != 0 || !v[2].Verdict.Safe {
		t.Errorf("fencing: %+v", v[2].Verdict)
	}
	var del, refused bool
	for _, e := range v[0].Events {
		if e.Actor == "A" && e.Command == "DEL lock:order:42" && e.Reply == "1" {
			del = true
		}
	}
	for _, e := range v[2].Events {
		if e.Actor == "A" && strings.HasPrefix(e.Reply, "[0, ") {
			refused = true
		}
	}
	if !del || !refused {
		t.Errorf("A's DEL deleting B's lock seen: %v; A's fence refused against B's: %v", del, refused)
	}
	for _, e := range v[0].Events {
		if e.TMS == 13000 && strings.Join(e.Holders, ",") != "B,C" {
			t.Errorf("holders at 13 s = %v, want B and C", e.Holders)
		}
	}
}

// TestTornReadStory checks the facts torn-read teaches: a reader that only
// checked the lock reads a half-written config; shared readers overlap each
// other but never the writer; a waiting writer holds back a later reader;
// shared holders get the current fence and the writer a greater one.
func TestTornReadStory(t *testing.T) {
	_, _, res := render(t, "torn-read", nil)
	v := res.Variants
	if len(v) != 3 {
		t.Fatalf("%d variants", len(v))
	}
	reads := func(vr simulate.VariantResult) map[string]string {
		out := map[string]string{}
		for _, e := range vr.Events {
			if strings.HasPrefix(e.Command, "MGET ") {
				out[e.Actor] = e.Reply
			}
		}
		return out
	}
	if got := reads(v[0])["R1"]; got != "[2, 'rules for version 1']" || !strings.Contains(v[0].Verdict.Summary, "R1 read version 2 with the payload of version 1") {
		t.Errorf("check, then read: R1 read %s; verdict %+v", got, v[0].Verdict)
	}
	for i, vr := range v[1:] {
		for actor, r := range reads(vr) {
			if r != "[1, 'rules for version 1']" && r != "[2, 'rules for version 2']" {
				t.Errorf("variant %d: %s read %s", i+2, actor, r)
			}
		}
	}
	// Nobody reads while W holds the lock, in either locked variant.
	for i, vr := range v[1:] {
		for _, e := range vr.Events {
			if strings.HasPrefix(e.Command, "MGET ") && contains(e.Holders, "W") {
				t.Errorf("variant %d: %s read at %d ms while W held the lock", i+2, e.Actor, e.TMS)
			}
		}
	}
	if v[1].Verdict.OverlapMS != 0 || !strings.Contains(v[1].Verdict.Summary, "never two readers at once") {
		t.Errorf("exclusive readers: %+v, want readers taking turns", v[1].Verdict)
	}
	if v[2].Verdict.OverlapMS != 1500 || !strings.Contains(v[2].Verdict.Summary, "R1 and R2 read together for 1.5 s") {
		t.Errorf("shared readers: %+v, want R1 and R2 together for 1.5 s", v[2].Verdict)
	}
	together := false
	for _, e := range v[2].Events {
		if strings.HasPrefix(e.Command, "MGET ") && e.Actor == "R2" && strings.Join(e.Holders, ",") == "R1,R2" {
			together = true
		}
	}
	if !together {
		t.Error("shared: R2 did not read while R1 held the lock too")
	}
	// R3 asks while W waits and only shared holders hold: refused for the writer.
	var heldBack bool
	grants := map[string][]string{} // actor -> fences granted, in order
	for _, e := range v[2].Events {
		if e.Actor == "R3" && e.TMS == 1500 && e.Reply == "[0, writers, 2, 1]" {
			heldBack = true
		}
		if strings.HasPrefix(e.Command, "EVALSHA ") && strings.HasPrefix(e.Reply, "[1, ") {
			grants[e.Actor] = append(grants[e.Actor], strings.Split(e.Reply, ", ")[1])
		}
	}
	if !heldBack {
		t.Error("shared: R3 was not held back by the waiting writer")
	}
	f := func(a string) string {
		if len(grants[a]) != 1 {
			t.Fatalf("%s granted %v", a, grants[a])
		}
		return grants[a][0]
	}
	if f("R1") != f("R2") || f("W") <= f("R1") || f("R3") != f("W") {
		t.Errorf("fences R1 %s R2 %s W %s R3 %s: want readers sharing the current fence, the writer a greater one", f("R1"), f("R2"), f("W"), f("R3"))
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestDeterministic(t *testing.T) {
	for _, name := range names() {
		t1, j1, _ := render(t, name, nil)
		t2, j2, _ := render(t, name, nil)
		if !bytes.Equal(t1, t2) || !bytes.Equal(j1, j2) {
			t.Errorf("%s: two embedded runs differ", name)
		}
	}
}

// TestEmbeddedNeedsNoServer: the default run ignores any configured server,
// even one that cannot be reached.
func TestEmbeddedNeedsNoServer(t *testing.T) {
	port, err := redistest.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("LOCKCTL_URL", fmt.Sprintf("redis://127.0.0.1:%d/0", port))
	t.Setenv("REDIS_URL", fmt.Sprintf("redis://127.0.0.1:%d/0", port))
	res, err := simulate.Run(context.Background(), "stale-del", nil)
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "embedded" || len(res.Variants) != 3 {
		t.Fatalf("mode %s, %d variants", res.Mode, len(res.Variants))
	}
	// And asking for that server does fail: the test above is not vacuous.
	if _, err := simulate.Run(context.Background(), "stale-del", &simulate.Options{URL: os.Getenv("LOCKCTL_URL")}); err == nil {
		t.Fatal("a run against a closed port succeeded")
	}
}

// TestRealServer runs every scenario on redis-server in real time: the same
// verdicts as embedded, and no key left behind.
func TestRealServer(t *testing.T) {
	for _, s := range simulate.List() {
		name := s.Name
		t.Run(name, func(t *testing.T) {
			if s.EmbeddedOnly {
				_, err := simulate.Run(context.Background(), name, &simulate.Options{URL: srv.URL})
				if !errors.Is(err, simulate.ErrEmbeddedOnly) {
					t.Fatalf("%s on a real server: err = %v, want ErrEmbeddedOnly", name, err)
				}
				return
			}
			_, _, want := render(t, name, nil)
			_, _, got := render(t, name, &simulate.Options{URL: srv.URL, Second: 40 * time.Millisecond})
			if got.Mode != "real" {
				t.Fatalf("mode %s", got.Mode)
			}
			for i := range want.Variants {
				if got.Variants[i].Verdict != want.Variants[i].Verdict {
					t.Errorf("variant %d: real %+v, embedded %+v", i+1, got.Variants[i].Verdict, want.Variants[i].Verdict)
				}
				if len(got.Variants[i].Events) != len(want.Variants[i].Events) {
					t.Errorf("variant %d: %d events on the real server, %d embedded", i+1, len(got.Variants[i].Events), len(want.Variants[i].Events))
				}
			}
			if n, err := srv.Do("DBSIZE"); err != nil || n != "0" {
				t.Errorf("DBSIZE after the run = %q, %v: keys left behind", n, err)
			}
		})
	}
}

func TestUnknownScenario(t *testing.T) {
	_, err := simulate.Run(context.Background(), "nope", nil)
	if !errors.Is(err, simulate.ErrUnknownScenario) {
		t.Fatalf("err = %v", err)
	}
}

type recorder struct {
	events []simulate.Event
	begins int
	stopAt int
}

func (r *recorder) Begin(*simulate.Result)                                 {}
func (r *recorder) BeginVariant(*simulate.Result, *simulate.VariantResult) { r.begins++ }
func (r *recorder) EndVariant(*simulate.Result, *simulate.VariantResult)   {}
func (r *recorder) Event(_ *simulate.Result, _ *simulate.VariantResult, e simulate.Event) error {
	r.events = append(r.events, e)
	if r.stopAt > 0 && len(r.events) == r.stopAt {
		return errors.New("stop")
	}
	return nil
}

// TestObserver: the observer sees every event in order (for --step), and an
// error from it stops the run.
func TestObserver(t *testing.T) {
	rec := &recorder{}
	res, err := simulate.Run(context.Background(), "stale-del", &simulate.Options{Observer: rec})
	if err != nil {
		t.Fatal(err)
	}
	var all []simulate.Event
	for _, v := range res.Variants {
		all = append(all, v.Events...)
	}
	if rec.begins != 3 || len(rec.events) != len(all) {
		t.Fatalf("observer saw %d variants, %d events; result has %d", rec.begins, len(rec.events), len(all))
	}
	for i := range all {
		if fmt.Sprint(all[i]) != fmt.Sprint(rec.events[i]) {
			t.Fatalf("event %d: observer %+v, result %+v", i, rec.events[i], all[i])
		}
	}
	stop := &recorder{stopAt: 3}
	if _, err := simulate.Run(context.Background(), "stale-del", &simulate.Options{Observer: stop}); err == nil || len(stop.events) != 3 {
		t.Fatalf("err %v after %d events, want a stop after 3", err, len(stop.events))
	}
}

// TestStreamedTextMatches: printing through the observer as the run goes
// gives the same text as rendering the finished result.
func TestStreamedTextMatches(t *testing.T) {
	var live bytes.Buffer
	p := simulate.NewTextPrinter(&live, simulate.Style{})
	res, err := simulate.Run(context.Background(), "no-renew", &simulate.Options{Observer: p})
	if err != nil {
		t.Fatal(err)
	}
	var after bytes.Buffer
	if err := simulate.RenderText(&after, res, simulate.Style{}); err != nil {
		t.Fatal(err)
	}
	if live.String() != after.String() {
		t.Fatalf("streamed text differs:\n%s\n---\n%s", live.String(), after.String())
	}
}

// TestRedlockStories checks the facts the Redlock scenarios teach: A's
// lock is granted by a majority of pkg/lock's Redlock masters, B then gets a
// majority of its own, A's unfenced write lands, and its fenced write is
// refused because B's fence is greater.
func TestRedlockStories(t *testing.T) {
	for _, tc := range []struct {
		name         string
		grantsA      int
		grantsB      int
		overlapMS    int64
		masterOfBoth string // a master that granted both A and B
	}{
		{name: "redlock-pause", grantsA: 5, grantsB: 4, overlapMS: 0},
		{name: "redlock-clock", grantsA: 3, grantsB: 3, overlapMS: 7000, masterOfBoth: "m3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, res := render(t, tc.name, nil)
			for i, v := range res.Variants {
				grants := map[string][]string{}
				var order []string
				for _, e := range v.Events {
					if e.Node != "" && strings.HasPrefix(e.Action, "takes the lock") {
						order = append(order, e.Actor+e.Node)
						if strings.HasPrefix(e.Reply, "[1, ") {
							grants[e.Actor] = append(grants[e.Actor], e.Node)
						}
					}
				}
				if len(grants["A"]) != tc.grantsA || len(grants["B"]) != tc.grantsB {
					t.Errorf("variant %d: masters granting A %v, B %v; want %d and %d", i+1, grants["A"], grants["B"], tc.grantsA, tc.grantsB)
				}
				if got := strings.Join(order[:5], " "); got != "Am1 Am2 Am3 Am4 Am5" {
					t.Errorf("variant %d: A's commands in the order %s, want master order", i+1, got)
				}
				if tc.masterOfBoth != "" && (!contains(grants["A"], tc.masterOfBoth) || !contains(grants["B"], tc.masterOfBoth)) {
					t.Errorf("variant %d: %s did not grant both A and B", i+1, tc.masterOfBoth)
				}
				if v.Verdict.OverlapMS != tc.overlapMS {
					t.Errorf("variant %d: overlap %d ms, want %d", i+1, v.Verdict.OverlapMS, tc.overlapMS)
				}
			}
			var landed, refused bool
			for _, e := range res.Variants[0].Events {
				landed = landed || (e.Actor == "A" && e.Command == "SET resource:order:42 'written by A'" && e.Reply == "OK")
			}
			for _, e := range res.Variants[1].Events {
				refused = refused || (e.Actor == "A" && strings.HasPrefix(e.Command, "EVALSHA ") && e.Node == "" && strings.HasPrefix(e.Reply, "[0, "))
				if e.Actor == "A" && strings.HasPrefix(e.Command, "SET resource") {
					t.Errorf("fenced: A wrote the resource: %+v", e)
				}
			}
			if !landed || !refused {
				t.Errorf("unfenced write by A landed: %v; fenced write refused: %v", landed, refused)
			}
			if !strings.Contains(res.Variants[0].Verdict.Summary, "survives one master's crash") ||
				!strings.Contains(res.Variants[1].Verdict.Summary, "the fence kept the data safe") {
				t.Errorf("verdicts do not say what a majority buys: %q / %q", res.Variants[0].Verdict.Summary, res.Variants[1].Verdict.Summary)
			}
		})
	}
}
