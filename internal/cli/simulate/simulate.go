// Package simulate replays Redis coordination failures on a timeline, next to
// the techniques that prevent them, for training. Every step sends real
// commands (the broken technique as users write it, the correct one through
// pkg/lock and pkg/limit) to an embedded miniredis on virtual time, so the
// output is the same on every run, or to a real server in real time.
//
// The package renders plain text and JSON itself, so tests can golden them;
// colour comes from a Style the caller fills in.
package simulate

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// ErrUnknownScenario is returned when Run is given a name List does not have.
var ErrUnknownScenario = errors.New("simulate: unknown scenario")

// ErrEmbeddedOnly is returned when a scenario that needs servers of its own
// (Info.EmbeddedOnly) is asked to run on a real server.
var ErrEmbeddedOnly = errors.New("simulate: runs only on the embedded servers")

// Info names and describes a scenario.
type Info struct {
	Name    string `json:"name"`
	Title   string `json:"title"`
	Summary string `json:"summary"`
	// EmbeddedOnly scenarios need servers of their own (five Redlock
	// masters, each with its own clock) and do not run with --url.
	EmbeddedOnly bool `json:"embedded_only,omitempty"`
}

// Event is one step of a timeline: one Redis command and its reply, or a
// narrated happening (a pause, an expiry, a crash) with no command.
type Event struct {
	TMS     int64    `json:"t_ms"`           // simulated time since the start of the variant
	Actor   string   `json:"actor"`          // "A", "B", "C", "ops", or the server ("redis", "master", ...)
	Action  string   `json:"action"`         // what the actor does, in plain words
	Node    string   `json:"node,omitempty"` // the server the command went to, when a step sends to several (Redlock's masters)
	Command string   `json:"command"`        // the command as sent, tokens shortened; "" for narration
	Reply   string   `json:"reply"`          // the reply, or "(error) ..."
	Holders []string `json:"holders"`        // actors holding an unexpired lease after this step
	Note    string   `json:"note,omitempty"`

	lanes []string // extra lanes touched (the store)
	stale []string // actors who believe they hold but whose lease ran out
}

// Verdict sums up one variant.
type Verdict struct {
	Safe      bool   `json:"safe"`
	Summary   string `json:"summary"`
	OverlapMS int64  `json:"overlap_ms"` // time two or more actors held unexpired leases at once
}

// VariantResult is one technique's run of the scenario.
type VariantResult struct {
	Name      string  `json:"name"`
	Technique string  `json:"technique"` // "broken", "partial" (fixes part of it), "correct", or "yours" (a learner's script)
	Events    []Event `json:"events"`
	Verdict   Verdict `json:"verdict"`
}

// Result is a whole scenario run.
type Result struct {
	Scenario Info            `json:"scenario"`
	Mode     string          `json:"mode"` // "embedded" or "real"
	Scale    string          `json:"scale,omitempty"`
	Lanes    []string        `json:"lanes"`
	Variants []VariantResult `json:"variants"`
}

// Observer sees a run as it happens, for streaming output and for pausing
// after each step. An error returned by Event stops the run.
type Observer interface {
	Begin(r *Result)
	BeginVariant(r *Result, v *VariantResult)
	Event(r *Result, v *VariantResult, e Event) error
	EndVariant(r *Result, v *VariantResult)
}

// Options configure a run. A nil *Options runs embedded.
type Options struct {
	// Redis, when set, runs on that real server in real time. Every key the
	// run creates carries a random prefix and is deleted at the end.
	Redis *redis.Options
	// URL is a shorthand for Redis (redis://, rediss://, unix://).
	URL string
	// Second is how much wall time one simulated second takes on a real
	// server; default 50ms. TTLs sent to the server are scaled the same way.
	Second time.Duration
	// Observer, if set, sees every event as it is recorded.
	Observer Observer

	// Knobs change a scenario's timing or technique; zero keeps its
	// default. A scenario refuses the knobs it does not use (Knobs lists
	// those it does), with ErrKnob.
	TTL   time.Duration // the lock's TTL
	Pause time.Duration // how long A stalls
	Job   time.Duration // how long A's job runs (no-renew)
	// ReleaseScript replaces the broken release of stale-del; RenewScript
	// the renewal of no-renew (see Script).
	ReleaseScript *Script
	RenewScript   *Script
}

// Knob names, as the command line spells them.
const (
	KnobTTL           = "ttl"
	KnobPause         = "pause"
	KnobJob           = "job"
	KnobReleaseScript = "release-script"
	KnobRenewScript   = "renew-script"
)

// ErrKnob is returned for a knob a scenario does not use or a value it
// cannot play.
var ErrKnob = errors.New("simulate")

// Knobs lists the knobs scenario name uses.
func Knobs(name string) []string {
	if s, ok := registry()[name]; ok {
		return s.knobs
	}
	return nil
}

// CheckKnobs reports whether scenario name can play with o's knobs: an
// ErrKnob for a knob it does not use or a value out of range.
func CheckKnobs(name string, o *Options) error {
	s, ok := registry()[name]
	if !ok {
		return fmt.Errorf("%w %q", ErrUnknownScenario, name)
	}
	return s.checkKnobs(o)
}

func (o *Options) set() map[string]bool {
	if o == nil {
		return nil
	}
	return map[string]bool{KnobTTL: o.TTL != 0, KnobPause: o.Pause != 0, KnobJob: o.Job != 0,
		KnobReleaseScript: o.ReleaseScript != nil, KnobRenewScript: o.RenewScript != nil}
}

