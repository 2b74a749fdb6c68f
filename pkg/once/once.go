// Package once runs a command at most once per key: a caller claims the key
// (held like a lock, renewed while the command runs, freed by its TTL if the
// claimant dies), runs the command, and records its outcome, which later
// callers get instead of running it again.
//
// Every transition (claim, renew, complete, abandon, resolve) is one Lua
// script; the record is one hash at prefix+KEY and carries a TTL: the claim
// TTL while running, ResultTTL once done.
//
// That is at-least-once: a claimant that dies mid-run leaves nothing behind
// and the next call runs the command again. ClaimOptions.AtMostOnce claims
// without a TTL instead, with the lease as a deadline in the record (server
// time); a claim whose lease lapsed without an outcome turns StateUnknown,
// atomically in the call that finds it, and no call runs the command again
// until someone resolves it (Store.Resolve).
//
// A caller that runs a command for a key:
//
//	c, err := store.Claim(ctx, key, &once.ClaimOptions{Fingerprint: fp})
//	// ErrInProgress, ErrDone (replay the *DoneError's Record), ErrFingerprint
//	k := c.KeepAlive(ctx, 0) // renews every TTL/3
//	code := run()            // stop the command if <-k.Lost() fires first
//	k.Stop()
//	rec, err := c.Complete(ctx, code)
//
// # Errors
//
// Callers branch with errors.Is on the sentinels, one per outcome they act
// on, and read the details with errors.As on the error types. Each type
// matches the sentinels of its row, no other; every message starts with
// "once: ".
//
//	sentinel       when                                               type for details
//	ErrInProgress  Claim: another claimant runs KEY now               *InProgressError
//	ErrDone        Claim: KEY already ran (replay the outcome)        *DoneError
//	ErrFingerprint Claim: KEY was claimed for another request         *FingerprintError
//	ErrNotOwner    the claim now belongs to someone else              *NotOwnerError
//	ErrLost        renew or complete found no record, or the
//	               keep-alive gave the claim up (Do: fn was stopped
//	               part way, and nothing was recorded)
//	ErrLate        Claim: the reply came after the claim's local
//	               deadline and re-confirming it failed
//	ErrUnknown     Claim: an at-most-once claim lapsed without an     *UnknownError
//	               outcome (Store.Resolve it)
//	ErrNotUnknown  Resolve: the record is not unknown (a running      *NotUnknownError
//	               claim matches ErrInProgress too)
//	ErrNotFound    Get found no record
//	ErrWrongType   the key holds something that is not a once record  *WrongTypeError
//	ErrInvalid     unusable argument
//
// Network and server errors are returned wrapped, as go-redis gave them. A
// claim given up as late because both replies were slower than its TTL
// allows wraps a *lock.LateError with Slow set.
package once

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// DefaultPrefix starts every once key: KEY "order:pay:123" is "once:order:pay:123".
const DefaultPrefix = "once:"

const (
	// DefaultTTL is how long a claim outlives its last renewal.
	DefaultTTL = 30 * time.Second
	// DefaultResultTTL is how long an outcome is kept.
	DefaultResultTTL = 24 * time.Hour
)

// States of a record.
const (
	StateRunning = "running"
	StateDone    = "done"
	// StateUnknown is an at-most-once claim whose lease lapsed without a
	// recorded outcome: the command may or may not have run, or finished.
	StateUnknown = "unknown"
)

// ModeAtMostOnce is Record.Mode of a claim made with ClaimOptions.AtMostOnce.
const ModeAtMostOnce = "at-most-once"

// Options configure a Store; nil means all defaults.
type Options struct {
	Prefix    string        // default DefaultPrefix
	TTL       time.Duration // claim lease; default DefaultTTL
	ResultTTL time.Duration // how long the outcome is kept; default DefaultResultTTL
	Owner     string        // recorded claimant; default user@host:pid
}

func (o *Options) prefix() string {
	if o == nil || o.Prefix == "" {
		return DefaultPrefix
	}
	return o.Prefix
}

func (o *Options) ttl() time.Duration {
	if o == nil || o.TTL == 0 {
		return DefaultTTL
	}
	return o.TTL
}

func (o *Options) resultTTL() time.Duration {
	if o == nil || o.ResultTTL == 0 {
		return DefaultResultTTL
	}
	return o.ResultTTL
}

func (o *Options) owner() string {
	if o == nil || o.Owner == "" {
		return DefaultOwner()
	}
	return o.Owner
}

// ClaimOptions qualify one claim; nil means none.
type ClaimOptions struct {
	// Fingerprint identifies the request (a hash of its arguments, say). A
	// claim whose fingerprint differs from the record's is refused with
	// *FingerprintError instead of replaying someone else's outcome.
	Fingerprint string
	// RerunFailed claims again when the recorded exit code was not 0.
	RerunFailed bool
	// AtMostOnce claims so that a claimant that dies without recording an
	// outcome leaves the key StateUnknown rather than free: later claims
	// get *UnknownError until the key is resolved (Store.Resolve). The
	// mode is the claim's: it holds for every later caller.
	AtMostOnce bool
}

