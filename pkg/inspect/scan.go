package inspect

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/redis/go-redis/v9"
)

// Lock is one held lock as a listing shows it.
type Lock struct {
	Name string
	lock.Holder
	// User, Host and PID are parsed from an owner of lockctl's default
	// shape user@host:pid; empty and 0 otherwise.
	User string
	Host string
	PID  int
	// Age is how long ago the lock was acquired (server time); -1 when
	// unknown (foreign locks do not record it).
	Age time.Duration
	// Subscribers listen on the lock's release channel (waiting lockctl
	// processes of earlier versions), or, when more, are listed as waiting
	// (exclusive, shared and semaphore acquirers, each asleep on a wake-up
	// stream of its own), and, for a Redisson lock, on Redisson's (its waiting
	// processes, one subscription each); Queued wait in its FIFO queue, if
	// it has one.
	Subscribers int64
	Queued      int64
	TokenHash   string
	// Renewal is what the holder's value records of its renewals: when it
	// last renewed, its period, and whether it has stopped (Stale).
	Renewal Renewal
	// Process is whether the owner's process still runs, when its host
	// is this one; Inspector.Lock fills it in, listings leave it
	// ProcessUnknown (a /proc read per lock).
	Process Process
}

// Modes of a holder, as Lock.Mode reports them.
const (
	// ModeExclusive: the one holder of a lock key (lockctl's, another
	// client's SET NX lock, a Redisson lock).
	ModeExclusive = "exclusive"
	// ModeShared: one of any number of shared holders (lock.AcquireOptions.Shared).
	ModeShared = "shared"
	// ModeSemaphore: one slot of a counting (--limit) lock.
	ModeSemaphore = "semaphore"
	// ModeRead and ModeWrite: a read or a write hold of a Redisson
	// read-write lock (RReadWriteLock), which Inspector shows and
	// ForceRelease frees hold by hold, but lockctl never takes.
	ModeRead  = "read"
	ModeWrite = "write"
)

// Mode is how l holds its lock: ModeShared for a shared holder (Reason
// shared), ModeSemaphore for a --limit slot (Kind "semaphore"), ModeRead
// or ModeWrite for a hold of a Redisson read-write lock, ModeExclusive for
// everything else.
func (l Lock) Mode() string {
	if l.RWMode != "" {
		return l.RWMode
	}
	switch l.Reason {
	case lock.ReasonShared:
		return ModeShared
	case lock.ReasonSemaphore:
		return ModeSemaphore
	}
	return ModeExclusive
}

// Waiters is the number of processes known to wait for the lock. Every
// waiting lockctl process subscribes to the release channel, and a FIFO
// waiter is in the queue as well, so the two counts overlap: the larger is
// the estimate. (It can be off briefly: a FIFO waiter joins the queue just
// before it subscribes, and the waiters of one process share a
// subscription.)
func (l Lock) Waiters() int64 { return max(l.Subscribers, l.Queued) }

// ScanOptions tune one scan. A nil *ScanOptions means all defaults.
type ScanOptions struct {
	// Progress, if set, is called after each batch with the number of
	// keys SCAN has returned so far (for a progress line).
	Progress func(scanned int64)
}

func (o *ScanOptions) progress(n int64) {
	if o != nil && o.Progress != nil {
		o.Progress(n)
	}
}

