package inspect

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/internal/lib/luascript"
	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/lockctl/lockctl/internal/lib/scriptcmds"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

var (
	//go:embed forcerelease.lua
	forceReleaseLua string
	//go:embed fairwake.lua
	fairWakeLua string
	//go:embed fixorphan.lua
	fixOrphanLua string

	// Built on first use, not at start-up: every lockctl invocation links
	// these scripts, few run them.
	forceReleaseScript = sync.OnceValue(func() *luascript.Script {
		return luascript.New(lockwire.ValueLua + lockwire.WakeLua + forceReleaseLua)
	})
	fairWakeScript  = sync.OnceValue(func() *luascript.Script { return luascript.New(fairWakeLua) })
	fixOrphanScript = sync.OnceValue(func() *luascript.Script { return luascript.New(fixOrphanLua) })
)

// inspectScriptCommands lists, sorted, the commands force-release's (with
// the wake-up of its waiters, and of a Redisson fair lock's next one) and
// orphans --fix's scripts call.
func inspectScriptCommands() []string {
	return scriptcmds.Calls(lockwire.ValueLua, lockwire.WakeLua, forceReleaseLua, fairWakeLua, fixOrphanLua)
}

// TokenPrefixMin is the fewest hex digits of SHA-1(token) that
// ForceRelease reads as a prefix of a holder's token hash (TokenHash). A
// holder who took over since the operator looked shares a prefix of n
// digits by chance once in 16^n force-releases: once in 16.7 million at
// 6, the length below which a mistyped or half-copied hash would start
// to release strangers.
const TokenPrefixMin = 6

// PrefixError is a token that ForceRelease read as a hash prefix and that
// names no one holder: shorter than TokenPrefixMin hex digits (Holders 0),
// or shared by Holders holders (slots of one semaphore, holds of one
// Redisson lock). Nothing was changed. It matches lock.ErrInvalid.
type PrefixError struct {
	Key     string
	Prefix  string
	Holders int
}

func (e *PrefixError) Error() string {
	if e.Holders > 1 {
		return fmt.Sprintf("inspect: force-release %s: token hash prefix %s names %d holders", e.Key, e.Prefix, e.Holders)
	}
	return fmt.Sprintf("inspect: force-release %s: token %s is no holder's, and shorter than a token hash prefix (at least %d hex digits)",
		e.Key, e.Prefix, TokenPrefixMin)
}

// Is makes a *PrefixError match lock.ErrInvalid.
func (e *PrefixError) Is(target error) bool { return target == lock.ErrInvalid }

// ReleaseOptions tune ForceRelease. A nil *ReleaseOptions means defaults.
type ReleaseOptions struct {
	// Reason is recorded in the audit stream.
	Reason string
	// Who is recorded as the person releasing; "" means the OS user@host
	// of this process (the user@host part of a lock owner it records).
	Who string
}

// Released describes a forced release: the holder that was removed.
type Released struct {
	Name string
	// Holder is the removed holder; Reason ReasonSemaphore for a --limit slot,
	// "shared" for a shared holder's slot.
	Holder    lock.Holder
	TokenHash string
	// AuditID is the audit stream entry's ID.
	AuditID string
	// HoldersLeft is, for a semaphore or shared slot, how many slots are
	// still held; for a hold of a Redisson read-write lock (Holder.RWMode
	// set), how many holds.
	HoldersLeft int64
	// Wake is nil when the waiters were woken, else a *lock.WakeError
	// (errors.Is lock.ErrNotWoken): the server refused to publish the
	// wake-up (an ACL without PUBLISH or the channel). The release stands.
	Wake error
}

// ErrOwnKey is the error of a force-release asked to free a key in
// lockctl's own namespace (keys starting "lockctl:": fence counters,
// fence-check records, queues, the audit and event streams), which no lock
// lives in.
var ErrOwnKey = fmt.Errorf("%w: lockctl's own key, not a lock", lock.ErrInvalid)

