package once

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// Keeper renews a claim in the background while its command runs.
type Keeper struct {
	lost chan struct{}
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex
	err      error
	renewals int
}

// KeepAlive renews c every `every` (TTL/3 when 0 or not under the TTL)
// until Stop or ctx ends. The claim counts as lost, and Lost() closes, when
// a renewal finds it gone or taken over, or when no renewal has succeeded
// within TTL of the last successful one's send time: the claim may then have
// expired on the server whether or not the server can be reached to say so.
func (c *Claim) KeepAlive(ctx context.Context, every time.Duration) *Keeper {
	if every <= 0 || every >= c.TTL {
		every = c.TTL / 3
	}
	if every <= 0 {
		every = time.Millisecond
	}
	k := &Keeper{lost: make(chan struct{}), stop: make(chan struct{}), done: make(chan struct{})}
	go k.run(ctx, c, every)
	return k
}

func (k *Keeper) run(ctx context.Context, c *Claim, every time.Duration) {
	defer close(k.done)
	lastOK := c.sent
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-k.stop:
			return
		case <-ctx.Done():
			return
		case <-t.C:
		}
		deadline := lastOK.Add(c.TTL)
		sent := time.Now()
		rctx, cancel := context.WithDeadline(ctx, deadline)
		err := c.Renew(rctx)
		cancel()
		switch {
		case err == nil:
			lastOK = sent
			k.mu.Lock()
			k.renewals++
			k.mu.Unlock()
			continue
		case errors.Is(err, ErrLost), errors.Is(err, ErrNotOwner):
		case ctx.Err() != nil:
			return
		case time.Now().Before(deadline):
			continue // transient: try again on the next tick
		default:
			err = fmt.Errorf("%w: %s: no renewal succeeded within the ttl: %w", ErrLost, c.Key, err)
		}
		k.mu.Lock()
		k.err = err
		k.mu.Unlock()
		close(k.lost)
		return
	}
}

// Lost is closed when the claim is lost; Err then says why.
func (k *Keeper) Lost() <-chan struct{} { return k.lost }

// Err is why the claim was lost, or nil.
func (k *Keeper) Err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// Renewals counts successful renewals.
func (k *Keeper) Renewals() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.renewals
}

// Stop ends renewing and waits for the renewer to finish, so no renewal
// races the Complete that follows.
func (k *Keeper) Stop() {
	select {
	case <-k.stop:
	default:
		close(k.stop)
	}
	<-k.done
}

// Do claims key, runs fn while keeping the claim alive, and records the
// exit code fn returns. fn's context is cancelled if the claim is lost.
// When key already ran, fn is not called and the recorded outcome comes
// back with a *DoneError; see Claim for the other refusals.
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
	go func() {
		select {
		case <-k.Lost():
			cancel()
		case <-runCtx.Done():
		}
	}()
	code := fn(runCtx)
	k.Stop()
	// Recorded on a fresh context: the outcome matters even if ctx ended.
	rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer rcancel()
	return c.Complete(rctx, code)
}