// Locks calls fn for every held lock whose name matches glob ("" for all),
// in SCAN order (unsorted), batch by batch: memory stays flat however large
// the keyspace. Keys that are not locks (lists, sets, plain hashes, and
// lockctl's auxiliary keys) are skipped. A semaphore (--limit) has no lock
// key; it is found by its holder set, in the same SCAN under the default
// prefix (a second one otherwise), and yields one Lock per
// live holder (Kind "semaphore", Holders and Limit set), earliest
// acquisition first. Shared holders (lock.AcquireOptions.Shared) live in
// the same set and are found alike: one Lock per shared holder, Kind
// "shared", Holders set. An error from fn stops the scan and is returned.
//
// Each batch costs one round trip: the reads of one batch (TYPE, PTTL, GET,
// the FIFO queue's length, PUBSUB NUMSUB; for semaphores their holders and
// values) are pipelined together with the SCAN for the next batch;
// Redisson hashes cost one more.
func (in *Inspector) Locks(ctx context.Context, glob string, o *ScanOptions, fn func(Lock) error) error {
	var scanned int64
	emit := func(keys []string, batch []Lock) error {
		scanned += int64(len(keys))
		o.progress(scanned)
		for _, l := range batch {
			if err := fn(l); err != nil {
				return err
			}
		}
		return nil
	}
	return forEachNode(ctx, in.c, func(ctx context.Context, node redis.UniversalClient) error {
		clk, err := serverClock(ctx, node)
		if err != nil {
			return err
		}
		match := in.Pattern(glob)
		semOf := func(aux string) (string, bool) {
			kind, key, ok := lockwire.KeyOfAux(aux)
			if !ok || kind != lockwire.KindSem || isAux(key) || !strings.HasPrefix(key, in.prefix) || !globMatch(match, key) {
				return "", false
			}
			return key, true
		}
		isLock := func(k string) bool { return in.notAux(k) && globMatch(match, k) }
		// Both kinds in one pass over the keyspace when one pattern covers
		// them without taking in much else (see onePass): SCAN walks every
		// key of the database whatever MATCH says, so a second pass costs
		// the server as much as the first.
		if both, ok := onePass(match, in.semPattern()); ok {
			return in.scan(ctx, node, both, func(k string) bool { _, sem := semOf(k); return sem || isLock(k) },
				func(keys []string, next func(redis.Pipeliner)) error {
					var locks, sems []string
					for _, k := range keys {
						if key, ok := semOf(k); ok {
							sems = append(sems, key)
						} else {
							locks = append(locks, k)
						}
					}
					batch, err := in.readLocks(ctx, node, locks, clk, next)
					if err != nil {
						return err
					}
					if len(sems) > 0 {
						// Rare: a batch with semaphores costs one more round trip.
						more, err := in.readSems(ctx, node, sems, clk, func(redis.Pipeliner) {})
						if err != nil {
							return err
						}
						batch = append(batch, more...)
					}
					return emit(keys, batch)
				})
		}
		err = in.scan(ctx, node, match, in.notAux, func(keys []string, next func(redis.Pipeliner)) error {
			batch, err := in.readLocks(ctx, node, keys, clk, next)
			if err != nil {
				return err
			}
			return emit(keys, batch)
		})
		if err != nil {
			return err
		}
		return in.scan(ctx, node, in.semPattern(), func(aux string) bool { _, ok := semOf(aux); return ok },
			func(auxKeys []string, next func(redis.Pipeliner)) error {
				keys := make([]string, len(auxKeys))
				for i, a := range auxKeys {
					keys[i], _ = semOf(a)
				}
				batch, err := in.readSems(ctx, node, keys, clk, next)
				if err != nil {
					return err
				}
				return emit(keys, batch)
			})
	})
}

// onePass returns one SCAN pattern that matches every key either pattern
// does, when that costs little: their common literal prefix followed by
// '*' when it is long enough to keep unrelated keys out of the replies and
// hardly shorter than the lock pattern's own ("lock" for the default prefix
// "lock:" and the semaphores' "lockctl:sem:": the replies gain lockctl's
// auxiliary keys only), or '*' when the lock pattern matches everything
// anyway. Otherwise (a narrower PATTERN) the caller scans twice, letting
// the server filter each pass.
func onePass(a, b string) (string, bool) {
	if strings.Trim(a, "*") == "" {
		return "*", true
	}
	la, lb := literalPrefix(a), literalPrefix(b)
	if len(la) < len(a) && a[len(la)] != '*' {
		// An escape, '?' or a class: the literal part goes on beyond.
		return "", false
	}
	n := 0
	for n < len(la) && n < len(lb) && la[n] == lb[n] {
		n++
	}
	if n < 4 || len(la)-n > 1 {
		return "", false
	}
	return la[:n] + "*", true
}