// ForceRelease deletes the lock called name if token still holds it, wakes
// its waiters and records who, when, which holder and why in the audit
// stream, all in one script on a single server. token is the holder's
// token (for a foreign string lock, its whole value; for a Redisson lock,
// its "uuid:threadId" field), or a prefix of TokenPrefixMin to 40 hex
// digits of SHA-1(token), as TokenHash shows: the script hashes the stored
// token itself, so the comparison and the delete are one atomic step and a
// holder that took over a moment ago is never touched. A prefix must name
// one holder: one that several holders share (slots of one semaphore) is
// refused, as is a shorter hex token that is no holder's own
// (*PrefixError), and nothing is changed. Releasing a Redisson fair
// lock wakes the head of its queue as Redisson's forceUnlock does. For a
// semaphore (--limit) lock, or one held in shared mode, the slot token
// holds is freed and the other holders keep theirs; waiters, exclusive ones
// included, are woken to try again. The waiters are woken as a release
// wakes them, by the same script step on the same
// keys: the FIFO head, the exclusive waiter listed longest ago, the shared
// waiters, or for a freed semaphore slot the semaphore waiter listed
// longest ago, each on its own wake-up stream, so the next holder gets in
// at once. For a Redisson read-write lock
// (RReadWriteLock) token names one hold, "<uuid>:<threadId>:write" for the
// writer's, "<uuid>:<threadId>" for a reader's: that hold is freed whole
// (every re-entry, and a read hold's rwlock_timeout keys), the others keep
// theirs, and the lock is left as Redisson's own unlock leaves it, its
// waiters woken on Redisson's read-write channel ("redisson_rwlock:{name}")
// with Redisson's message when the hold freed was the last or the writer's
// (its read-unlock message, "1", for the writer's; its unlock message, "0",
// for the last reader's).
//
// Nothing is written unless all of it can be: the script checks that the
// key is a lock (a hash must be a Redisson lock, every field
// "uuid:threadId" with a count, or a Redisson read-write lock) and that
// token holds it before it writes,
// and writes the audit record first, so a refusal of any of these, the
// server's refusal of XADD included, leaves everything as it was. On a
// Cluster, where the audit stream lives in another slot, the record is
// written between a check and the release, and withdrawn if the release
// then finds the holder gone. Only the wake-up is best effort (see
// Released.Wake).
//
// Errors: ErrOwnKey (errors.Is lock.ErrInvalid) for a key in lockctl's own
// namespace ("lockctl:"); *PrefixError (errors.Is lock.ErrInvalid) for a hash
// prefix that names no one holder; lock.ErrNotHeld when there is no lock;
// *lock.HeldError (errors.Is lock.ErrNotOwner) naming the current holder
// when token does not match (for slots, Reason semaphore or shared, the
// holder whose slot frees first and Holders; for a Redisson read-write
// lock, RWMode its mode, Owner every holding thread and Holders its holds);
// *lock.DataError (errors.Is lock.ErrWrongType); lock.ErrInvalid;
// Redis errors (an error reply: nothing changed).
func (in *Inspector) ForceRelease(ctx context.Context, name, token string, o *ReleaseOptions) (*Released, error) {
	r, err := in.forceRelease(ctx, name, token, o)
	if err == nil && r.Holder.Format == lock.FormatRedisson && r.Holder.RWMode == "" {
		// (A read-write lock has no fair queue.)
		in.wakeFairHead(ctx, r)
	}
	return r, err
}

// wakeFairHead wakes the head of a Redisson fair lock's queue after its
// lock was force-released, as Redisson's forceUnlock does (fairwake.lua).
// Best effort, as every wake-up: a refusal (an ACL without Redisson's keys
// or channels) is reported in r.Wake, and the release stands. On a Cluster
// a key with a '{' that is no hash tag puts the queue in another slot than
// the lock, where no Redisson fair lock can be: nothing to wake.
func (in *Inspector) wakeFairHead(ctx context.Context, r *Released) {
	key := r.Holder.Key
	queue, timeouts := redissonQueue(key), redissonTimeouts(key)
	if lockwire.Slot(queue) != lockwire.Slot(key) || lockwire.Slot(timeouts) != lockwire.Slot(key) {
		return
	}
	err := fairWakeScript().Run(context.WithoutCancel(ctx), in.c, []string{queue, timeouts}, redissonChannel(key), redissonUnlockMessage).Err()
	if err != nil && !errors.Is(err, redis.Nil) && r.Wake == nil {
		r.Wake = &lock.WakeError{Key: key, Channel: redissonChannel(key) + ":<waiter>", Reason: err.Error()}
	}
}

