package chaos

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Resource is what the critical sections protect: two stores on one
// loopback HTTP server.
//
// The unfenced store only watches: it counts holders inside their critical
// section at once (overlaps and the time spent overlapping) and keeps a
// read-sleep-write counter whose lost updates show what an overlap costs.
// A holder enters as a writer (exclusive, the default) or as a reader
// (shared, EnterAs): an overlap is a writer inside with anyone else, while
// readers inside together are counted apart, as the sharing a shared lock
// exists for. A reader's reads of the counter show a torn read when a
// writer changed it while the reader was inside. Every stay inside is kept
// as an Interval, so that a scenario can check the order of entries.
//
// The fenced store accepts a write only as `lockctl fence check --token`
// would: a fence greater than the highest accepted, or equal to it from the
// token that set it. A reader's read (Read) is accepted as `lockctl fence
// check --shared` would: a fence at least the highest accepted, after which
// the highest is kept without a token, since any number of readers present
// the fence of the last writer, who may not repeat it once they are in.
// Beside its own verdict it keeps the ground truth that no fence can see:
// which token arrived last. A write accepted from a token older than the
// newest arrival is an accepted stale write, whatever its fence said; for a
// reader only a writer's later arrival counts, since readers that arrive
// after it share its lock rather than supersede it. That is the figure that
// must stay 0 wherever lockctl claims safety.
type Resource struct {
	srv      *http.Server
	ln       net.Listener
	presence net.Listener
	rec      *Recorder

	mu        sync.Mutex
	inside    map[string]time.Duration // holder -> when it entered
	readers   map[string]bool          // holders inside as readers
	maxIn     int
	overlaps  int           // entries that found a conflicting holder inside
	overlapT  time.Duration // total time with a writer and anyone else inside
	overlapS  time.Duration // start of the current overlapping stretch
	shareIn   int           // entries of a reader that found another reader inside
	maxShared int
	torn      int // reads that found the counter changed since the reader's last look
	counter   int
	readAt    map[string]int // holder -> counter value read at entry
	lost      int            // writes that overwrote an update they never read
	entries   int
	stays     []Interval
	open      map[string]int // holder -> index in stays of its stay inside
	gates     map[string]chan struct{}
	opened    map[string]bool

	highest      int64
	highestToken string
	arrival      map[string]int // token -> order of its first write
	fenceOf      map[string]int64
	tokensOf     map[int64]map[string]bool
	newest       int // arrival order of the newest token
	newestWriter int // arrival order of the newest writer's token
	Fenced       FencedStats
	lastAct      map[string]time.Duration // holder -> time of its last entry or write
	leftAt       map[string]time.Duration // holder -> when it left (or its process died)
	firstEntered map[string]time.Duration
}

// FencedStats are the fenced store's figures.
type FencedStats struct {
	Accepted      int // writes accepted
	Rejected      int // writes refused as stale
	AcceptedStale int // accepted from a token older than the newest arrival
	RejectedFresh int // refused from the newest arrival (a fence that went backwards)
	Duplicates    int // fences presented by more than one token
	Regressions   int // tokens whose fence was below one already accepted
	StaleAttempts int // writes from a token older than the newest arrival, accepted or not
}

// UnfencedStats are the unfenced store's figures.
type UnfencedStats struct {
	Entries     int
	MaxInside   int
	Overlaps    int // entries that found a conflicting holder inside: a writer with anyone
	OverlapTime time.Duration
	LostUpdates int
	Counter     int

	SharedOverlaps int // entries of a reader that found another reader inside
	MaxShared      int // most readers inside at once
	TornReads      int // reads that saw the counter change under them
}

// Interval is one stay of a holder inside the resource, on the recorder's
// clock.
type Interval struct {
	Holder   string
	Shared   bool          // entered as a reader
	LockMode string        // the lock's mode as the child learnt it ($LOCKCTL_MODE), "" when not told
	Waited   time.Duration // how long lockctl waited for the lock ($LOCKCTL_WAITED_MS)
	Enter    time.Duration
	Leave    time.Duration // -1 while inside
}

