package lock

import "time"

// The accessors below tell the lease's current state and are safe for
// concurrent use, with each other and with Refresh, Release and a running
// watchdog (Watch). On a nil *Lease (what a failed Acquire returns) they
// return zero values.

// Name is the lock's name, as passed to Acquire (the first name of a set).
func (l *Lease) Name() string {
	if l == nil {
		return ""
	}
	return l.name
}

// Key is the lock's Redis key: the Locker's prefix plus Name.
func (l *Lease) Key() string {
	if l == nil {
		return ""
	}
	return l.key
}

// Token is the random value that proves this lease holds the lock: every
// renewal and release compares it, and Locker.Resume takes a lease back
// by it (from another process, say).
func (l *Lease) Token() string {
	if l == nil {
		return ""
	}
	return l.token
}

// Owner is who holds the lease (AcquireOptions.Owner, by default
// user@host:pid), as other clients see it.
func (l *Lease) Owner() string {
	if l == nil {
		return ""
	}
	return l.owner
}

// Note is the free text stored with the lease (AcquireOptions.Note).
func (l *Lease) Note() string {
	if l == nil {
		return ""
	}
	return l.note
}

// Fence grows with every acquisition of the lock (and every Fences.Next):
// hand it to the protected resource, which refuses any fence older than
// one it has seen (Fences.Check). A fence is the counter plus one or the
// server's time in µs, whichever is greater, so every fence issued after a
// restart that lost the counter, or a failover to a replica that had not
// received its latest value, is still greater than every fence issued
// before. That assumes the servers' clocks agree to well within the time a
// restart or failover takes, and never step back by more; fences are not
// consecutive. For a set of locks, FenceOf gives each name's.
func (l *Lease) Fence() int64 {
	if l == nil {
		return 0
	}
	return l.fence
}

// TTL is the lease's time to live as last granted or renewed by Refresh.
func (l *Lease) TTL() time.Duration {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ttl
}

// AcquiredAt is when the lock was acquired, in the server's time.
func (l *Lease) AcquiredAt() time.Time {
	if l == nil {
		return time.Time{}
	}
	return l.acquiredAt
}

// ExpiresAt is when the grant would run out on the server without a
// renewal, in the server's time (AcquiredAt plus the TTL granted).
func (l *Lease) ExpiresAt() time.Time {
	if l == nil {
		return time.Time{}
	}
	return l.expiresAt
}

// Waited is how long Acquire waited for the lock.
func (l *Lease) Waited() time.Duration {
	if l == nil {
		return 0
	}
	return l.waited
}

// Limit is the semaphore's bound for a semaphore slot
// (AcquireOptions.Limit), else 0.
func (l *Lease) Limit() int {
	if l == nil {
		return 0
	}
	return l.limit
}

// Shared reports a shared hold (AcquireOptions.Shared).
func (l *Lease) Shared() bool {
	return l != nil && l.shared
}

// Holds is how many holds the token has on the lock: 1 for an
// acquisition, more after Reenter; after Release, the holds the token has
// left (0: the lock or slot is free).
func (l *Lease) Holds() int {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holds
}

// Renewals counts the renewals of the lease that counted: Refresh's and
// those of its watchdogs (Watch).
func (l *Lease) Renewals() int64 {
	if l == nil {
		return 0
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewals
}
