// Package lockwire is the wire format of lockctl's locks in Redis, the one
// place that says how a lock is stored: the value at a lock key (written by
// the acquire scripts, read by pkg/lock and pkg/inspect), the auxiliary keys
// beside it, the pub/sub channels, and what each Lua script replies. The Lua
// side of the value lives in value.lua, a prelude of every script that
// writes or edits a value.
//
// # Keys
//
// A lock called NAME lives at a prefix plus NAME ("lock:NAME" by default).
// Its fence counter, wake-up channel and fence-check records are AuxKey
// names in the same Redis Cluster slot and outside the lock pattern. The
// stored value is JSON whose first member is the token (see ValuePrefix and
// ParseValue).
//
// A semaphore (pkg/lock's AcquireOptions.Limit) does not use the lock key:
// its holders are AuxKey(KindSem, key), a ZSET of token -> expiry in server
// ms, and AuxKey(KindSemVal, key), a HASH of token -> the same JSON value a
// lock holds (with "limit"). A semaphore and a plain lock of the same name
// exclude each other, and the live holders' limit is the semaphore's. A
// FIFO queue (AcquireOptions.FIFO) is AuxKey(KindQueue, key), a ZSET of
// token -> arrival in server µs, with heartbeats in AuxKey(KindQueueHB,
// key). All four carry the TTL of their latest member, so none outlives its
// last holder or waiter. See pkg/lock's sem.go and fifo.go.
//
// Shared holders (AcquireOptions.Shared, the readers of a read-write lock)
// live in the semaphore's two keys, their values marked "mode":"shared";
// exclusive acquirers that wait are listed in AuxKey(KindWriters, key), a
// ZSET of token -> expiry in server ms, which keeps new shared holders out
// until they have been in. See pkg/lock's shared.go.
//
// # Replies
//
// Each script's reply is an array whose first element is a code, and the
// same number means different things in different scripts. The codes are
// named per script (AcquireAcquired, ReleaseHoldsLeft, RenewNoTTL …), Codes
// lists them, and each script has one decoder (DecodeAcquire, DecodeRelease
// …) that refuses a code its script does not return.
package lockwire
