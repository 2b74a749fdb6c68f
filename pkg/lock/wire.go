package lock

import (
	"time"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

// The stored value, the key scheme and the scripts' replies are
// internal/lib/lockwire's; this file turns them into Holders.

// Format is who wrote a lock's stored value, and so how it reads.
type Format string

// Formats of a lock's stored value.
const (
	FormatLockctl  Format = "lockctl"  // lockctl's own JSON value
	FormatString   Format = "string"   // another client's plain string lock (SET NX)
	FormatRedisson Format = "redisson" // a Redisson hash lock
)

// Reason is what keeps a name taken when it is not (only) a holder of the
// lock key: semaphore slots, shared holders, earlier FIFO waiters, or
// exclusive acquirers that go first.
type Reason string

// Reasons a Holder names.
const (
	ReasonSemaphore Reason = "semaphore" // semaphore slots hold the name (AcquireOptions.Limit)
	ReasonShared    Reason = "shared"    // shared holders hold it (AcquireOptions.Shared)
	ReasonQueue     Reason = "queue"     // FIFO: the lock is free, but earlier waiters go first
	ReasonWriters   Reason = "writers"   // exclusive acquirers wait, and go first
)

// Kind is the one word that describes h in listings and reports: its
// Reason when it has one, else its Format.
func (h Holder) Kind() string {
	if h.Reason != "" {
		return string(h.Reason)
	}
	return string(h.Format)
}

type reply = lockwire.Reply

// parseValue describes the holder whose stored value at key is value
// (lockwire.ParseValue); ttl is the key's remaining time (-1 for none).
func parseValue(key, value string, ttl time.Duration) Holder {
	v := lockwire.ParseValue(value)
	return Holder{Key: key, TTL: ttl, Format: Format(v.Format), Token: v.Token, Fence: v.Fence, Owner: v.Owner,
		Note: v.Note, JobURL: v.CI, Limit: v.Limit, LeaseTTL: v.LeaseTTL, Shared: v.Shared, Reentry: v.Holds, AcquiredAt: v.AcquiredAt,
		RenewedAt: v.RenewedAt, RenewEvery: v.RenewEvery, PIDStart: v.PIDStart}
}

func redissonHolder(key string, r lockwire.Redisson, ttl time.Duration) Holder {
	return Holder{Key: key, TTL: ttl, Format: FormatRedisson, Token: r.Field, Owner: r.Owner, RWMode: r.Mode,
		Reentry: r.Count, Holders: r.Holders}
}

// parseRedissonAny is lockwire.ParseRedissonAny, as a Holder.
func parseRedissonAny(key string, fields map[string]string, ttl time.Duration) (Holder, bool) {
	r, ok := lockwire.ParseRedissonAny(fields)
	if !ok {
		return Holder{}, false
	}
	return redissonHolder(key, r, ttl), true
}

// holderOf turns a refusal into the Holder it describes, or a
// *DataError (ErrWrongType) when the key is not a lock of any kind we know.
func holderOf(r reply, key string) (Holder, error) {
	switch r.Type {
	case "string":
		h := parseValue(key, r.Value, r.PTTL)
		h.Queue, h.arrival = r.Queue, r.Arrival
		return h, nil
	case "hash":
		if h, ok := parseRedissonAny(key, r.Fields, r.PTTL); ok {
			h.Queue, h.arrival = r.Queue, r.Arrival
			return h, nil
		}
	case lockwire.TypeSemaphore, lockwire.TypeShared:
		h := parseValue(key, r.Value, r.PTTL)
		h.Reason, h.Holders = Reason(r.Type), r.Holders
		h.Queue, h.arrival = r.Queue, r.Arrival
		return h, nil
	case lockwire.TypeWriters:
		// Shared: exclusive acquirers wait, and go first.
		return Holder{Key: key, Reason: ReasonWriters, TTL: -1, Holders: r.Holders, Queue: r.Num, arrival: r.Arrival}, nil
	case lockwire.TypeNone:
		// FIFO: the lock is free, but earlier waiters go first. TTL -1
		// keeps waiters from timing their retry by it.
		return Holder{Key: key, Reason: ReasonQueue, TTL: -1, Queue: r.Queue, arrival: r.Arrival}, nil
	}
	return Holder{}, notALock(key, r.Type)
}