// NewResource starts the resource on a free loopback port.
func NewResource(rec *Recorder) (*Resource, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Resource{ln: ln, rec: rec, inside: map[string]time.Duration{}, readers: map[string]bool{}, readAt: map[string]int{},
		open: map[string]int{}, gates: map[string]chan struct{}{}, opened: map[string]bool{},
		arrival: map[string]int{}, fenceOf: map[string]int64{}, tokensOf: map[int64]map[string]bool{},
		lastAct: map[string]time.Duration{}, leftAt: map[string]time.Duration{}, firstEntered: map[string]time.Duration{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/enter", r.handleEnter)
	mux.HandleFunc("/write", r.handleWrite)
	mux.HandleFunc("/leave", r.handleLeave)
	mux.HandleFunc("/hold", r.handleHold)
	r.srv = &http.Server{Handler: mux}
	go func() { _ = r.srv.Serve(ln) }() // returns ErrServerClosed at Close
	if r.presence, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		_ = ln.Close() // err, the listen's, is the one to report
		return nil, err
	}
	go r.watchPresence()
	return r, nil
}

// watchPresence takes one connection per child process, opened at its start
// and named by its first line. The kernel closes it when the process dies,
// however it dies, so the holder leaves the unfenced store at the moment of
// its death rather than when the harness learns of it.
func (r *Resource) watchPresence() {
	for {
		c, err := r.presence.Accept()
		if err != nil {
			return
		}
		go func() {
			defer c.Close()
			rd := bufio.NewReader(c)
			name, err := rd.ReadString('\n')
			if err != nil {
				return
			}
			_, _ = io.Copy(io.Discard, rd) // until the process dies: however it ends, that is its death
			r.Leave(strings.TrimSpace(name))
		}()
	}
}

// PresenceAddr is where children announce themselves (CHAOS_PRESENCE).
func (r *Resource) PresenceAddr() string { return r.presence.Addr().String() }

// URL is the resource's base URL, handed to children in CHAOS_RESOURCE.
func (r *Resource) URL() string { return "http://" + r.ln.Addr().String() }

// Close stops the server.
func (r *Resource) Close() {
	_ = r.srv.Close() // the harness is done with it: nothing to do on an error
	_ = r.presence.Close()
}

func (r *Resource) handleEnter(w http.ResponseWriter, q *http.Request) {
	h := q.FormValue("holder")
	waited, _ := strconv.ParseInt(q.FormValue("waited_ms"), 10, 64)
	v := r.EnterAs(h, q.FormValue("mode") == "shared", q.FormValue("lockmode"), time.Duration(waited)*time.Millisecond)
	fmt.Fprint(w, v)
}

func (r *Resource) handleWrite(w http.ResponseWriter, q *http.Request) {
	h := q.FormValue("holder")
	fence, _ := strconv.ParseInt(q.FormValue("fence"), 10, 64)
	v, _ := strconv.Atoi(q.FormValue("value"))
	var ok bool
	if q.FormValue("shared") != "" {
		ok = r.Read(h, q.FormValue("token"), fence)
	} else {
		ok = r.Write(h, q.FormValue("token"), fence, v, q.FormValue("value") != "")
	}
	if !ok {
		w.WriteHeader(http.StatusConflict)
	}
}

// handleHold answers once the holder's gate is open (OpenGate), or with
// 204 after a few seconds, so that a child waits on it in a loop without
// running into its HTTP timeout.
func (r *Resource) handleHold(w http.ResponseWriter, q *http.Request) {
	select {
	case <-r.gate(q.FormValue("holder")):
		fmt.Fprint(w, "go")
	case <-time.After(3 * time.Second):
		w.WriteHeader(http.StatusNoContent)
	case <-q.Context().Done():
	}
}

func (r *Resource) gate(holder string) chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	g, ok := r.gates[holder]
	if !ok {
		g = make(chan struct{})
		r.gates[holder] = g
	}
	return g
}

// OpenGate lets holder's child, which waits inside its critical section
// (ProcSpec.Gate), go on: the scenario decides when each such holder
// leaves.
func (r *Resource) OpenGate(holder string) {
	g := r.gate(holder)
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.opened[holder] {
		r.opened[holder] = true
		close(g)
	}
}

func (r *Resource) handleLeave(w http.ResponseWriter, q *http.Request) {
	r.Leave(q.FormValue("holder"))
}

// Enter marks holder inside its critical section as a writer and returns
// the counter value it reads.
func (r *Resource) Enter(holder string) int { return r.EnterAs(holder, false, "", 0) }

// EnterAs is Enter for a reader (shared) or a writer, with the lock's mode
// as the holder learnt it and how long it waited, kept in its Interval.
func (r *Resource) EnterAs(holder string, shared bool, lockMode string, waited time.Duration) int {
	now := r.rec.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, in := r.inside[holder]; in {
		return r.counter
	}
	before := r.conflicting()
	readers := len(r.readers)
	if shared {
		if len(r.inside) > readers {
			r.overlaps++
		}
		if readers > 0 {
			r.shareIn++
		}
		r.readers[holder] = true
		r.maxShared = max(r.maxShared, readers+1)
	} else if len(r.inside) > 0 {
		r.overlaps++
	}
	r.inside[holder] = now
	if !before && r.conflicting() {
		r.overlapS = now
	}
	r.open[holder] = len(r.stays)
	r.stays = append(r.stays, Interval{Holder: holder, Shared: shared, LockMode: lockMode, Waited: waited, Enter: now, Leave: -1})
	if _, ok := r.firstEntered[holder]; !ok {
		r.firstEntered[holder] = now
	}
	r.entries++
	if len(r.inside) > r.maxIn {
		r.maxIn = len(r.inside)
	}
	r.readAt[holder] = r.counter
	r.lastAct[holder] = now
	return r.counter
}