// Record is what a key holds, as of one read.
type Record struct {
	Key         string // the Redis key
	State       string // StateRunning or StateDone
	Owner       string
	Fingerprint string
	StartedAt   time.Time // server time
	FinishedAt  time.Time // zero while running
	Duration    time.Duration
	ExitCode    int
	Attempts    int           // runs so far, counting reruns of failures
	Expired     bool          // the claim lapsed while the command ran, before the outcome was recorded
	TTL         time.Duration // remaining life of the record; -1 for none
	Mode        string        // ModeAtMostOnce, or "" for at-least-once
	// LeaseDeadline is an at-most-once claim's lease end (server time);
	// zero otherwise and once done.
	LeaseDeadline time.Time
	// Resolved is the decision of Store.Resolve that gave the outcome
	// ("succeeded", "failed"), and ResolvedBy who took it; "" when the
	// claimant recorded it.
	Resolved   string
	ResolvedBy string
}

// Store claims keys and records outcomes on one Redis.
type Store struct {
	client redis.Scripter
	opts   Options
}

// New returns a Store; opts may be nil.
func New(client redis.Scripter, opts *Options) *Store {
	return &Store{client: client, opts: Options{
		Prefix: opts.prefix(), TTL: opts.ttl(), ResultTTL: opts.resultTTL(), Owner: opts.owner(),
	}}
}

// Key is the Redis key of key.
func (s *Store) Key(key string) string { return s.opts.Prefix + key }

// TTL is the claim lease in use.
func (s *Store) TTL() time.Duration { return s.opts.TTL }

func (s *Store) check(key string) error {
	switch {
	case s.client == nil:
		return fmt.Errorf("%w: nil client", ErrInvalid)
	case key == "":
		return fmt.Errorf("%w: empty key", ErrInvalid)
	case s.opts.TTL < time.Millisecond:
		return fmt.Errorf("%w: ttl %s is under 1ms", ErrInvalid, s.opts.TTL)
	case s.opts.ResultTTL < time.Millisecond:
		return fmt.Errorf("%w: result ttl %s is under 1ms", ErrInvalid, s.opts.ResultTTL)
	}
	return nil
}

// Claim takes key for one run. It returns a *Claim when the caller should
// run the command; otherwise *InProgressError, *DoneError (the outcome to
// replay) or *FingerprintError.
func (s *Store) Claim(ctx context.Context, key string, co *ClaimOptions) (*Claim, error) {
	if err := s.check(key); err != nil {
		return nil, err
	}
	if co == nil {
		co = &ClaimOptions{}
	}
	k := s.Key(key)
	token := identity.Token()
	sent := time.Now()
	reply, err := claimScript().Run(ctx, s.client, []string{k},
		token, s.opts.Owner, co.Fingerprint, s.opts.TTL.Milliseconds(), flag(co.RerunFailed), flag(co.AtMostOnce)).Slice()
	if err != nil {
		return nil, wrap(k, err)
	}
	status, rec, err := parseReply(k, reply)
	if err != nil {
		return nil, err
	}
	switch status {
	case "claimed":
		c := &Claim{
			Key: k, Token: token, Owner: rec.Owner, Fingerprint: rec.Fingerprint,
			StartedAt: rec.StartedAt, Attempt: rec.Attempts, TTL: s.opts.TTL, AtMostOnce: co.AtMostOnce, store: s, sent: sent,
		}
		if err := c.confirm(ctx); err != nil {
			return nil, err
		}
		return c, nil
	case "running":
		return nil, &InProgressError{Record: rec}
	case "done":
		return nil, &DoneError{Record: rec}
	case "unknown":
		return nil, &UnknownError{Record: rec}
	case "fingerprint":
		return nil, &FingerprintError{Key: k, Recorded: rec.Fingerprint, Given: co.Fingerprint, Record: rec}
	}
	return nil, fmt.Errorf("once: %s: %w", k, redisreply.Unexpected("script status", strconv.Quote(status)))
}

