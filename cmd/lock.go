package cmd

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/cli/support/errtext"
	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/spf13/cobra"
)

type lockOptions struct {
	waitFlags
	test bool
}

func newLockCmd(f *Factory) *cobra.Command {
	o := &lockOptions{}
	c := &cobra.Command{
		Use:     "lock NAME",
		Aliases: []string{"acquire"},
		Short:   "Acquire a lock and print its token",
		Long: `Acquire NAME and return; the lock then lives until its TTL unless renewed
with 'lockctl renew' or freed with 'lockctl release'. Waits for the lock by
default; -n fails at once and -w bounds the wait.

With -o env, a refusal prints a statement that stops the shell evaluating
it (exit with lockctl's status), so the script never goes on without the
lock. Inside 'lockctl run NAME' (LOCKCTL_KEY and LOCKCTL_TOKEN set), lock
re-enters NAME and prints the same token; --no-reentry waits instead.

The owner recorded by default is user@host:PID of lock's caller (the shell
or script that holds the token), since lock itself exits at once. -q and
-E 0 keep refusals off stderr, as for run.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name, err := newName(args, "lock NAME")
			if err != nil {
				return err
			}
			return runLock(c, f, o, name)
		},
	}
	o.register(c)
	addQuietFlags(c, &f.G)
	c.Flags().BoolVar(&o.test, "test", false, "only report: exit 0 when free, 1 when held")
	return c
}

func runLock(c *cobra.Command, f *Factory, o *lockOptions, name string) error {
	if o.test && f.G.Output == "env" {
		// --test never holds the lock: nothing to eval, and exit 0 for
		// "free" would read as "acquired".
		return &UsageError{Err: errors.New("--test and -o env exclude each other"),
			Hints: []string{"use `lockctl lock NAME --test` and its exit status (0 free, 1 held)"}}
	}
	l, err := f.Locker()
	if err != nil {
		return err
	}
	ctx := c.Context()
	if o.test {
		h, err := l.Get(ctx, name)
		if errors.Is(err, lock.ErrNotHeld) {
			if f.G.Output == "json" {
				return f.IO.PrintJSON(map[string]any{"name": name, "key": l.Key(name), "held": false})
			}
			return nil
		}
		if err != nil {
			return err
		}
		switch {
		case f.G.Output == "json":
			if err := f.IO.PrintJSON(holderJSON(name, h, true)); err != nil {
				return err
			}
		case h.Reason == lock.ReasonShared:
			f.IO.Logf(ui.LevelInfo, holderFields(*h), "%s is held shared by %d holder(s)%s", name, h.Holders, ttlText(h.TTL))
		default:
			f.IO.Logf(ui.LevelInfo, holderFields(*h), "%s is held by %s%s", name, h.Owner, ttlText(h.TTL))
		}
		return &ExitError{Code: ExitFound, Silent: true, Summary: name + " is held"}
	}
	owner, start := o.owner, int64(0)
	if owner == "" {
		// lock returns at once; the process that holds the token (and
		// that a person looking at the lock wants to find) is the
		// shell or script that called it.
		pid := callerPID()
		owner, start = identity.OwnerWithPID(pid), identity.StartTime(pid)
	}
	status := newWaitStatus(f, name)
	opts, err := o.acquireOptions(c, f, owner, status)
	if err != nil {
		return err
	}
	// No RenewEvery: a lease taken here is renewed by hand (lockctl
	// renew), with no period to miss.
	opts.OwnerStart = start
	if err := f.IO.RequireOut(); err != nil {
		// Nobody could get the token: the lock would only stand in
		// everyone's way until its TTL.
		return withHint(reword(err, "%s not taken: %s", name, err),
			"give lock a stdout for its token (tok=$(lockctl lock NAME)); to take the lock and discard its token, redirect it: >/dev/null")
	}
	started := time.Now()
	lease, err := o.take(ctx, f, l, name, opts)
	if err != nil {
		return o.refused(c, name, err, time.Since(started))
	}
	if !time.Now().Before(lease.Deadline()) {
		// Held up between the grant and now (stopped, starved): a token
		// printed now would name a lease that no longer counts.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.G.Timeout)
		_ = lease.Release(rctx)
		cancel()
		// The grant was sent a margin short of the TTL before its deadline.
		sent := lease.Deadline().Add(leasetime.DefaultMargin(lease.TTL()) - lease.TTL())
		return o.notAcquired(&lock.LateError{Key: lease.Key(), Op: "acquire", TTL: lease.TTL(), Took: time.Since(sent)})
	}
	logAcquired(f, lease)
	if err := printLease(f, lease); err != nil {
		return giveBack(ctx, f, lease, err)
	}
	return nil
}

// giveBack releases a lease whose token (or env lines, or JSON) could not
// be written whole: nobody has it, so nobody could renew or release it,
// and the lock would stand in everyone's way until its TTL. A re-entered
// lease gives back its one hold. err, the write's failure, stays the
// error (exit 74).
func giveBack(ctx context.Context, f *Factory, lease *lock.Lease, err error) error {
	if we := (*ui.WriteError)(nil); errors.As(err, &we) {
		we.Result = true
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), f.G.Timeout)
	defer cancel()
	what := "released it"
	if lease.Holds() > 1 { // a re-entry's; Release leaves the holds left there
		what = "gave back this hold"
	}
	rerr := lease.Release(rctx)
	if rerr != nil && !errors.Is(rerr, lock.ErrNotWoken) {
		return withHint(reword(err, "took %s, but its token could not be written (%s); releasing it failed too: %s", lease.Name(), errText(err), errtext.Of(rerr)),
			fmt.Sprintf("%s stays held until its TTL (%s) runs out, or until `lockctl inspect force-release %s` frees it", lease.Name(), lease.TTL(), lease.Name()))
	}
	return withHint(reword(err, "took %s, but its token could not be written (%s); %s", lease.Name(), errText(err), what),
		"give lock a stdout that takes its output whole: a pipe whose reader stays, a file on a disk with room")
}

// errText is a stdout write failure without the stream's name.
func errText(err error) string {
	var we *ui.WriteError
	if errors.As(err, &we) {
		return strings.TrimPrefix(we.Error(), "cannot write to ")
	}
	return err.Error()
}

func printLease(f *Factory, lease *lock.Lease) error {
	switch f.G.Output {
	case "json":
		return f.IO.PrintJSON(map[string]any{
			"name":       lease.Name(),
			"key":        lease.Key(),
			"token":      lease.Token(),
			"fence":      lease.Fence(),
			"ttl_ms":     lease.TTL().Milliseconds(),
			"expires_at": lease.ExpiresAt().UTC().Format(time.RFC3339Nano),
			"owner":      lease.Owner(),
			"waited_ms":  lease.Waited().Milliseconds(),
			"mode":       leaseMode(lease.Shared()),
			"reentry":    max(lease.Holds(), 1),
		})
	case "env":
		return f.IO.PrintEnv(map[string]string{
			"LOCKCTL_KEY":   lease.Key(),
			"LOCKCTL_TOKEN": lease.Token(),
			"LOCKCTL_FENCE": strconv.FormatInt(lease.Fence(), 10),
		})
	}
	return f.IO.PrintLine(lease.Token())
}
