package chaos

import (
	"testing"
	"time"
)

const ms1 = time.Millisecond

// The lease model must accept what a correct lease lock does and refuse
// what an unprotected one does; these hand-written histories pin both.
func TestLeaseModel(t *testing.T) {
	ttl := 100 * ms1
	cases := []struct {
		name string
		ops  []Op
		want string
	}{
		{"one after the other", []Op{
			{Holder: 1, Kind: Acquire, Result: OK, Call: 0, Return: 5 * ms1},
			{Holder: 1, Kind: Release, Result: OK, Call: 50 * ms1, Return: 55 * ms1},
			{Holder: 2, Kind: Acquire, Result: OK, Call: 10 * ms1, Return: 60 * ms1},
			{Holder: 2, Kind: Release, Result: OK, Call: 70 * ms1, Return: 75 * ms1},
		}, "ok"},
		{"busy while held", []Op{
			{Holder: 1, Kind: Acquire, Result: OK, Call: 0, Return: 5 * ms1},
			{Holder: 2, Kind: Acquire, Result: Busy, Call: 10 * ms1, Return: 12 * ms1},
			{Holder: 1, Kind: Release, Result: OK, Call: 50 * ms1, Return: 55 * ms1},
		}, "ok"},
		{"busy while a given-up lease may live on the server", []Op{
			{Holder: 1, Kind: Acquire, Result: OK, Call: 0, Return: 5 * ms1},
			{Holder: 1, Kind: Lost, Result: OK, Call: 60 * ms1, Return: 75 * ms1, Ghost: ttl},
			{Holder: 2, Kind: Acquire, Result: Busy, Call: 80 * ms1, Return: 82 * ms1},
			{Holder: 2, Kind: Acquire, Result: OK, Call: 180 * ms1, Return: 182 * ms1},
		}, "ok"},
		{"busy after an acquire whose reply never came", []Op{
			{Holder: 1, Kind: Acquire, Result: Unknown, Call: 0, Return: 50 * ms1, Ghost: ttl},
			{Holder: 2, Kind: Acquire, Result: Busy, Call: 60 * ms1, Return: 62 * ms1},
		}, "ok"},
		{"busy on a free lock", []Op{
			{Holder: 1, Kind: Acquire, Result: OK, Call: 0, Return: 5 * ms1},
			{Holder: 1, Kind: Release, Result: OK, Call: 10 * ms1, Return: 12 * ms1},
			{Holder: 2, Kind: Acquire, Result: Busy, Call: 20 * ms1, Return: 22 * ms1},
		}, "illegal"},
		{"granted while the first holder still works", []Op{
			{Holder: 1, Kind: Acquire, Result: OK, Call: 0, Return: 5 * ms1},
			{Holder: 2, Kind: Acquire, Result: OK, Call: 110 * ms1, Return: 112 * ms1},
			{Holder: 1, Kind: Release, Result: OK, Call: 250 * ms1, Return: 252 * ms1},
		}, "illegal"},
		{"a DEL frees someone else's lease", []Op{
			{Holder: 1, Kind: Acquire, Result: OK, Call: 0, Return: 5 * ms1},
			{Holder: 1, Kind: Lost, Result: OK, Call: 60 * ms1, Return: 70 * ms1, Ghost: ttl},
			{Holder: 2, Kind: Acquire, Result: OK, Call: 150 * ms1, Return: 152 * ms1},
			{Holder: 1, Kind: Release, Result: OK, Call: 200 * ms1, Return: 202 * ms1},
			{Holder: 3, Kind: Acquire, Result: OK, Call: 210 * ms1, Return: 212 * ms1},
		}, "illegal"},
		{"two locks are checked apart", []Op{
			{Lock: "a", Holder: 1, Kind: Acquire, Result: OK, Call: 0, Return: 5 * ms1},
			{Lock: "b", Holder: 2, Kind: Acquire, Result: OK, Call: 1 * ms1, Return: 6 * ms1},
			{Lock: "a", Holder: 1, Kind: Release, Result: OK, Call: 10 * ms1, Return: 12 * ms1},
			{Lock: "b", Holder: 2, Kind: Release, Result: OK, Call: 10 * ms1, Return: 12 * ms1},
		}, "ok"},
	}
	for _, c := range cases {
		if got := Linearizable(c.ops, 5*time.Second); got != c.want {
			t.Errorf("%s: %s, want %s", c.name, got, c.want)
		}
	}
}

