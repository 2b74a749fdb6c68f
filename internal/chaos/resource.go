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
//
// The fenced store accepts a write only as `lockctl fence check --token`
// would: a fence greater than the highest accepted, or equal to it from the
// token that set it. Beside its own verdict it keeps the ground truth that
// no fence can see: which token arrived last. A write accepted from a token
// older than the newest arrival is an accepted stale write, whatever its
// fence said; that is the figure that must stay 0 wherever lockctl claims
// safety.
type Resource struct {
	srv      *http.Server
	ln       net.Listener
	presence net.Listener
	rec      *Recorder

	mu       sync.Mutex
	inside   map[string]time.Duration // holder -> when it entered
	maxIn    int
	overlaps int           // entries that found another holder inside
	overlapT time.Duration // total time with two or more inside
	overlapS time.Duration // start of the current overlapping stretch
	counter  int
	readAt   map[string]int // holder -> counter value read at entry
	lost     int            // writes that overwrote an update they never read
	entries  int

	highest      int64
	highestToken string
	arrival      map[string]int // token -> order of its first write
	fenceOf      map[string]int64
	tokensOf     map[int64]map[string]bool
	newest       int // arrival order of the newest token
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
	Overlaps    int
	OverlapTime time.Duration
	LostUpdates int
	Counter     int
}

// NewResource starts the resource on a free loopback port.
func NewResource(rec *Recorder) (*Resource, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Resource{ln: ln, rec: rec, inside: map[string]time.Duration{}, readAt: map[string]int{},
		arrival: map[string]int{}, fenceOf: map[string]int64{}, tokensOf: map[int64]map[string]bool{},
		lastAct: map[string]time.Duration{}, leftAt: map[string]time.Duration{}, firstEntered: map[string]time.Duration{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/enter", r.handleEnter)
	mux.HandleFunc("/write", r.handleWrite)
	mux.HandleFunc("/leave", r.handleLeave)
	r.srv = &http.Server{Handler: mux}
	go r.srv.Serve(ln)
	if r.presence, err = net.Listen("tcp", "127.0.0.1:0"); err != nil {
		ln.Close()
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
			io.Copy(io.Discard, rd)
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
	r.srv.Close()
	r.presence.Close()
}

func (r *Resource) handleEnter(w http.ResponseWriter, q *http.Request) {
	h := q.FormValue("holder")
	v := r.Enter(h)
	fmt.Fprint(w, v)
}

func (r *Resource) handleWrite(w http.ResponseWriter, q *http.Request) {
	h := q.FormValue("holder")
	fence, _ := strconv.ParseInt(q.FormValue("fence"), 10, 64)
	v, _ := strconv.Atoi(q.FormValue("value"))
	ok := r.Write(h, q.FormValue("token"), fence, v, q.FormValue("value") != "")
	if !ok {
		w.WriteHeader(http.StatusConflict)
	}
}

func (r *Resource) handleLeave(w http.ResponseWriter, q *http.Request) {
	r.Leave(q.FormValue("holder"))
}

// Enter marks holder inside its critical section and returns the counter
// value it reads.
func (r *Resource) Enter(holder string) int {
	now := r.rec.Now()
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, in := r.inside[holder]; in {
		return r.counter
	}
	if len(r.inside) > 0 {
		r.overlaps++
		if len(r.inside) == 1 {
			r.overlapS = now
		}
	}
	r.inside[holder] = now
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
	if len(r.inside) == 2 {
		r.overlapT += now - r.overlapS
	}
	delete(r.inside, holder)
	r.leftAt[holder] = now
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
	if token == "" || fence <= 0 {
		return true
	}
	first := false
	if _, ok := r.arrival[token]; !ok {
		first = true
		r.newest++
		r.arrival[token] = r.newest
		if r.tokensOf[fence] == nil {
			r.tokensOf[fence] = map[string]bool{}
		}
		r.tokensOf[fence][token] = true
		if len(r.tokensOf[fence]) == 2 {
			r.Fenced.Duplicates++
		}
		if fence < r.highest {
			r.Fenced.Regressions++
		}
	}
	stale := r.arrival[token] < r.newest
	if stale {
		r.Fenced.StaleAttempts++
	}
	ok := fence > r.highest || (fence == r.highest && token == r.highestToken)
	if ok {
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
		OverlapTime: r.overlapT, LostUpdates: r.lost, Counter: r.counter}
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