func (in *Inspector) forceRelease(ctx context.Context, name, token string, o *ReleaseOptions) (*Released, error) {
	if o == nil {
		o = &ReleaseOptions{}
	}
	if name == "" || token == "" {
		return nil, fmt.Errorf("%w: empty lock name or token", lock.ErrInvalid)
	}
	who := o.Who
	if who == "" {
		who = identity.UserHost()
	}
	key := in.Key(name)
	if strings.HasPrefix(key, lockwire.AuxPrefix) {
		return nil, fmt.Errorf("inspect: force-release %s: %w", key, ErrOwnKey)
	}
	// The keys and names a release of key wakes its waiters by
	// (pkg/lock's release.lua): wake.lua picks from the same lists.
	keys := lockwire.WithAux(key, lockwire.KindSem, lockwire.KindSemVal, lockwire.KindQueue, lockwire.KindQueueHB,
		lockwire.KindWriters, lockwire.KindWaiting, lockwire.KindChannel, lockwire.KindWake)
	keys, channel, base := keys[:7], keys[7], keys[8]
	_, cluster := in.c.(*redis.ClusterClient)
	if !cluster {
		keys = append(keys, AuditKey)
	}
	run := func(token, mode string) ([]any, error) {
		v, err := forceReleaseScript().Run(ctx, in.c, keys, token, channel, who, o.Reason, name,
			auditMaxLen, tokenHashLen, redissonChannel(key), redissonUnlockMessage, mode,
			redissonSuffixBase(key), redissonRWChannel(key), redissonReadUnlockMessage, base, TokenPrefixMin).Slice()
		var rerr redis.Error
		if errors.As(err, &rerr) {
			// An error reply: the script stopped before its first write,
			// or withdrew its audit record (see forcerelease.lua).
			return nil, fmt.Errorf("inspect: force-release %s: nothing changed: %w", key, dataError(ctx, in.c, err, keys...))
		}
		if err != nil {
			return nil, fmt.Errorf("inspect: force-release %s: %w", key, err)
		}
		return v, nil
	}
	mode := ""
	if cluster {
		mode = "check"
	}
	v, err := run(token, mode)
	if err != nil {
		return nil, err
	}
	r, err := released(key, name, token, v)
	if err != nil || !cluster {
		return r, err
	}
	// Cluster: the audit record first, then the release of exactly the
	// holder it names (by the token the check matched, not a hash prefix
	// that a new holder's token might share).
	exact, _ := v[6].(string)
	id, err := in.c.XAdd(ctx, &redis.XAddArgs{Stream: AuditKey, MaxLen: auditMaxLen, Approx: true, Values: []any{
		"who", who, "name", name, "key", key, "kind", r.Holder.Kind(), "owner", r.Holder.Owner, "token_hash", r.TokenHash,
		"fence", strconv.FormatInt(r.Holder.Fence, 10), "ttl_ms", strconv.FormatInt(int64(r.Holder.TTL/time.Millisecond), 10),
		"reason", o.Reason,
	}}).Result()
	if err != nil {
		return nil, fmt.Errorf("inspect: force-release %s: nothing changed: the audit record could not be written: %w",
			key, dataError(ctx, in.c, err, AuditKey))
	}
	v, err = run(exact, "")
	if err == nil {
		r, err = released(key, name, exact, v)
	}
	if err != nil {
		if xerr := in.c.XDel(context.WithoutCancel(ctx), AuditKey, id).Err(); xerr != nil {
			err = fmt.Errorf("%w (and its audit record %s could not be withdrawn: %v)", err, id, xerr)
		}
		return nil, err
	}
	r.AuditID = id
	return r, nil
}