// literalPrefix is the part of a glob before its first special character.
func literalPrefix(p string) string {
	if i := strings.IndexAny(p, `*?[\`); i >= 0 {
		return p[:i]
	}
	return p
}

// semPattern matches the holder sets of every semaphore whose lock key may
// start with the prefix: both shapes of AuxKey ("{key}" and "{tag}key")
// contain the whole key after "lockctl:sem:". Names are then checked
// exactly by decoding the lock key (lockwire.KeyOfAux).
func (in *Inspector) semPattern() string {
	return escapeGlob(lockwire.AuxPrefix+lockwire.KindSem+":") + "*" + escapeGlob(in.prefix) + "*"
}

// notAux keeps the keys that may be locks: not lockctl's auxiliary keys,
// nor the ones Redisson keeps beside its locks (lockwire.IsRedissonAux).
func (in *Inspector) notAux(key string) bool { return !isAux(key) && !lockwire.IsRedissonAux(key) }

// scan walks the keys matching match that keep accepts. batch gets the
// kept keys of one SCAN reply and a function that queues the next SCAN on
// the pipeline batch sends, so scanning and reading share round trips.
func (in *Inspector) scan(ctx context.Context, node redis.UniversalClient, match string, keep func(string) bool,
	batch func(keys []string, next func(redis.Pipeliner)) error) error {
	keys, cursor, err := node.Scan(ctx, 0, match, in.count).Result()
	if err != nil {
		return err
	}
	for {
		var nextCmd *redis.ScanCmd
		next := func(p redis.Pipeliner) {
			if cursor != 0 {
				nextCmd = p.Scan(ctx, cursor, match, in.count)
			}
		}
		kept := keys[:0]
		for _, k := range keys {
			if keep(k) {
				kept = append(kept, k)
			}
		}
		if err := batch(kept, next); err != nil {
			return err
		}
		if cursor == 0 {
			return nil
		}
		if nextCmd == nil {
			// batch had nothing to read and did not send the pipeline.
			keys, cursor, err = node.Scan(ctx, cursor, match, in.count).Result()
		} else {
			keys, cursor, err = nextCmd.Result()
		}
		if err != nil {
			return err
		}
	}
}

// readLocks reads one batch of keys and returns the locks among them.
func (in *Inspector) readLocks(ctx context.Context, node redis.UniversalClient, keys []string, clk clock,
	next func(redis.Pipeliner)) ([]Lock, error) {
	pipe := node.Pipeline()
	next(pipe)
	if len(keys) == 0 {
		if pipe.Len() > 0 {
			if _, err := pipe.Exec(ctx); pipeErr(err) != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	r := queueBatchReads(ctx, pipe, keys)
	if _, err := pipe.Exec(ctx); pipeErr(err) != nil {
		return nil, err
	}
	var hashes []int
	out := make([]Lock, 0, len(keys))
	r.subs, _ = r.numsub.Result()
	r.shards = r.shardsub.Val()
	for i, k := range keys {
		for _, c := range []redis.Cmder{r.types[i], r.pttls[i], r.gets[i], r.zcards[i]} {
			if err := cmdErr(c); err != nil {
				return nil, err
			}
		}
		ttl := ttlOf(r.pttls[i].Val())
		switch r.types[i].Val() {
		case "string":
			h := parseValue(k, r.gets[i].Val(), ttl)
			out = append(out, in.record(h, clk, max(r.subs[r.chans[i]], r.listed[i].Val()), r.zcards[i].Val()))
		case "hash":
			hashes = append(hashes, i)
		}
	}
	if len(hashes) == 0 {
		return out, nil
	}
	return in.readHashLocks(ctx, node, keys, hashes, r, clk, out)
}

// batchReads are the replies readLocks pipelines for one batch of keys,
// index by index, and the channels it counted the subscribers of.
type batchReads struct {
	types    []*redis.StatusCmd
	pttls    []*redis.DurationCmd
	gets     []*redis.StringCmd
	zcards   []*redis.IntCmd
	listed   []listedCount
	chans    []string
	rchans   []string
	numsub   *redis.MapStringIntCmd
	shardsub *redis.MapStringIntCmd
	// subs and shards are numsub's and shardsub's values once read.
	subs, shards map[string]int64
}

// queueBatchReads queues on pipe the reads of every key of a batch: its
// type, TTL, value, FIFO queue length, announced waiters, and the
// subscribers of its release channel and Redisson's.
func queueBatchReads(ctx context.Context, pipe redis.Pipeliner, keys []string) *batchReads {
	n := len(keys)
	r := &batchReads{
		types:  make([]*redis.StatusCmd, n),
		pttls:  make([]*redis.DurationCmd, n),
		gets:   make([]*redis.StringCmd, n),
		zcards: make([]*redis.IntCmd, n),
		listed: make([]listedCount, n),
		chans:  make([]string, n),
		rchans: make([]string, n),
	}
	for i, k := range keys {
		r.types[i] = pipe.Type(ctx, k)
		r.pttls[i] = pipe.PTTL(ctx, k)
		// GET on a hash fails with WRONGTYPE, which costs less than a
		// second round trip to ask for strings only.
		r.gets[i] = pipe.Get(ctx, k)
		// The FIFO queue (a sorted set of waiting tokens).
		r.zcards[i] = pipe.ZCard(ctx, lockwire.AuxKey(lockwire.KindQueue, k))
		r.listed[i] = announced(ctx, pipe, k)
		r.chans[i] = lockwire.Channel(k)
		r.rchans[i] = redissonChannel(k)
	}
	r.numsub = pipe.PubSubNumSub(ctx, append(r.chans, r.rchans...)...)
	// Redisson's waiters subscribe to its channel, with SSUBSCRIBE on a
	// Redis 7 Cluster (older servers reject SHARDNUMSUB: no count then).
	r.shardsub = pipe.PubSubShardNumSub(ctx, r.rchans...)
	return r
}

// readHashLocks reads the hashes of a batch (keys[i] for i in hashes), in
// one more round trip, and appends to out the Redisson locks among them.
func (in *Inspector) readHashLocks(ctx context.Context, node redis.UniversalClient, keys []string, hashes []int,
	r *batchReads, clk clock, out []Lock) ([]Lock, error) {
	hp := node.Pipeline()
	scans := make([]*redis.ScanCmd, len(hashes))
	fair := make([]*redis.IntCmd, len(hashes))
	rwchans := make([]string, len(hashes))
	for j, i := range hashes {
		scans[j] = redisson(ctx, hp, keys[i])
		// (Only where Redisson could keep a queue: in the key's slot,
		// so on this node of a Cluster.)
		if lockwire.Slot(redissonTimeouts(keys[i])) == lockwire.Slot(keys[i]) {
			fair[j] = fairWaiters(ctx, hp, keys[i], clk)
		}
		rwchans[j] = redissonRWChannel(keys[i])
	}
	rwsubs := hp.PubSubNumSub(ctx, rwchans...)
	rwshards := hp.PubSubShardNumSub(ctx, rwchans...)
	if _, err := hp.Exec(ctx); pipeErr(err) != nil {
		return nil, err
	}
	for j, i := range hashes {
		var queued int64
		if fair[j] != nil {
			if err := cmdErr(fair[j]); err != nil {
				return nil, err
			}
			queued = fair[j].Val()
		}
		fields, ok := redissonFields(scans[j])
		if !ok {
			continue
		}
		ttl := ttlOf(r.pttls[i].Val())
		waiting := max(r.subs[r.chans[i]], r.listed[i].Val()) + r.subs[r.rchans[i]] + r.shards[r.rchans[i]]
		// A fair lock's waiters each listen on a channel of their own:
		// its queue counts them (those whose place has not timed out).
		queued += r.zcards[i].Val()
		if h, ok := parseRedisson(keys[i], fields, ttl); ok {
			out = append(out, in.record(h, clk, waiting, queued))
			continue
		}
		// A read-write lock: one row per hold. Its waiters listen on
		// Redisson's read-write channel.
		hs, ok := parseRedissonRW(keys[i], fields, ttl)
		if !ok {
			continue
		}
		waiting = max(r.subs[r.chans[i]], r.listed[i].Val()) + rwsubs.Val()[rwchans[j]] + rwshards.Val()[rwchans[j]]
		for _, h := range hs {
			out = append(out, in.record(h, clk, waiting, queued))
		}
	}
	return out, nil
}

// readSems reads the semaphores of one batch (keys are lock keys) and
// returns one Lock per live holder.
func (in *Inspector) readSems(ctx context.Context, node redis.UniversalClient, keys []string, clk clock,
	next func(redis.Pipeliner)) ([]Lock, error) {
	pipe := node.Pipeline()
	next(pipe)
	if len(keys) == 0 {
		if pipe.Len() > 0 {
			if _, err := pipe.Exec(ctx); pipeErr(err) != nil {
				return nil, err
			}
		}
		return nil, nil
	}
	now := clk.now()
	sems := make([]*redis.ZSliceCmd, len(keys))
	vals := make([]*redis.MapStringStringCmd, len(keys))
	queues := make([]*redis.IntCmd, len(keys))
	listed := make([]listedCount, len(keys))
	chans := make([]string, len(keys))
	for i, k := range keys {
		sems[i] = liveHolders(ctx, pipe, k, now)
		vals[i] = pipe.HGetAll(ctx, lockwire.AuxKey(lockwire.KindSemVal, k))
		queues[i] = pipe.ZCard(ctx, lockwire.AuxKey(lockwire.KindQueue, k))
		listed[i] = announced(ctx, pipe, k)
		chans[i] = lockwire.Channel(k)
	}
	numsub := pipe.PubSubNumSub(ctx, chans...)
	if _, err := pipe.Exec(ctx); pipeErr(err) != nil {
		return nil, err
	}
	subs, _ := numsub.Result()
	var out []Lock
	for i, k := range keys {
		for _, c := range []redis.Cmder{sems[i], vals[i], queues[i]} {
			if err := cmdErr(c); err != nil {
				return nil, err
			}
		}
		out = append(out, in.semHolders(k, sems[i].Val(), vals[i].Val(), clk, max(subs[chans[i]], listed[i].Val()), queues[i].Val())...)
	}
	return out, nil
}

// liveHolders queues a read of the semaphore slots of key that have not
// expired by now. Expired members linger until the next acquire or release
// trims them; they hold nothing.
func liveHolders(ctx context.Context, p redis.Pipeliner, key string, now time.Time) *redis.ZSliceCmd {
	return liveMembers(ctx, p, lockwire.AuxKey(lockwire.KindSem, key), now)
}

// liveMembers queues a read of the members of a zset of token -> expiry
// (server ms) that have not expired by now.
// announced counts the waiters of lock key that listed themselves outside
// its FIFO queue: exclusive acquirers waiting, and shared and semaphore
// ones. Waiting lockctl processes sleep on wake-up streams of their own
// rather than subscribe (earlier versions subscribed, and are listed too
// when exclusive), so this stands beside the channel's subscribers.
// The count is read once the pipeline ran.
func announced(ctx context.Context, p redis.Pipeliner, key string) listedCount {
	return listedCount{p.ZCard(ctx, lockwire.AuxKey(lockwire.KindWriters, key)), p.ZCard(ctx, lockwire.AuxKey(lockwire.KindWaiting, key))}
}

type listedCount [2]*redis.IntCmd

func (c listedCount) Val() int64 { return c[0].Val() + c[1].Val() }

func liveMembers(ctx context.Context, p redis.Pipeliner, zset string, now time.Time) *redis.ZSliceCmd {
	return p.ZRangeByScoreWithScores(ctx, zset, &redis.ZRangeBy{
		Min: "(" + strconv.FormatInt(now.UnixMilli(), 10), Max: "+inf"})
}

// semHolders turns a semaphore's slots (token -> expiry in server ms) and
// values (token -> lockctl JSON) into one Lock per holder, earliest
// acquisition first. Holders is the number of live slots; Limit is what
// each holder passed (every holder should pass the same). A slot whose
// value says "mode":"shared" is a shared holder (Kind "shared"); one whose
// value is missing takes the kind of the others, since shared holders and
// a semaphore of one name exclude each other.
func (in *Inspector) semHolders(key string, slots []redis.Z, vals map[string]string, clk clock, subs, queued int64) []Lock {
	if len(slots) == 0 {
		return nil
	}
	nowMS := clk.now().UnixMilli()
	out := make([]Lock, 0, len(slots))
	shared := false
	var bare []int
	for _, z := range slots {
		token, _ := z.Member.(string)
		ttl := time.Duration(int64(z.Score)-nowMS) * time.Millisecond
		if ttl < 0 {
			ttl = 0
		}
		var h lock.Holder
		if v, ok := vals[token]; ok {
			h = parseValue(key, v, ttl)
		} else {
			// A slot whose value is missing: only the token is known.
			h = lock.Holder{Key: key, TTL: ttl, Reentry: 1}
			bare = append(bare, len(out))
		}
		h.Token, h.Reason, h.Holders = token, lock.ReasonSemaphore, int64(len(slots))
		if h.Shared {
			h.Reason, shared = lock.ReasonShared, true
		}
		out = append(out, in.record(h, clk, subs, queued))
	}
	if shared {
		for _, i := range bare {
			out[i].Reason, out[i].Shared = lock.ReasonShared, true
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if !a.AcquiredAt.Equal(b.AcquiredAt) {
			return a.AcquiredAt.Before(b.AcquiredAt)
		}
		return a.Fence < b.Fence
	})
	return out
}

// redisson queues a read of a hash that may be a Redisson lock. HSCAN from
// cursor 0 returns a small (listpack-encoded) hash whole; a large one comes
// back with a non-zero cursor and is not a lock, so its fields are never
// shipped in full.
func redisson(ctx context.Context, p redis.Pipeliner, key string) *redis.ScanCmd {
	return p.HScan(ctx, key, 0, "", 64)
}

func redissonFields(c *redis.ScanCmd) (map[string]string, bool) {
	kv, cursor, err := c.Result()
	if err != nil || cursor != 0 || len(kv)%2 != 0 {
		return nil, false
	}
	m := make(map[string]string, len(kv)/2)
	for i := 0; i < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m, true
}

// ttlOf turns a PTTL reply into lock.Holder's TTL: -1 for no TTL.
func ttlOf(d time.Duration) time.Duration {
	if d < 0 {
		return -1
	}
	return d
}

func (in *Inspector) record(h lock.Holder, clk clock, subs, queued int64) Lock {
	l := Lock{Name: in.Name(h.Key), Holder: h, Age: -1, Subscribers: subs, Queued: queued, TokenHash: TokenHash(h.Token)}
	if (h.Format == lock.FormatLockctl && h.Reason == "") || h.Reason == lock.ReasonSemaphore || h.Reason == lock.ReasonShared {
		if u, host, pid, ok := splitOwner(h.Owner); ok {
			l.User, l.Host, l.PID = u, host, pid
		}
	}
	now := clk.now()
	if !h.AcquiredAt.IsZero() {
		if l.Age = now.Sub(h.AcquiredAt); l.Age < 0 {
			l.Age = 0
		}
	}
	l.Renewal = renewalOf(h, now)
	return l
}

// Orphan is a key in the lock pattern that has no TTL and so never frees
// itself: a SETNX whose EXPIRE never ran, a PERSIST, a hand-made key.
type Orphan struct {
	Name string
	Key  string
	Type string // Redis type
	// Holder describes the key when it is a lock of a known kind (string,
	// or a Redisson hash); nil otherwise.
	Holder *lock.Holder
}

// Orphans calls fn for every key matching glob with no TTL (PTTL -1),
// lockctl's auxiliary keys excepted, in SCAN order and batch by batch like
// Locks.
func (in *Inspector) Orphans(ctx context.Context, glob string, o *ScanOptions, fn func(Orphan) error) error {
	var scanned int64
	return forEachNode(ctx, in.c, func(ctx context.Context, node redis.UniversalClient) error {
		return in.scan(ctx, node, in.Pattern(glob), in.notAux, func(keys []string, next func(redis.Pipeliner)) error {
			batch, err := in.readOrphans(ctx, node, keys, next)
			if err != nil {
				return err
			}
			scanned += int64(len(keys))
			o.progress(scanned)
			for _, x := range batch {
				if err := fn(x); err != nil {
					return err
				}
			}
			return nil
		})
	})
}

// withoutTTL returns the keys of a SCAN batch that have no TTL (PTTL -1;
// -2, gone since SCAN, and any TTL are left out), reading their PTTLs in
// the pipeline that next fills with the scan's next batch.
func withoutTTL(ctx context.Context, node redis.UniversalClient, keys []string, next func(redis.Pipeliner)) ([]string, error) {
	pipe := node.Pipeline()
	next(pipe)
	pttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		pttls[i] = pipe.PTTL(ctx, k)
	}
	if pipe.Len() > 0 {
		if _, err := pipe.Exec(ctx); pipeErr(err) != nil {
			return nil, err
		}
	}
	var found []string
	for i, k := range keys {
		if err := cmdErr(pttls[i]); err != nil {
			return nil, err
		}
		if pttls[i].Val() == -1 {
			found = append(found, k)
		}
	}
	return found, nil
}

func (in *Inspector) readOrphans(ctx context.Context, node redis.UniversalClient, keys []string, next func(redis.Pipeliner)) ([]Orphan, error) {
	found, err := withoutTTL(ctx, node, keys, next)
	if err != nil {
		return nil, err
	}
	if len(found) == 0 {
		return nil, nil
	}
	// Orphans are few; describing them costs a second round trip.
	p := node.Pipeline()
	types := make([]*redis.StatusCmd, len(found))
	gets := make([]*redis.StringCmd, len(found))
	scans := make([]*redis.ScanCmd, len(found))
	for i, k := range found {
		types[i] = p.Type(ctx, k)
		gets[i] = p.Get(ctx, k)
		scans[i] = redisson(ctx, p, k)
	}
	if _, err := p.Exec(ctx); pipeErr(err) != nil {
		return nil, err
	}
	out := make([]Orphan, 0, len(found))
	for i, k := range found {
		if err := cmdErr(types[i]); err != nil {
			return nil, err
		}
		t := types[i].Val()
		if t == "none" {
			continue
		}
		o := Orphan{Name: in.Name(k), Key: k, Type: t}
		switch t {
		case "string":
			h := parseValue(k, gets[i].Val(), -1)
			o.Holder = &h
		case "hash":
			if fields, ok := redissonFields(scans[i]); ok {
				if h, ok := parseRedissonAny(k, fields, -1); ok {
					o.Holder = &h
				}
			}
		}
		out = append(out, o)
	}
	return out, nil
}