// confirm applies the lease rule (leasetime.Deadline) to a claim whose
// reply just arrived. A late claim is re-confirmed by one renewal from a
// fresh send time; if that fails or is late too, the claim is given up
// and the error matches ErrLate (and, when the renewal was late too,
// a *lock.LateError with Slow set).
func (c *Claim) confirm(ctx context.Context) error {
	if time.Now().Before(leasetime.Deadline(c.sent, c.TTL, 0)) {
		return nil
	}
	took := time.Since(c.sent)
	sent := time.Now()
	err := c.Renew(ctx)
	late := !time.Now().Before(leasetime.Deadline(sent, c.TTL, 0))
	if err == nil && !late {
		c.sent = sent
		return nil
	}
	// The command has not run: free the key, unless another claimant
	// holds it. That includes ErrLost, for an at-most-once claim whose
	// lease lapsed meanwhile: the renewal marked it unknown, yet its
	// outcome is known (nothing ran), and abandon.lua takes it back. A
	// claim that is gone leaves abandon nothing to do.
	if !errors.Is(err, ErrNotOwner) {
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		_ = c.Abandon(actx)
		cancel()
	}
	msg := fmt.Sprintf("%s: the claim's reply came %s after it was sent, past its local deadline (ttl %s - margin %s), and re-confirming it failed",
		c.Key, took.Round(time.Millisecond), c.TTL, leasetime.DefaultMargin(c.TTL))
	if late && (err == nil || errors.Is(err, ErrLost)) {
		// Both replies slower than the claim allows (the first one's
		// delay may have let the claim expire, and nobody else took
		// it): the link is, and no claim can count on it.
		return &slowClaim{late: &lock.LateError{Key: c.Key, Op: "claim", TTL: c.TTL, Took: time.Since(sent), Slow: true}}
	}
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrLate, msg, err)
	}
	return fmt.Errorf("%w: %s: that reply was late too", ErrLate, msg)
}

// slowClaim is the error of a claim given up because both its replies
// came slower than its TTL allows: ErrLate, wrapping the *lock.LateError
// with Slow set, whose text it carries after its own "once: " prefix
// without the lock package's.
type slowClaim struct{ late *lock.LateError }

func (e *slowClaim) Error() string {
	return ErrLate.Error() + ": " + strings.TrimPrefix(e.late.Error(), "lock: ")
}

func (e *slowClaim) Unwrap() []error { return []error{ErrLate, e.late} }

// Get reads key's record, for display; ErrNotFound when there is none.
func (s *Store) Get(ctx context.Context, key string) (Record, error) {
	if s.client == nil || key == "" {
		return Record{}, s.check(key)
	}
	k := s.Key(key)
	reply, err := getScript().Run(ctx, s.client, []string{k}).Slice()
	if err != nil {
		return Record{}, wrap(k, err)
	}
	if len(reply) != 3 {
		return Record{}, fmt.Errorf("once: %s: %w", k, redisreply.Unexpected("script reply", reply))
	}
	fields, _ := reply[1].([]any)
	if len(fields) == 0 {
		return Record{}, fmt.Errorf("%w: %s", ErrNotFound, k)
	}
	rec := parseRecord(k, reply[0], fields)
	if rec.State != StateRunning && rec.State != StateDone && rec.State != StateUnknown {
		// As claim.lua decides: a hash without a known state is someone
		// else's, not a record to show.
		return Record{}, &WrongTypeError{Key: k, Msg: "hash is not a once record"}
	}
	if now, ok := reply[2].(int64); ok && rec.lapsed(time.UnixMilli(now)) {
		// What the next claim will find (and mark): read-only here.
		rec.State = StateUnknown
	}
	return rec, nil
}

// lapsed reports whether r is an at-most-once claim whose lease ended by
// now (server time) without an outcome, as claim.lua decides.
func (r Record) lapsed(now time.Time) bool {
	return r.State == StateRunning && !r.LeaseDeadline.IsZero() && !r.LeaseDeadline.After(now)
}

// Claim is the right to run a key's command once. Renew it while the
// command runs (KeepAlive does), then Complete or Abandon it.
type Claim struct {
	Key         string // the Redis key
	Token       string
	Owner       string
	Fingerprint string
	StartedAt   time.Time // server time
	Attempt     int       // 1, or more when rerunning a failure
	TTL         time.Duration
	AtMostOnce  bool // claimed with ClaimOptions.AtMostOnce
	store       *Store
	sent        time.Time // when the claim was sent: the lease runs from no later than this
}

// Renew extends the claim by its TTL. ErrLost when the record is gone (the
// claim expired) or, at most once, its lease lapsed (the key is now
// StateUnknown); *NotOwnerError when another claimant took over.
func (c *Claim) Renew(ctx context.Context) error {
	reply, err := renewScript().Run(ctx, c.store.client, []string{c.Key}, c.Token, c.TTL.Milliseconds()).Slice()
	if err != nil {
		return wrap(c.Key, err)
	}
	return c.ownership(reply)
}