// released decodes forcerelease.lua's reply to token into what was (or,
// for a check, would be) released, or the error that refused it.
func released(key, name, token string, v []any) (*Released, error) {
	_, code, err := lockwire.DecodeForceRelease(v)
	if err != nil || (len(v) < 2 && (code == lockwire.ForceNotLock || code == lockwire.ForceAmbiguous || code == lockwire.ForceTooShort)) {
		return nil, fmt.Errorf("inspect: force-release %s: %w", key, redisreply.Unexpected("script reply", v))
	}
	switch code {
	case lockwire.ForceNone:
		return nil, fmt.Errorf("%w: %s", lock.ErrNotHeld, key)
	case lockwire.ForceNotLock:
		t, _ := v[1].(string)
		return nil, &lock.DataError{Key: key, Type: t, Want: "a lock", Err: lock.ErrWrongType}
	case lockwire.ForceOther:
		h, err := holderOf(key, v)
		if err != nil {
			return nil, err
		}
		return nil, &lock.HeldError{Err: lock.ErrNotOwner, Holder: h}
	case lockwire.ForceAmbiguous, lockwire.ForceTooShort:
		n, _ := v[1].(int64)
		if code == lockwire.ForceTooShort {
			n = 0
		}
		return nil, &PrefixError{Key: key, Prefix: token, Holders: int(n)}
	case lockwire.ForceReleased:
	default:
		return nil, fmt.Errorf("inspect: force-release %s: %w", key, redisreply.Unexpected("script reply", v))
	}
	h, err := holderOf(key, v)
	if err != nil {
		return nil, err
	}
	r := &Released{Name: name, Holder: h, TokenHash: TokenHash(h.Token)}
	if len(v) > 9 {
		if id, ok := v[8].(string); ok {
			r.AuditID = id
		}
		r.HoldersLeft, _ = v[9].(int64)
	}
	if len(v) > 11 {
		if why, ok := v[10].(string); ok {
			we := &lock.WakeError{Key: key, Reason: why}
			we.Channel, _ = v[11].(string)
			if len(v) > 12 {
				// Picking the waiter was refused (wake.lua): every
				// process's first waiter was woken instead.
				we.Command, _ = v[12].(string)
			}
			r.Wake = we
		}
	}
	return r, nil
}

// holderOf decodes {code, type, value|fields, pttl, ...} replies: code 1
// {1, type, body, pttl, kind, owner, token, fence, id, left}, code 2 {2,
// type, body, pttl, holders}.
func holderOf(key string, v []any) (lock.Holder, error) {
	if len(v) < 4 {
		return lock.Holder{}, fmt.Errorf("inspect: %w", redisreply.Unexpected("script reply", v))
	}
	t, _ := v[1].(string)
	pttl, _ := v[3].(int64)
	ttl := ttlOf(time.Duration(pttl) * time.Millisecond)
	switch body := v[2].(type) {
	case string:
		h := parseValue(key, body, ttl)
		if t != "zset" {
			return h, nil
		}
		// A semaphore or shared slot: its token is the zset member,
		// whatever the value says.
		h.Reason = lock.ReasonSemaphore
		if h.Shared {
			h.Reason = lock.ReasonShared
		}
		switch code, _ := v[0].(int64); {
		case code == lockwire.ForceReleased && len(v) > 9:
			if kind, _ := v[4].(string); kind == string(lock.ReasonShared) {
				h.Reason, h.Shared = lock.ReasonShared, true
			}
			h.Token, _ = v[6].(string)
			h.Holders, _ = v[9].(int64)
			h.Holders++
		case code == lockwire.ForceOther && len(v) > 4:
			h.Holders, _ = v[4].(int64)
		}
		return h, nil
	case []any:
		fields := make(map[string]string, len(body)/2)
		for i := 0; i+1 < len(body); i += 2 {
			fields[fmt.Sprint(body[i])] = fmt.Sprint(body[i+1])
		}
		// The field that matched, when the token's hold is described.
		tok := ""
		if code, _ := v[0].(int64); code == lockwire.ForceReleased && len(v) > 6 {
			tok, _ = v[6].(string)
		}
		if h, ok := parseRedisson(key, fields, ttl); ok {
			if fields[tok] != "" {
				h.Token = tok
				h.Owner = tok
				h.Reentry, _ = strconv.ParseInt(fields[tok], 10, 64)
			}
			return h, nil
		}
		// A read-write lock: the hold the token named, or, for a refusal,
		// the lock as a whole.
		if hs, ok := parseRedissonRW(key, fields, ttl); ok && tok != "" {
			for _, h := range hs {
				if h.Token == tok {
					return h, nil
				}
			}
		} else if h, ok := parseRedissonAny(key, fields, ttl); ok {
			return h, nil
		}
	}
	return lock.Holder{}, &lock.DataError{Key: key, Type: t, Want: "a lock", Err: lock.ErrWrongType}
}

