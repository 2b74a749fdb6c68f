package once

import (
	"context"
	"fmt"
	"strconv"

	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/redis/go-redis/v9"
)

// Decisions of Resolve.
const (
	// ResolveSucceeded records exit 0: later calls replay success.
	ResolveSucceeded = "succeeded"
	// ResolveFailed records a failure (ResolveOptions.ExitCode, default 1):
	// later calls replay it (or, with RerunFailed, run again).
	ResolveFailed = "failed"
	// ResolveRetry deletes the record: the next call runs the command.
	ResolveRetry = "retry"
)

// ResolveOptions qualify a Resolve; nil means none.
type ResolveOptions struct {
	// ExitCode is the outcome recorded by ResolveFailed (1..255; 0 means 1).
	ExitCode int
	// Who resolved it and Reason why, both recorded in the audit stream
	// and Who in the record (Record.ResolvedBy).
	Who    string
	Reason string
	// AuditKey is the stream the resolution is recorded in ("" for none)
	// and AuditMaxLen its bound (XADD MAXLEN ~; 0 means 10000).
	AuditKey    string
	AuditMaxLen int64
}

// Resolution is what Resolve did.
type Resolution struct {
	Decision string
	ExitCode int    // recorded outcome; 0 for ResolveRetry
	Before   Record // the unknown record that was resolved
	AuditID  string // the audit stream entry's ID, "" without one
}

// Resolve settles a key whose outcome is unknown (StateUnknown, or an
// at-most-once claim whose lease has lapsed and not been marked yet):
// ResolveSucceeded and ResolveFailed record an outcome that later calls
// replay, kept for the store's ResultTTL; ResolveRetry deletes the record
// so that the next call runs the command. Someone must first find out
// whether the command took effect (check the payment provider, say).
//
// It refuses, changing nothing, any key that is not unknown with a
// *NotUnknownError (errors.Is ErrNotUnknown, and ErrInProgress for a claim
// whose lease is alive). With an AuditKey the resolution is recorded in
// that stream (who, key, decision, exit, the claimant, reason) before it
// is applied, in the same script on a single server; on a Cluster the
// audit record is written between a check and the resolution, and
// withdrawn if the resolution is then refused.
func (s *Store) Resolve(ctx context.Context, key, decision string, ro *ResolveOptions) (Resolution, error) {
	if err := s.check(key); err != nil {
		return Resolution{}, err
	}
	if ro == nil {
		ro = &ResolveOptions{}
	}
	code := 0
	switch decision {
	case ResolveSucceeded, ResolveRetry:
	case ResolveFailed:
		code = ro.ExitCode
		if code == 0 {
			code = 1
		}
		if code < 1 || code > 255 {
			return Resolution{}, fmt.Errorf("%w: exit code %d: want 1..255 for a failure", ErrInvalid, code)
		}
	default:
		return Resolution{}, fmt.Errorf("%w: decision %q: want %s, %s or %s", ErrInvalid, decision, ResolveSucceeded, ResolveFailed, ResolveRetry)
	}
	maxLen := ro.AuditMaxLen
	if maxLen <= 0 {
		maxLen = 10000
	}
	who := ro.Who
	if who == "" {
		who = DefaultOwner()
	}
	k := s.Key(key)
	cluster, _ := s.client.(*redis.ClusterClient)
	keys := []string{k}
	if ro.AuditKey != "" && cluster == nil {
		keys = append(keys, ro.AuditKey)
	}
	run := func(check string) (Resolution, error) {
		reply, err := resolveScript().Run(ctx, s.client, keys, decision, code, s.opts.ResultTTL.Milliseconds(),
			who, ro.Reason, key, maxLen, check).Slice()
		if err != nil {
			return Resolution{}, wrap(k, err)
		}
		status, rec, err := parseReply(k, reply)
		if err != nil {
			return Resolution{}, err
		}
		switch status {
		case "ok":
			r := Resolution{Decision: decision, ExitCode: code, Before: rec}
			r.Before.State = StateUnknown
			if len(reply) > 3 {
				r.AuditID, _ = reply[3].(string)
			}
			return r, nil
		case "none":
			return Resolution{}, &NotUnknownError{Record: Record{Key: k, State: "none", TTL: -1}}
		case StateRunning, StateDone:
			return Resolution{}, &NotUnknownError{Record: rec}
		}
		return Resolution{}, fmt.Errorf("once: %s: %w", k, redisreply.Unexpected("script status", strconv.Quote(status)))
	}
	if ro.AuditKey == "" || cluster == nil {
		return run("0")
	}
	// Cluster: check, then the audit record, then the resolution.
	r, err := run("1")
	if err != nil {
		return r, err
	}
	id, err := cluster.XAdd(ctx, &redis.XAddArgs{Stream: ro.AuditKey, MaxLen: maxLen, Approx: true, Values: []any{
		"who", who, "name", key, "key", k, "kind", "once", "action", "once-resolve",
		"decision", decision, "exit", strconv.Itoa(code), "owner", r.Before.Owner, "reason", ro.Reason,
	}}).Result()
	if err != nil {
		return Resolution{}, fmt.Errorf("once: resolve %s: nothing changed: the audit record could not be written: %w", k, err)
	}
	r, err = run("0")
	if err != nil {
		if xerr := cluster.XDel(context.WithoutCancel(ctx), ro.AuditKey, id).Err(); xerr != nil {
			err = fmt.Errorf("%w (and its audit record %s could not be withdrawn: %v)", err, id, xerr)
		}
		return Resolution{}, err
	}
	r.AuditID = id
	return r, nil
}