// checkKnobs refuses knobs s does not use and values outside 1 s..1 h (a
// pause or job: 100 ms..1 h).
func (s *scenario) checkKnobs(o *Options) error {
	for _, k := range []string{KnobTTL, KnobPause, KnobJob, KnobReleaseScript, KnobRenewScript} {
		if o.set()[k] && !contains(s.knobs, k) {
			if len(s.knobs) == 0 {
				return fmt.Errorf("%w: %s takes no knobs: --%s does not apply", ErrKnob, s.info.Name, k)
			}
			return fmt.Errorf("%w: %s does not use --%s (it takes --%s)", ErrKnob, s.info.Name, k, strings.Join(s.knobs, ", --"))
		}
	}
	if o == nil {
		return nil
	}
	for _, k := range []struct {
		name string
		d    time.Duration
		min  time.Duration
	}{{KnobTTL, o.TTL, time.Second}, {KnobPause, o.Pause, 100 * time.Millisecond}, {KnobJob, o.Job, time.Second}} {
		if k.d != 0 && (k.d < k.min || k.d > time.Hour || k.d%time.Millisecond != 0) {
			return fmt.Errorf("%w: --%s %s: give %s to 1h, in whole milliseconds", ErrKnob, k.name, k.d, k.min)
		}
	}
	return nil
}

func (o *Options) real() bool { return o != nil && (o.Redis != nil || o.URL != "") }

func (o *Options) second() time.Duration {
	if o == nil || o.Second <= 0 {
		return 50 * time.Millisecond
	}
	return o.Second
}

type scenario struct {
	info     Info
	lanes    []string
	variants []variant
	knobs    []string
	// forOptions, if set, picks the variants for the knobs given (a
	// learner's script replaces a variant).
	forOptions func(o *Options) []variant
}

type variant struct {
	name      string
	technique string
	run       func(ctx context.Context, e *env) Verdict
}

// registry holds every scenario by name, built on first use: as package
// initialisers, building them would cost every lockctl start, whatever the
// command.
var registry = sync.OnceValue(func() map[string]*scenario {
	r := map[string]*scenario{}
	for _, add := range []func(func(*scenario)){addStaleDel, addSetnxExpire, addNoRenew, addFailover, addRedlock, addTornRead, addRateBoundary} {
		add(func(s *scenario) { r[s.info.Name] = s })
	}
	return r
})

// order is the order List returns and the README teaches.
var order = []string{"stale-del", "setnx-expire", "no-renew", "failover", "redlock-pause", "redlock-clock", "torn-read", "rate-boundary"}

// List returns every scenario, the most important first.
func List() []Info {
	out := make([]Info, 0, len(registry()))
	seen := map[string]bool{}
	for _, n := range order {
		if s, ok := registry()[n]; ok {
			out = append(out, s.info)
			seen[n] = true
		}
	}
	var rest []string
	for n := range registry() {
		if !seen[n] {
			rest = append(rest, n)
		}
	}
	sort.Strings(rest)
	for _, n := range rest {
		out = append(out, registry()[n].info)
	}
	return out
}

// Run plays every variant of scenario name and returns the timelines and
// verdicts. On a real server it removes every key it created, also when it
// fails.
func Run(ctx context.Context, name string, opts *Options) (*Result, error) {
	s, ok := registry()[name]
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownScenario, name)
	}
	if err := s.checkKnobs(opts); err != nil {
		return nil, err
	}
	var base *redis.Options
	if opts.real() && s.info.EmbeddedOnly {
		return nil, fmt.Errorf("%w: %s", ErrEmbeddedOnly, name)
	}
	if opts.real() && (opts.ReleaseScript != nil || opts.RenewScript != nil) {
		return nil, fmt.Errorf("%w: a learner's script runs only in the embedded server's sandbox", ErrEmbeddedOnly)
	}
	if opts.real() {
		base = opts.Redis
		if base == nil {
			var err error
			if base, err = redis.ParseURL(opts.URL); err != nil {
				return nil, fmt.Errorf("simulate: %w", err)
			}
		}
	}
	res := &Result{Scenario: s.info, Mode: "embedded", Lanes: s.lanes}
	if base != nil {
		res.Mode = "real"
		res.Scale = fmt.Sprintf("1s=%s", opts.second())
	}
	var obs Observer
	if opts != nil {
		obs = opts.Observer
	}
	if obs != nil {
		obs.Begin(res)
	}
	variants := s.variants
	if s.forOptions != nil {
		variants = s.forOptions(opts)
	}
	for _, v := range variants {
		res.Variants = append(res.Variants, VariantResult{Name: v.name, Technique: v.technique, Events: []Event{}})
		vr := &res.Variants[len(res.Variants)-1]
		if obs != nil {
			obs.BeginVariant(res, vr)
		}
		e, err := newEnv(ctx, base, opts.second(), func(ev Event) error {
			vr.Events = append(vr.Events, ev)
			if obs != nil {
				return obs.Event(res, vr, ev)
			}
			return nil
		})
		if err != nil {
			return res, err
		}
		e.opts = opts
		verdict, err := e.play(ctx, v.run)
		if cerr := e.close(); err == nil {
			err = cerr
		}
		if err != nil {
			return res, err
		}
		vr.Verdict = verdict
		if obs != nil {
			obs.EndVariant(res, vr)
		}
	}
	return res, nil
}
