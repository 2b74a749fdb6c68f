package once

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/internal/lib/watchdog"
	"github.com/lockctl/lockctl/pkg/lock"
)

// Keeper renews a claim in the background while its command runs. A claim
// is a lease and follows the lease rule of pkg/lock: it counts as held until
// the send time of the claim (or of its last successful renewal) plus TTL
// minus leasetime.DefaultMargin(TTL) (leasetime.Deadline), and the watchdog
// of lock.Lease.Watch does the renewing, so loss, retries and a process stopped past the
// deadline behave exactly as for a lock held by `lockctl run`.
type Keeper struct {
	wd   *watchdog.Watchdog
	lost chan struct{}
	stop chan struct{}
	done chan struct{}

	mu  sync.Mutex
	err error
}

// KeepAlive renews c every `every` (TTL/3 when 0 or too long to renew
// before the deadline) until Stop or ctx ends. The claim counts as lost,
// and Lost() closes, when a renewal finds it gone or taken over, or when
// no renewal has succeeded by the deadline: the claim may then have
// expired on the server whether or not the server can be reached to say so.
func (c *Claim) KeepAlive(ctx context.Context, every time.Duration) *Keeper {
	if every <= 0 || every >= c.TTL-leasetime.DefaultMargin(c.TTL) {
		every = c.TTL / 3
	}
	k := &Keeper{lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	wd, err := watchdog.Start(ctx, claimRenewer{c}, c.Key, c.Token, c.TTL, c.sent, &watchdog.Options{RenewEvery: every, Lost: c.lost})
	if err != nil {
		// Only a claim TTL too short to renew gets here (under ~3ms).
		k.err = fmt.Errorf("%w: %s: %w", ErrLost, c.Key, err)
		close(k.lost)
		close(k.done)
		return k
	}
	k.wd = wd
	go func() {
		defer close(k.done)
		select {
		case err := <-wd.Lost():
			k.mu.Lock()
			k.err = fmt.Errorf("%w: %s: %w", ErrLost, c.Key, err)
			k.mu.Unlock()
			close(k.lost)
		case <-k.stop:
		}
	}()
	return k
}

// lost is the *lock.LostError a claim's loss is reported with.
func (c *Claim) lost(expired bool, err error) error {
	return &lock.LostError{Name: c.Key, Expired: expired, Err: err}
}

// claimRenewer lets a watchdog renew a claim: the claim's refusals
// become the lock package's "gone for good" errors.
type claimRenewer struct{ c *Claim }

func (r claimRenewer) Renew(ctx context.Context, _, _ string, _ time.Duration) (time.Duration, error) {
	err := r.c.Renew(ctx)
	switch {
	case err == nil:
		return r.c.TTL, nil
	case errors.Is(err, ErrLost):
		return 0, fmt.Errorf("%w (%w)", err, lock.ErrNotHeld)
	case errors.Is(err, ErrNotOwner):
		return 0, fmt.Errorf("%w (%w)", err, lock.ErrNotOwner)
	}
	return 0, err
}

// Lost is closed when the claim is lost; Err then says why.
func (k *Keeper) Lost() <-chan struct{} { return k.lost }

// Err is why the claim was lost, or nil.
func (k *Keeper) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Held reports whether the claim counts as held right now, by its local
// deadline, whether or not Lost has closed yet.
func (k *Keeper) Held() bool { return k.wd != nil && k.wd.Held() }

// Margin is how long the server still holds the claim at its deadline.
func (k *Keeper) Margin() time.Duration {
	if k.wd == nil {
		return 0
	}
	return k.wd.Margin()
}

// Renewals counts successful renewals.
func (k *Keeper) Renewals() int {
	if k.wd == nil {
		return 0
	}
	return int(k.wd.Renewals())
}

// Stop ends renewing and waits for the renewer to finish, so no renewal
// races the Complete that follows.
func (k *Keeper) Stop() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	if k.wd != nil {
		k.wd.Stop()
	}
	<-k.done
}

// Do claims key, runs fn while keeping the claim alive, and records the
// exit code fn returns. fn's context is cancelled if the claim is lost;
// fn was then stopped part way, and what it returns is no outcome of its
// own: nothing is recorded, and the error matches ErrLost. An at-most-once
// claim is marked StateUnknown (MarkUnknown: no call runs fn until the key
// is resolved); any other is dropped (Abandon: the next call runs fn
// again). When key already ran, fn is not called and the recorded outcome
// comes back with a *DoneError; see Claim for the other refusals.
func (s *Store) Do(ctx context.Context, key string, co *ClaimOptions, fn func(ctx context.Context) int) (Record, error) {
	c, err := s.Claim(ctx, key, co)
	if err != nil {
		var done *DoneError
		if errors.As(err, &done) {
			return done.Record, err
		}
		return Record{}, err
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	k := c.KeepAlive(runCtx, 0)
	var stopped atomic.Bool
	go func() {
		select {
		case <-k.Lost():
			stopped.Store(true)
			cancel()
		case <-runCtx.Done():
		}
	}()
	code := fn(runCtx)
	cut := stopped.Load()
	k.Stop()
	// Recorded on a fresh context: the outcome matters even if ctx ended.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer rcancel()
	if !cut {
		return c.Complete(rctx, code)
	}
	if c.AtMostOnce {
		err = c.MarkUnknown(rctx)
	} else {
		err = c.Abandon(rctx)
	}
	if err != nil && !errors.Is(err, ErrLost) {
		// Someone else's record by now, or the server's refusal: that
		// stands beside the loss.
		return Record{}, errors.Join(k.Err(), err)
	}
	return Record{}, k.Err()
}