// The fenced store follows `fence check --token` and counts the ground
// truth beside it.
func TestFencedStore(t *testing.T) {
	r, err := NewResource(NewRecorder())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for range 2 {
		if !r.Write("a", "ta", 5, 0, false) {
			t.Fatal("a holder's repeated writes with its own fence were refused")
		}
	}
	if !r.Write("b", "tb", 6, 0, false) {
		t.Fatal("a newer fence was refused")
	}
	if r.Write("a", "ta", 5, 0, false) {
		t.Fatal("an older fence was accepted")
	}
	if r.Write("c", "tc", 6, 0, false) {
		t.Fatal("an equal fence from another token was accepted")
	}
	// c is the newest arrival, refused because its fence repeated b's; b
	// writing again is accepted by the check but is a stale write.
	if !r.Write("b", "tb", 6, 0, false) {
		t.Fatal("b's own fence was refused")
	}
	got := r.FencedFigures()
	want := FencedStats{Accepted: 4, Rejected: 2, AcceptedStale: 1, RejectedFresh: 1, Duplicates: 1, StaleAttempts: 2}
	if got != want {
		t.Errorf("figures %+v, want %+v", got, want)
	}
}

// The store tells readers inside together (shared mode sharing) from a
// writer inside with anyone, and checks a reader's fence as `fence check
// --shared` does, with readers superseded only by a later writer.
func TestSharedStore(t *testing.T) {
	r, err := NewResource(NewRecorder())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	r.EnterAs("r1", true, "shared", 0)
	r.EnterAs("r2", true, "shared", 0)
	if u := r.Unfenced(); u.Overlaps != 0 || u.SharedOverlaps != 1 || u.MaxShared != 2 {
		t.Fatalf("two readers: %+v, want no overlap, one shared overlap", u)
	}
	if !r.Read("r1", "t1", 5) || !r.Read("r2", "t2", 5) || !r.Read("r1", "t1", 5) {
		t.Fatal("readers presenting the highest fence were refused")
	}
	r.Enter("w")
	if u := r.Unfenced(); u.Overlaps != 1 {
		t.Fatalf("a writer entering beside readers: %d overlaps, want 1", u.Overlaps)
	}
	r.EnterAs("r3", true, "shared", 0)
	if u := r.Unfenced(); u.Overlaps != 2 || u.SharedOverlaps != 2 {
		t.Fatalf("a reader entering beside a writer: %+v, want 2 overlaps", u)
	}
	if !r.Write("w", "tw", 6, 1, true) {
		t.Fatal("the writer's newer fence was refused")
	}
	if r.Read("r1", "t1", 5) {
		t.Fatal("a reader's fence older than a writer's was accepted")
	}
	r.Leave("w")
	r.Leave("r1")
	r.Leave("r2")
	r.Leave("r3")
	// A reader after the writer holds its fence; the writer may not repeat
	// it once a reader presented it.
	r.EnterAs("r4", true, "shared", 0)
	if !r.Read("r4", "t4", 6) {
		t.Fatal("a reader with the writer's fence was refused")
	}
	if r.Write("w", "tw", 6, 0, false) {
		t.Fatal("the writer repeated its fence after a reader presented it")
	}
	u := r.Unfenced()
	// r1 read again after the writer changed the counter under it.
	if u.TornReads != 1 || u.OverlapTime <= 0 {
		t.Errorf("figures %+v, want one torn read and some overlap time", u)
	}
	got := r.FencedFigures()
	want := FencedStats{Accepted: 5, Rejected: 2, StaleAttempts: 2}
	if got != want {
		t.Errorf("fenced figures %+v, want %+v", got, want)
	}
	stays := r.Intervals()
	if len(stays) != 5 || !stays[0].Shared || stays[2].Shared || stays[2].Leave < stays[2].Enter || stays[4].Leave != -1 {
		t.Errorf("intervals %+v", stays)
	}
}