// AuditActionOnceResolve is AuditEntry.Action of a `once resolve`
// (once.Store.Resolve with AuditKey); force-releases have none.
const AuditActionOnceResolve = "once-resolve"

// AuditEntry is one forced release, or one resolution of a once key whose
// outcome was unknown (Action AuditActionOnceResolve: Kind "once", Owner
// the claimant, Decision and Exit what was decided).
type AuditEntry struct {
	ID        string
	At        time.Time // server time (from the stream ID)
	Who       string
	Name      string
	Key       string
	Kind      string
	Owner     string
	TokenHash string
	Fence     int64
	TTL       time.Duration // what the holder had left; -1 for none
	Reason    string
	Action    string // "" for a force-release, AuditActionOnceResolve
	Decision  string // of a once resolution: succeeded, failed, retry
	Exit      int    // the exit code a once resolution recorded
}

// Audit returns the audit stream oldest first; n > 0 keeps only the n
// newest entries (still oldest first, as a log reads).
func (in *Inspector) Audit(ctx context.Context, n int64) ([]AuditEntry, error) {
	var (
		msgs []redis.XMessage
		err  error
	)
	if n > 0 {
		msgs, err = in.c.XRevRangeN(ctx, AuditKey, "+", "-", n).Result()
		for i, j := 0, len(msgs)-1; i < j; i, j = i+1, j-1 {
			msgs[i], msgs[j] = msgs[j], msgs[i]
		}
	} else {
		msgs, err = in.c.XRange(ctx, AuditKey, "-", "+").Result()
	}
	if err != nil {
		return nil, fmt.Errorf("inspect: audit: %w", dataError(ctx, in.c, err, AuditKey))
	}
	out := make([]AuditEntry, 0, len(msgs))
	for _, m := range msgs {
		s := func(k string) string { v, _ := m.Values[k].(string); return v }
		e := AuditEntry{ID: m.ID, Who: s("who"), Name: s("name"), Key: s("key"), Kind: s("kind"),
			Owner: s("owner"), TokenHash: s("token_hash"), Reason: s("reason"), Action: s("action"), Decision: s("decision")}
		e.Exit, _ = strconv.Atoi(s("exit"))
		e.Fence, _ = strconv.ParseInt(s("fence"), 10, 64)
		if ms, err := strconv.ParseInt(s("ttl_ms"), 10, 64); err == nil {
			e.TTL = ttlOf(time.Duration(ms) * time.Millisecond)
		}
		if i := strings.IndexByte(m.ID, '-'); i > 0 {
			if ms, err := strconv.ParseInt(m.ID[:i], 10, 64); err == nil {
				e.At = time.UnixMilli(ms).UTC()
			}
		}
		out = append(out, e)
	}
	return out, nil
}

// Fix is what FixOrphans does to a key without TTL.
type Fix struct {
	Delete bool
	// Expire is the TTL set when Delete is false (at least 1ms).
	Expire time.Duration
	// Types, when set, holds the Redis type each key had when it was
	// listed (Orphan.Type), in the order of the keys: a key whose type
	// changed since (a lock deleted and the name reused for other data) is
	// left alone, as one that got a TTL is.
	Types []string
}