// Complete records the command's exit code (128+N for death by signal N)
// and keeps the record for the store's ResultTTL. When the claim lapsed and
// nobody took over, the outcome is still recorded (Record.Expired): an
// at-most-once claim that lapsed into StateUnknown is still this claim's
// (the token in the record says so), and an at-least-once claim whose
// record expired is recorded anew. When another claimant took over, or an
// operator resolved the key, nothing is written and *NotOwnerError has the
// record; when an at-most-once record is gone (resolved with retry),
// nothing is written and the error matches ErrLost.
func (c *Claim) Complete(ctx context.Context, exitCode int) (Record, error) {
	reply, err := completeScript().Run(ctx, c.store.client, []string{c.Key},
		c.Token, exitCode, c.store.opts.ResultTTL.Milliseconds(), c.Owner, c.Fingerprint,
		c.StartedAt.UnixMilli(), c.Attempt, flag(c.AtMostOnce)).Slice()
	if err != nil {
		return Record{}, wrap(c.Key, err)
	}
	status, rec, err := parseReply(c.Key, reply)
	if err != nil {
		return Record{}, err
	}
	switch status {
	case "ok":
		return rec, nil
	case "gone":
		return rec, fmt.Errorf("%w: %s has no record (resolved with retry, or deleted)", ErrLost, c.Key)
	}
	return rec, &NotOwnerError{Record: rec}
}

// MarkUnknown turns the claim's record StateUnknown now, for an
// at-most-once claim whose command was stopped part way: whether it took
// effect is unknown, and no later call may run it until the key is
// resolved. ErrLost when the record is gone; *NotOwnerError when it is
// someone else's (another claimant's, or resolved by an operator).
func (c *Claim) MarkUnknown(ctx context.Context) error {
	reply, err := unknownScript().Run(ctx, c.store.client, []string{c.Key}, c.Token).Slice()
	if err != nil {
		return wrap(c.Key, err)
	}
	return c.ownership(reply)
}

// Abandon drops the claim without recording an outcome, so that the next
// call runs the command (use it when the command never started).
func (c *Claim) Abandon(ctx context.Context) error {
	reply, err := abandonScript().Run(ctx, c.store.client, []string{c.Key}, c.Token).Slice()
	if err != nil {
		return wrap(c.Key, err)
	}
	return c.ownership(reply)
}

func (c *Claim) ownership(reply []any) error {
	status, rec, err := parseReply(c.Key, reply)
	if err != nil {
		return err
	}
	switch status {
	case "ok":
		return nil
	case "gone":
		return fmt.Errorf("%w: %s expired", ErrLost, c.Key)
	case "lapsed":
		return fmt.Errorf("%w: %s: the lease lapsed; the outcome is unknown until resolved", ErrLost, c.Key)
	}
	return &NotOwnerError{Record: rec}
}

// parseReply reads {status[, pttl, HGETALL]}.
func parseReply(key string, reply []any) (string, Record, error) {
	if len(reply) == 0 {
		return "", Record{}, fmt.Errorf("once: %s: %w", key, redisreply.Unexpected("script reply", reply))
	}
	status, _ := reply[0].(string)
	if len(reply) < 3 {
		return status, Record{Key: key}, nil
	}
	fields, _ := reply[2].([]any)
	return status, parseRecord(key, reply[1], fields), nil
}

func parseRecord(key string, pttl any, fields []any) Record {
	f := make(map[string]string, len(fields)/2)
	for i := 0; i+1 < len(fields); i += 2 {
		k, _ := fields[i].(string)
		v, _ := fields[i+1].(string)
		f[k] = v
	}
	num := func(name string) int64 {
		n, _ := strconv.ParseInt(f[name], 10, 64)
		return n
	}
	ms := func(name string) time.Time {
		if n := num(name); n > 0 {
			return time.UnixMilli(n).UTC()
		}
		return time.Time{}
	}
	r := Record{
		Key:         key,
		State:       f["state"],
		Owner:       f["owner"],
		Fingerprint: f["fingerprint"],
		StartedAt:   ms("started_ms"),
		FinishedAt:  ms("finished_ms"),
		Duration:    time.Duration(num("duration_ms")) * time.Millisecond,
		ExitCode:    int(num("exit")),
		Attempts:    int(num("attempts")),
		Expired:     f["expired"] == "1",
		TTL:         -1,
		Mode:        f["mode"],
		Resolved:    f["resolved"],
		ResolvedBy:  f["resolved_by"],
	}
	r.LeaseDeadline = ms("lease_ms")
	if p, ok := pttl.(int64); ok && p >= 0 {
		r.TTL = time.Duration(p) * time.Millisecond
	}
	return r
}

func wrap(key string, err error) error {
	if redisreply.IsData(err) {
		return &WrongTypeError{Key: key, Msg: err.Error()}
	}
	return fmt.Errorf("once: %s: %w", key, err)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// DefaultOwner is user@host:pid of this process: the claimant recorded
// without an Owner, the same owner pkg/lock records for a lock acquired
// without one.
func DefaultOwner() string { return identity.Owner() }
