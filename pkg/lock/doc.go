// Package lock implements leases on named Redis locks, with fencing tokens.
//
// # Safety model
//
// A Redis lock is a lease, not a mutex. It ends when its TTL runs out,
// whether or not its holder has finished: a holder paused by a garbage
// collector, a stopped VM, a swapped-out process or a slow network can wake
// up believing it still holds a lock that another client took in the
// meantime. A failover to a replica that had not yet received the lock
// write, or a restart without persistence, also hands the lock to a second
// client. Nothing the holder does can rule these out, because it cannot
// act in the instant between checking its lease and touching the resource.
//
// Used alone, such a lock is therefore an efficiency lock: it keeps
// duplicate work rare (two cron jobs, two deploys), and occasional overlap
// must be harmless. When overlap would corrupt data, the resource itself
// must refuse stale holders. Every Acquire returns a fencing token
// (Lease.Fence), a number that increases with every acquisition of the lock
// and is never reused: the counter lives in its own key without a TTL, and a
// new fence is at least the server's time in µs, so that a lost counter
// (restart, failover, eviction) never issues old numbers again (see
// Lease.Fence for the clock assumption). Pass the fence with every
// write; the resource keeps the highest fence it has accepted and refuses
// anything older (a database column compared in the UPDATE's WHERE clause,
// or Fences.Check for resources that have no such place). Then a stale
// holder's writes fail instead of overwriting its successor's.
//
// What this package guarantees on its side:
//
//   - A lease counts as held only until its local deadline (Lease.Deadline):
//     the send time of the call that granted or renewed it, plus the TTL,
//     minus a margin. A grant whose reply arrives later is never returned
//     (it is re-confirmed once, else released: *LateError, or
//     a slow *LateError when the re-confirmation came late too), a renewal
//     answered later does not count, and Lease.Deadline and the watchdog
//     (Lease.Watch) follow the same rule, for locks, semaphore slots, FIFO
//     and Redlock. A link too slow for any grant to count is a *LateError
//     with Slow set.
//   - Lease.Watch renews a lease in the background until its context ends
//     or the release; Lease.Done closes when it is lost (or released) and
//     Lease.Err then says why (*LostError).
//   - Acquire, a renewal (Lease.Refresh, Lease.Watch) and Lease.Release
//     each run one Lua script, one round trip, atomically on the server.
//     Locker.Resume turns a lease known by name and token (another process
//     took it) into a *Lease, with one read.
//   - Renewals and releases act only when the caller's token still holds the
//     lock: a lease that expired and was taken by someone else is never
//     extended or deleted (the "stale DEL" that lets a third client in).
//     A renewal never re-creates an expired lock.
//   - Reenter lets a holder that proves itself by its token take counted
//     holds of its own lease (a nested caller); each release gives one
//     back, and the last deletes the lock.
//   - Release distinguishes released, not held (ErrNotHeld) and held by
//     someone else (*HeldError matching ErrNotOwner, with that holder's
//     owner and remaining TTL). A nil *Lease, which a failed Acquire
//     returns, is safe to use: Release, Refresh and Watch report ErrNotHeld,
//     Done is closed and Deadline is zero, so "defer lease.Release(ctx)"
//     may precede the error check.
//   - A wait that does not get the lock matches ErrNotObtained, whether
//     AcquireOptions.Wait or the context's deadline ended it (then it
//     matches context.DeadlineExceeded too). A cancelled context is the
//     caller giving up: context.Canceled, not ErrNotObtained.
//   - Acquiring with the token that already holds the lock (a retry after
//     a lost reply) refreshes its TTL and stores the call's note, job URL
//     and TTL, and its owner when it names one, in place of the old ones,
//     in the same script; the fence, the acquisition time and the holds
//     stay.
//   - A key of another type at the lock's name is reported as such
//     (a *DataError matching ErrWrongType), never as a lock that is busy
//     forever. Plain string
//     locks written by other clients and Redisson hash locks are recognised.
//   - A waiter lists itself in Redis (the FIFO queue, the exclusive, shared
//     or semaphore acquirers waiting) and sleeps on a wake-up stream of its
//     own with XREAD BLOCK, on the one connection its attempts use: no
//     pub/sub and no polling. A release appends to the stream of the waiter
//     that can take the lock (the FIFO queue's head, else the exclusive
//     acquirer listed longest ago, else the shared waiters, or for a freed
//     semaphore slot one semaphore waiter), so N waiting processes cost one
//     attempt per hand-off, not N. A waiter also wakes when
//     the holder's TTL runs out (an expiry is noticed when it happens), at
//     its deadline, and to renew its listing; the waiter next in line looks
//     again after a short grace, so a woken waiter that died stalls nobody.
//     Waiters beyond half the client's pool, and Redlock's, share their
//     Locker's single pub/sub connection and poll by Options.PollInterval;
//     releases keep publishing for them (and for earlier lockctl versions).
//     All local deadlines use the monotonic clock.
//   - Options.WaitReplicas makes lock writes wait for replica
//     acknowledgement (WAIT), which narrows the failover window; WAIT is not
//     a consensus protocol, so fencing is still what makes a lock safe.
//     The client's read timeout must exceed Options.WaitReplicasTimeout.
//   - NewRedlock keeps each lock on a majority of independent masters,
//     with fences that stay monotonic across different majorities (NewRedlock
//     gives the rules and why they hold).
//   - Options.Events, when set (an events.Sink such as an
//     *events.Recorder), receives how each
//     Acquire, release and watchdog renewal ended, for monitoring; it is
//     never on the operation's path.
//
// # Errors
//
// Callers branch with errors.Is on a few sentinels, one per outcome they
// act on, and read the details with errors.As on the error types, whose
// fields are exported so that tests and wrappers can build them by hand.
// Each type matches the sentinels of its row (and the causes it wraps),
// no other; every sentinel's message starts with "lock: ".
//
//	sentinel        when                                                type for details
//	ErrNotObtained  Acquire did not get the lock (held, wait ended,     *HeldError, *LateError
//	                grant's reply late)
//	ErrNotHeld      renew or release found no lock; renewal reply late  *LateError
//	ErrNotOwner     renew or release of a lock another token holds      *HeldError
//	ErrLost         the watchdog gave the lease up                      *LostError
//	ErrInvalid      unusable argument; limit differs from the holders'  *DataError (limit mismatch)
//	ErrWrongType    the key, or an auxiliary key, is not lockctl's      *DataError
//	ErrUnavailable  Redis answered, but not safely enough: replicas     *ReplicationError, *QuorumError,
//	                missing, no Redlock quorum, link too slow           *LateError (Slow)
//	ErrStaleFence   Fences.Check refused a fence                        *StaleFenceError
//	ErrNotWoken     warning: released, but waiters were not woken       *WakeError
//
// Network and server errors (timeouts, refused connections, error
// replies) are returned wrapped, as go-redis gave them.
//
// # Keys
//
// A lock called NAME lives at Options.Prefix+NAME ("lock:NAME" by
// default); how its stored value, its auxiliary keys (fence counter,
// semaphore slots, FIFO queue, channels) share NAME's Redis Cluster hash
// slot and lie outside the pattern Prefix+"*", so that a listing of locks
// never shows them. Fence counters never expire.
package lock