// FixOrphans applies fix to each key that still has no TTL, checking and
// acting atomically per key (a script: PTTL == -1, and the type listed when
// fix.Types is set, then act), so a key that got a TTL, was re-taken as a
// proper lock or was replaced by another kind of value since the scan is
// left alone.
// It returns, per key, whether it acted. Either fix wakes the key's waiters,
// lockctl's and, for a hash, Redisson's (on its channel, with its unlock
// message): a Redisson waiter that saw no TTL sleeps until a message comes,
// so after an expire it must wake to learn the TTL, and after a delete to
// take the lock. The wake-up is best effort: when the server refused it
// (an ACL without PUBLISH or the channel) the key is fixed all the same,
// and the error returned with the full result is a *lock.WakeError
// (errors.Is lock.ErrNotWoken) naming the first such key. A key in
// lockctl's own namespace ("lockctl:") refuses the whole call (ErrOwnKey) before anything is
// changed. The scripts of a batch are pipelined.
func (in *Inspector) FixOrphans(ctx context.Context, keys []string, fix Fix) ([]bool, error) {
	if !fix.Delete && fix.Expire < time.Millisecond {
		return nil, fmt.Errorf("%w: expire %s is under 1ms", lock.ErrInvalid, fix.Expire)
	}
	// Checked for every key before any is changed: fence counters never
	// expire, by design, and must never be "fixed".
	for _, k := range keys {
		if strings.HasPrefix(k, lockwire.AuxPrefix) {
			return nil, fmt.Errorf("inspect: fix %s: %w", k, ErrOwnKey)
		}
	}
	action := "expire"
	if fix.Delete {
		action = "delete"
	}
	ms := strconv.FormatInt(fix.Expire.Milliseconds(), 10)
	done := make([]bool, len(keys))
	// Load the script once so that the pipeline can use EVALSHA; a server
	// that refuses EVALSHA or SCRIPT LOAD (renamed, ACL) gets EVAL.
	run := fixOrphanScript().EvalSha
	sha := true
	if len(keys) > 0 {
		if luascript.ShaRefused(in.c) {
			run, sha = fixOrphanScript().Eval, false
		} else if err := fixOrphanScript().Load(ctx, in.c).Err(); isRedisErr(err) {
			run, sha = fixOrphanScript().Eval, false
		} else if err != nil {
			return nil, fmt.Errorf("inspect: fix orphans: %w", err)
		}
	}
	var wake error
	for start := 0; start < len(keys); start += int(in.count) {
		end := min(start+int(in.count), len(keys))
		batch := func() ([]*redis.Cmd, error) {
			pipe := in.c.Pipeline()
			cmds := make([]*redis.Cmd, 0, end-start)
			for i, k := range keys[start:end] {
				typ := ""
				if start+i < len(fix.Types) {
					typ = fix.Types[start+i]
				}
				cmds = append(cmds, run(ctx, pipe, []string{k}, action, ms, lockwire.Channel(k),
					redissonChannel(k), redissonUnlockMessage, typ))
			}
			_, err := pipe.Exec(ctx)
			return cmds, pipeErr(err)
		}
		cmds, err := batch()
		if err == nil && sha && len(cmds) > 0 && luascript.Refused(in.c, cmds[0].Err(), "evalsha") {
			// SCRIPT LOAD was allowed, EVALSHA is not (an ACL with
			// +eval and without +evalsha): a refused command ran
			// nothing, and every script of the batch was refused alike,
			// so the batch goes again with EVAL, as every later one.
			run, sha = fixOrphanScript().Eval, false
			cmds, err = batch()
		}
		if err != nil {
			return done, fmt.Errorf("inspect: fix orphans: %w", err)
		}
		// Every script of the batch ran: each key's outcome is recorded
		// before the first failure is returned, so that no key that was
		// changed is reported as left alone.
		var failed error
		for i, c := range cmds {
			v, err := c.Result()
			switch v := v.(type) {
			case int64:
				done[start+i] = v == 1
			case []any:
				// {1, error, channel}: fixed, the wake-up refused.
				done[start+i] = true
				if wake == nil && len(v) == 3 {
					why, _ := v[1].(string)
					ch, _ := v[2].(string)
					wake = &lock.WakeError{Key: keys[start+i], Channel: ch, Reason: why}
				}
			default:
				if err == nil {
					err = fmt.Errorf("unexpected reply %v", v)
				}
				if failed == nil {
					failed = fmt.Errorf("inspect: fix %s: %w", keys[start+i], err)
				}
			}
		}
		if failed != nil {
			return done, failed
		}
	}
	return done, wake
}
