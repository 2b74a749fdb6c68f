package runner

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/pkg/lock"
)

// Watched is a lease that Lease.Watch renews, seen as the supervisor
// needs it (Lease): its loss, the renewals that counted, its margin and
// whether its local deadline has passed; the lease's own accessors
// (Deadline, Renewals) follow the watchdog's renewals.
type Watched struct {
	lease  *lock.Lease
	stop   context.CancelFunc
	clk    leasetime.Clock
	margin time.Duration
	lost   chan error
}

// Watch starts lease's watchdog with opt (nil takes every default) until
// Stop.
func Watch(ctx context.Context, lease *lock.Lease, opt *lock.WatchdogOptions) (*Watched, error) {
	o := lock.WatchdogOptions{}
	if opt != nil {
		o = *opt
	}
	w := &Watched{lease: lease, clk: o.Clock, margin: o.Margin, lost: make(chan error, 1)}
	if w.clk == nil {
		w.clk = leasetime.Real()
	}
	if w.margin == 0 {
		w.margin = leasetime.DefaultMargin(lease.TTL())
	}
	ctx, w.stop = context.WithCancel(ctx)
	if err := lease.Watch(ctx, &o); err != nil {
		w.stop()
		return nil, err
	}
	go func() {
		select {
		case <-lease.Done():
			if err := lease.Err(); err != nil {
				w.lost <- err
			}
		case <-ctx.Done():
		}
	}()
	return w, nil
}

// Lost delivers the loss, once.
func (w *Watched) Lost() <-chan error { return w.lost }

// Err is the loss once the lease is lost, else nil (lock.Lease.Err).
func (w *Watched) Err() error { return w.lease.Err() }

// Renewals counts the renewals that counted.
func (w *Watched) Renewals() int64 { return w.lease.Renewals() }

// Deadline is the moment the lease counts as lost unless renewed before.
func (w *Watched) Deadline() time.Time { return w.lease.Deadline() }

// Margin is the safety margin in use: at the deadline the server still
// holds the lease for at least this long.
func (w *Watched) Margin() time.Duration { return w.margin }

// Held reports whether the lease still counts as held right now.
func (w *Watched) Held() bool {
	return w.lease.Err() == nil && w.clk.Now().Before(w.Deadline())
}

// RenewNow asks for a renewal at once (lock.Lease.RenewNow). It never
// blocks.
func (w *Watched) RenewNow() { w.lease.RenewNow() }

// Stop ends renewals and waits until none is in flight, so a release that
// follows cannot race one. It is safe to call more than once.
func (w *Watched) Stop() {
	w.stop()
	_ = w.lease.Err() // waits for the stopped watchdog
}