// Leave marks holder outside. The harness also calls it for a holder whose
// lockctl process exited, since lockctl never exits while its child lives.
func (r *Resource) Leave(holder string) {
	now := r.rec.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, in := r.inside[holder]; !in {
		return
	}
	before := r.conflicting()
	delete(r.inside, holder)
	delete(r.readers, holder)
	if before && !r.conflicting() {
		r.overlapT += now - r.overlapS
	}
	if i, ok := r.open[holder]; ok {
		r.stays[i].Leave = now
		delete(r.open, holder)
	}
	r.leftAt[holder] = now
}

// conflicting: a writer is inside with someone else.
func (r *Resource) conflicting() bool {
	return len(r.inside) >= 2 && len(r.inside) > len(r.readers)
}

// Intervals returns every stay inside so far, in order of entry.
func (r *Resource) Intervals() []Interval {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Interval(nil), r.stays...)
}

// Stay is holder's first stay inside, and whether it entered at all.
func (r *Resource) Stay(holder string) (Interval, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.stays {
		if s.Holder == holder {
			return s, true
		}
	}
	return Interval{}, false
}

// Write is one write of the critical section: the counter update (when
// counted) to the unfenced store and fence/token to the fenced one. It
// reports whether the fenced store accepted it.
func (r *Resource) Write(holder, token string, fence int64, value int, counted bool) bool {
	now := r.rec.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastAct[holder] = now
	if counted {
		if r.counter != r.readAt[holder] {
			r.lost++
		}
		r.counter = value
		r.readAt[holder] = value
	}
	return r.fenced(token, fence, false)
}

// Read is one read of a reader's critical section: a look at the counter
// (torn when a writer changed it since the reader's last look) and its
// fence to the fenced store, which accepts it as `lockctl fence check
// --shared` would. It reports whether the fenced store accepted it.
func (r *Resource) Read(holder, token string, fence int64) bool {
	now := r.rec.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lastAct[holder] = now
	if r.counter != r.readAt[holder] {
		r.torn++
		r.readAt[holder] = r.counter
	}
	return r.fenced(token, fence, true)
}

// fenced is the fenced store's verdict on a write (or a reader's read) with
// fence from token, and its ground truth. The caller holds r.mu.
func (r *Resource) fenced(token string, fence int64, shared bool) bool {
	if token == "" || fence <= 0 {
		return true
	}
	first := false
	if _, ok := r.arrival[token]; !ok {
		first = true
		r.newest++
		r.arrival[token] = r.newest
		// Readers between two writers all present the last writer's
		// fence: only writers' tokens count as duplicates.
		if !shared {
			r.newestWriter = r.newest
			if r.tokensOf[fence] == nil {
				r.tokensOf[fence] = map[string]bool{}
			}
			r.tokensOf[fence][token] = true
			if len(r.tokensOf[fence]) == 2 {
				r.Fenced.Duplicates++
			}
		}
		if fence < r.highest {
			r.Fenced.Regressions++
		}
	}
	// A writer is superseded by anyone who arrived after it; a reader only
	// by a writer, as readers that come after it share the lock with it.
	stale := r.arrival[token] < r.newest
	if shared {
		stale = r.arrival[token] < r.newestWriter
	}
	if stale {
		r.Fenced.StaleAttempts++
	}
	ok := fence > r.highest || (fence == r.highest && token == r.highestToken)
	if shared {
		ok = fence >= r.highest
	}
	if ok {
		if shared {
			token = ""
		}
		r.highest, r.highestToken = fence, token
		r.Fenced.Accepted++
		if stale {
			r.Fenced.AcceptedStale++
		}
	} else {
		r.Fenced.Rejected++
		if !stale && first {
			r.Fenced.RejectedFresh++
		}
	}
	return ok
}

// Unfenced returns the unfenced store's figures.
func (r *Resource) Unfenced() UnfencedStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return UnfencedStats{Entries: r.entries, MaxInside: r.maxIn, Overlaps: r.overlaps,
		OverlapTime: r.overlapT, LostUpdates: r.lost, Counter: r.counter,
		SharedOverlaps: r.shareIn, MaxShared: r.maxShared, TornReads: r.torn}
}

// FencedFigures returns the fenced store's figures.
func (r *Resource) FencedFigures() FencedStats {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.Fenced
}

// LastAct is when holder last entered or wrote, or -1.
func (r *Resource) LastAct(holder string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.lastAct[holder]; ok {
		return t
	}
	return -1
}

// Entered is when holder first entered, or -1.
func (r *Resource) Entered(holder string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.firstEntered[holder]; ok {
		return t
	}
	return -1
}

// LeftAt is when holder last left (or its process died), or -1.
func (r *Resource) LeftAt(holder string) time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.leftAt[holder]; ok {
		return t
	}
	return -1
}
