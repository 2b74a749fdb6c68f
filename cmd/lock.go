package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/identity"
	"github.com/lockctl/lockctl/internal/lockinternal"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/spf13/cobra"
)

// waitFlags are the acquisition flags shared by lock and run.
type waitFlags struct {
	nonblock     bool
	wait         time.Duration
	conflictExit int
	ttl          time.Duration
	owner        string
	note         string
	limit        int
	fifo         bool
	shared       bool
	noReentry    bool
}

func (w *waitFlags) register(c *cobra.Command) {
	fs := c.Flags()
	fs.BoolVarP(&w.nonblock, "nonblock", "n", false, "fail at once (exit 75) when the lock is held")
	fs.VarP(newDuration(&w.wait, 0, true, true), "wait", "w", "wait at most D for the lock (a bare number is seconds; 0 = -n; default: wait until acquired)")
	fs.VarP(newExitCode(&w.conflictExit, ExitNotAcquired), "conflict-exit-code", "E", "exit code when the lock is not acquired")
	fs.Var(newDuration(&w.ttl, 30*time.Second, false, false), "ttl", "lease length")
	fs.StringVar(&w.owner, "owner", "", "owner recorded with the lock (default user@host:pid)")
	fs.StringVar(&w.note, "note", "", "free text recorded with the lock")
	fs.IntVar(&w.limit, "limit", 0, "counting semaphore: up to N holders at once (every holder must use the same N)")
	fs.BoolVar(&w.fifo, "fifo", false, "serve waiters in arrival order")
	fs.BoolVar(&w.shared, "shared", false, "shared mode: any number of --shared holders at once; an exclusive holder (the default) excludes them all, and one that waits keeps new shared holders out")
	fs.BoolVar(&w.noReentry, "no-reentry", false, "wait even when LOCKCTL_KEY and LOCKCTL_TOKEN show this caller holds NAME (no re-entry)")
}

// acquireOptions checks --limit and --fifo and builds the acquisition
// lock and run share.
func (w *waitFlags) acquireOptions(c *cobra.Command, f *Factory, owner string, status *waitStatus) (*lock.AcquireOptions, error) {
	switch {
	case w.limit < 0, w.limit == 0 && c.Flags().Changed("limit"):
		return nil, usageErrorf("--limit must be at least 1")
	case w.limit > 0 && w.fifo:
		return nil, usageErrorf("--limit and --fifo cannot be combined yet")
	case w.limit > 0 && w.shared:
		return nil, &UsageError{Err: errors.New("--limit and --shared exclude each other"),
			Hints: []string{"--limit N lets N holders in at once; --shared lets in any number of --shared holders, and no exclusive holder meanwhile"}}
	}
	for flag, on := range map[string]bool{"--limit": w.limit > 0, "--fifo": w.fifo, "--shared": w.shared} {
		if on {
			if err := f.RefuseRedlock(flag); err != nil {
				return nil, err
			}
		}
	}
	wait := w.waitDuration(c)
	var onLate func(error)
	if wait != 0 {
		// -n says why in its error.
		onLate = status.late
	}
	return &lock.AcquireOptions{
		Owner:  owner,
		Note:   w.note,
		CI:     identity.CIJobURL(f.Getenv),
		Limit:  w.limit,
		FIFO:   w.fifo,
		Shared: w.shared,
		Wait:   wait,
		// A waiter rides through a failover or restart as short as one
		// call's bound; a Redis down for longer still ends the wait
		// (69), so that a cron job does not wait out its whole -w on a
		// dead server.
		RetryFor: f.G.Timeout,
		OnBusy:   status.busy,
		OnLate:   onLate,
	}, nil
}

// waitDuration turns -n and -w into lock.AcquireOptions.Wait: 0 is
// non-blocking, negative waits until the context ends (the default).
func (w *waitFlags) waitDuration(c *cobra.Command) time.Duration {
	switch {
	case w.nonblock:
		return 0
	case c.Flags().Changed("wait"):
		return w.wait
	}
	return -1
}

// refused words a failed acquisition of name after waited: a -w wait
// that ran out says so, and the holder's CI job is named. Then -E applies.
func (w *waitFlags) refused(c *cobra.Command, name string, err error, waited time.Duration) error {
	var held *lock.HeldError
	plain := errors.As(err, &held) && w.limit == 0 && !w.shared &&
		held.Holder.Reason == "" && held.Holder.Format != ""
	err = w.explainBusy(name, err)
	if wait := w.waitDuration(c); wait > 0 && errors.Is(err, lock.ErrNotObtained) {
		what := err.Error()
		if plain {
			what = fmt.Sprintf("held by %s%s%s", held.Holder.Owner, ttlText(held.Holder.TTL), ciText(held.Holder.CI))
		}
		err = &waitTimeoutError{msg: fmt.Sprintf("gave up after %s waiting for %s, %s", shortWait(waited, wait), name, what), err: err, waited: waited}
	}
	return w.notAcquired(err)
}

// shortWait is how long a -w wait lasted, as the user gave it when close.
func shortWait(waited, wait time.Duration) string {
	if waited < wait+time.Second {
		return wait.String()
	}
	return waited.Round(100 * time.Millisecond).String()
}

// notAcquired applies -E to a "not obtained" error.
func (w *waitFlags) notAcquired(err error) error {
	if errors.Is(err, lock.ErrNotObtained) && w.conflictExit != ExitNotAcquired {
		return &ExitError{Code: w.conflictExit, Err: err}
	}
	return err
}

func validName(args []string, what string) (string, error) {
	if len(args) == 0 || args[0] == "" {
		return "", usageErrorf("missing %s", what)
	}
	return args[0], nil
}

// newName is validName for a command that creates what NAME names (lock,
// run, fence next and check): it also refuses a name that is not valid
// UTF-8. Commands that act on an existing key (release, renew, inspect,
// force-release) accept any name, so such a key written by another client
// can still be looked at and freed.
func newName(args []string, what string) (string, error) {
	name, err := validName(args, what)
	if err != nil {
		return "", err
	}
	return name, checkUTF8(name, what)
}

// checkUTF8 refuses a NAME or KEY that is not valid UTF-8: every place it
// is shown (tables, JSON, metric labels) needs text, and a Prometheus label
// value that is not UTF-8 made a scrape fail.
func checkUTF8(s, what string) error {
	if !utf8.ValidString(s) {
		return usageErrorf("%s %q is not valid UTF-8", what, s)
	}
	return nil
}

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
		return &ExitError{Code: ExitFound, Silent: true}
	}
	owner := o.owner
	if owner == "" {
		// lock returns at once; the process that holds the token (and
		// that a person looking at the lock wants to find) is the
		// shell or script that called it.
		owner = identity.OwnerWithPID(callerPID())
	}
	status := newWaitStatus(f, name)
	opts, err := o.acquireOptions(c, f, owner, status)
	if err != nil {
		return err
	}
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
		return o.notAcquired(&lock.LateError{Key: lease.Key, Op: "acquire", TTL: lease.TTL, Took: time.Since(lease.Sent)})
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
	rerr := lease.Release(rctx)
	what := "released it"
	if lease.Holds > 1 {
		what = "gave back this hold"
	}
	if rerr != nil && !errors.Is(rerr, lock.ErrNotWoken) {
		return withHint(reword(err, "took %s, but its token could not be written (%s); releasing it failed too: %v", lease.Name, errText(err), rerr),
			fmt.Sprintf("%s stays held until its TTL (%s) runs out, or until `lockctl inspect force-release %s` frees it", lease.Name, lease.TTL, lease.Name))
	}
	return withHint(reword(err, "took %s, but its token could not be written (%s); %s", lease.Name, errText(err), what),
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
			"name":       lease.Name,
			"key":        lease.Key,
			"token":      lease.Token,
			"fence":      lease.Fence,
			"ttl_ms":     lease.TTL.Milliseconds(),
			"expires_at": lease.ExpiresAt.UTC().Format(time.RFC3339Nano),
			"owner":      lease.Owner,
			"waited_ms":  lease.Waited.Milliseconds(),
			"mode":       leaseMode(lease.Shared),
			"reentry":    max(lease.Holds, 1),
		})
	case "env":
		return f.IO.PrintEnv(map[string]string{
			"LOCKCTL_KEY":   lease.Key,
			"LOCKCTL_TOKEN": lease.Token,
			"LOCKCTL_FENCE": strconv.FormatInt(lease.Fence, 10),
		})
	}
	return f.IO.PrintLine(lease.Token)
}

// leaseMode names a lease's mode in JSON: "shared" or "exclusive".
func leaseMode(shared bool) string {
	if shared {
		return "shared"
	}
	return "exclusive"
}

func holderJSON(name string, h *lock.Holder, held bool) map[string]any {
	m := map[string]any{
		"name":   name,
		"key":    h.Key,
		"held":   held,
		"owner":  h.Owner,
		"kind":   h.Kind(),
		"mode":   leaseMode(h.Shared),
		"fence":  h.Fence,
		"ttl_ms": h.TTL.Milliseconds(),
		"note":   h.Note,
		// The hold count, as inspect's JSON has it.
		"reentry": h.Reentry,
	}
	if h.RWMode != "" {
		m["mode"] = h.RWMode
	}
	if h.TTL < 0 {
		m["ttl_ms"] = -1
	}
	if h.CI != "" {
		m["ci"] = h.CI
	}
	if !h.AcquiredAt.IsZero() {
		m["acquired_at"] = h.AcquiredAt.UTC().Format(time.RFC3339Nano)
	}
	return m
}

func ttlText(ttl time.Duration) string {
	if ttl < 0 {
		return " (no TTL: it never expires by itself; see `lockctl inspect orphans`)"
	}
	return fmt.Sprintf(" (ttl %s)", ttl.Round(time.Millisecond))
}

// slowLinkHint says what to do about a link slower than the lease, with
// the figures measured.
func slowLinkHint(e *lock.SlowLinkError) string {
	// A renewal sent a third into the lease must be back before its
	// deadline, at ttl - margin: ttl above 2.4 round trips, 3 with room.
	ttl := (3 * e.RTT).Round(time.Second)
	if ttl < 3*e.RTT {
		ttl += time.Second
	}
	return fmt.Sprintf("replies took %s, longer than the %s lease can allow (it counts for %s after a call is sent: ttl - margin %s): raise --ttl to 3 times the round trip or more (--ttl %s), or find what slows the link",
		e.RTT.Round(time.Millisecond), e.TTL, e.Window(), e.Margin, ttl)
}

// waitStatus prints, while a command waits, a stderr line naming the
// holder: on a terminal after 2s and then every 5s; elsewhere (a CI log,
// cron's mail) after 5s, then after gaps of 10s, 20s, 40s and then every
// 60s, so a long wait leaves a few lines, not one every 5s. Quick
// hand-offs print nothing, and -q nothing at all.
type waitStatus struct {
	f       *Factory
	name    string
	started time.Time
	last    time.Time
	gap     time.Duration // off a terminal: the gap before the next line
	// toldLate, toldSlow: a late grant, and a link slower than the lease,
	// are each told once.
	toldLate, toldSlow bool
}

// late says why a wait is not getting the lock though it was granted: the
// grant came too late to count. It is told at the first such grant (and
// again if the link turns out slower than the lease); the wait goes on,
// since the link may recover.
func (s *waitStatus) late(err error) {
	var (
		slow *lock.SlowLinkError
		late *lock.LateError
	)
	switch {
	case errors.As(err, &slow) && !s.toldSlow:
		s.toldSlow, s.toldLate = true, true
		s.f.IO.Log(ui.Entry{Level: ui.LevelWarn, Hints: []string{slowLinkHint(slow)},
			Fields: ui.Fields("rtt_ms", slow.RTT, "ttl_ms", slow.TTL),
			Text: fmt.Sprintf("waiting for %s: granted twice, but each reply came too late to count (%s after it was sent; a %s lease counts for %s); still waiting, in case the link recovers",
				s.name, slow.RTT.Round(time.Millisecond), slow.TTL, slow.Window())})
	case errors.As(err, &late) && !s.toldLate:
		s.toldLate = true
		s.f.IO.Logf(ui.LevelWarn, ui.Fields("took_ms", late.Took, "ttl_ms", late.TTL),
			"waiting for %s: granted, but the reply came %s after it was sent, too late to count for a %s lease; given back, still waiting",
			s.name, late.Took.Round(time.Millisecond), late.TTL)
	}
}

const (
	statusFirstAfter = 2 * time.Second
	statusEvery      = 5 * time.Second
	// Off a terminal.
	statusLogFirst = 5 * time.Second
	statusLogGap   = 10 * time.Second
	statusLogMax   = time.Minute
)

func newWaitStatus(f *Factory, name string) *waitStatus {
	return &waitStatus{f: f, name: name, started: time.Now()}
}

// due reports whether a line is due at now, and moves the schedule on.
func (s *waitStatus) due(now time.Time) bool {
	if s.f.IO.IsStderrTTY() {
		return now.Sub(s.started) >= statusFirstAfter && (s.last.IsZero() || now.Sub(s.last) >= statusEvery)
	}
	switch {
	case s.last.IsZero():
		if now.Sub(s.started) < statusLogFirst {
			return false
		}
		s.gap = statusLogGap
	case now.Sub(s.last) < s.gap:
		return false
	default:
		s.gap = min(2*s.gap, statusLogMax)
	}
	return true
}

func (s *waitStatus) busy(h lock.Holder) {
	now := time.Now()
	if s.f.G.Quiet || !s.due(now) {
		return
	}
	s.last = now
	waited := now.Sub(s.started).Round(time.Second)
	fields := append(holderFields(h), ui.Field{Key: "waited_ms", Value: now.Sub(s.started)})
	switch h.Reason {
	case lock.ReasonQueue:
		s.f.IO.Logf(ui.LevelInfo, fields, "waiting for %s: free, but %d earlier waiter(s) go first; waited %s", s.name, h.Queue, waited)
		return
	case lock.ReasonSemaphore:
		s.f.IO.Logf(ui.LevelInfo, fields, "waiting for %s: all %d slots taken; the next frees within %s; waited %s", s.name, h.Holders, h.TTL.Round(time.Second), waited)
		return
	case lock.ReasonShared:
		s.f.IO.Logf(ui.LevelInfo, fields, "waiting for %s: held shared by %d holder(s); the first lease ends within %s; waited %s", s.name, h.Holders, h.TTL.Round(time.Second), waited)
		return
	case lock.ReasonWriters:
		s.f.IO.Logf(ui.LevelInfo, fields, "waiting for %s: %d exclusive waiter(s) go first (%d shared holder(s) now); waited %s", s.name, h.Queue, h.Holders, waited)
		return
	}
	queue := ""
	if h.Queue > 0 {
		queue = fmt.Sprintf("; %d waiter(s) ahead in the queue", h.Queue)
	}
	since := ""
	if !h.AcquiredAt.IsZero() {
		since = fmt.Sprintf(" since %s (%s ago)", h.AcquiredAt.Local().Format("15:04:05"), time.Since(h.AcquiredAt).Round(time.Second))
	}
	s.f.IO.Logf(ui.LevelInfo, fields, "waiting for %s: held by %s%s%s%s%s; waited %s", s.name, h.Owner, ciText(h.CI), since, ttlText(h.TTL), queue, waited)
}

// tokenFor resolves --token, falling back to LOCKCTL_TOKEN only when
// LOCKCTL_KEY names the same key (a nested call inside `lockctl run`).
func tokenFor(f *Factory, c *cobra.Command, token, key string) (string, error) {
	if c.Flags().Changed("token") {
		if token == "" {
			return "", usageErrorf("--token is empty")
		}
		return token, nil
	}
	if t := f.Getenv("LOCKCTL_TOKEN"); t != "" && f.Getenv("LOCKCTL_KEY") == key {
		return t, nil
	}
	return "", &UsageError{Err: errors.New("missing --token"),
		Hints: []string{"pass the token `lockctl lock` printed, or run inside `lockctl run` where LOCKCTL_TOKEN and LOCKCTL_KEY are set"}}
}

// tokenTarget resolves what renew and release act on: NAME, the locker and
// the token.
func tokenTarget(f *Factory, c *cobra.Command, args []string, flagToken string) (string, *lock.Locker, string, error) {
	name, err := validName(args, "lock NAME")
	if err != nil {
		return "", nil, "", err
	}
	l, err := f.Locker()
	if err != nil {
		return "", nil, "", err
	}
	if err := ownKeyRefusal(c.Name(), l.Key(name), nil); err != nil {
		return "", nil, "", err
	}
	token, err := tokenFor(f, c, flagToken, l.Key(name))
	return name, l, token, err
}

type tokenOptions struct {
	token string
	ttl   time.Duration
}

func newRenewCmd(f *Factory) *cobra.Command {
	o := &tokenOptions{}
	c := &cobra.Command{
		Use:   "renew NAME --token T",
		Short: "Extend a held lock's TTL, only if the token still holds it",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name, l, token, err := tokenTarget(f, c, args, o.token)
			if err != nil {
				return err
			}
			// --ttl unset is 0: the TTL the lease was taken with.
			ttl, err := l.Renew(c.Context(), name, token, o.ttl)
			if err != nil {
				f.recordRenewFailed(c.Context(), name, err)
				return explainRefusal(name, err)
			}
			if f.G.Output == "json" {
				return f.IO.PrintJSON(map[string]any{"name": name, "key": l.Key(name), "renewed": true, "ttl_ms": ttl.Milliseconds()})
			}
			return nil
		},
	}
	c.Flags().StringVar(&o.token, "token", "", "the token 'lockctl lock' printed (default: LOCKCTL_TOKEN when LOCKCTL_KEY matches)")
	c.Flags().Var(newDuration(&o.ttl, 0, false, false), "ttl", "new lease length from now (default: the TTL the lease was taken with)")
	return c
}

func newReleaseCmd(f *Factory) *cobra.Command {
	o := &tokenOptions{}
	c := &cobra.Command{
		Use:   "release NAME --token T",
		Short: "Release a lock, only if the token still holds it",
		Args:  cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name, l, token, err := tokenTarget(f, c, args, o.token)
			if err != nil {
				return err
			}
			since := f.holdStart(c.Context(), l, name, token)
			left, err := lockinternal.ReleaseHold(c.Context(), l, &lock.Lease{Name: name, Key: l.Key(name), Token: token, AcquiredAt: since})
			if err != nil && !notWoken(f, "released "+name, err) {
				return explainRefusal(name, err)
			}
			if left > 0 {
				f.IO.Errorf("%s stays held: this token re-entered it and has %d hold(s) left; the last release frees it", name, left)
			}
			if f.G.Output == "json" {
				return f.IO.PrintJSON(map[string]any{"name": name, "key": l.Key(name), "released": true})
			}
			return nil
		},
	}
	c.Flags().StringVar(&o.token, "token", "", "the token 'lockctl lock' printed (default: LOCKCTL_TOKEN when LOCKCTL_KEY matches)")
	return c
}

// explainRefusal words renew and release refusals for people.
func explainRefusal(name string, err error) error {
	var held *lock.HeldError
	switch {
	case errors.Is(err, lock.ErrLate):
		return withHint(err, "the server may have extended the lease, but too late to count on it: stop writing to the protected resource")
	case errors.As(err, &held) && held.Holder.Format == lock.FormatRedisson:
		// A Redisson lock has no lockctl token: its field is no lease this
		// command may renew or give back.
		what, hint := "a Redisson lock", fmt.Sprintf("release it through Redisson, or free it with `lockctl inspect force-release %s --token %s`", name, held.Holder.Token)
		if held.Holder.RWMode != "" {
			what, hint = "a Redisson read-write lock", fmt.Sprintf("release it through Redisson, or free one hold with `lockctl inspect force-release %s --token T`, T a hold's token hash from `lockctl inspect lock %s`", name, name)
		}
		return withHint(reword(err, "%s is %s held by %s%s; release and renew take the token lockctl printed; nothing changed", name, what, held.Holder.Owner, ttlText(held.Holder.TTL)), hint)
	case errors.As(err, &held):
		return withHint(reword(err, "%s is held by %s%s, not by this token; nothing changed", name, held.Holder.Owner, ttlText(held.Holder.TTL)),
			"your lease expired and someone else took the lock: stop writing to the protected resource")
	case errors.Is(err, lock.ErrNotHeld):
		return withHint(reword(err, "%s is not held (expired or never acquired); nothing changed", name),
			"if you were still working under this lock, your lease ran out: use a longer --ttl or renew more often")
	}
	return err
}

// callerPID is the process that called lock: its parent, or, when that
// parent is a subshell forked only to run it (`$(lockctl lock ... || echo
// ...)`: the same program with the same arguments as its own parent, gone
// as soon as lockctl returns), the shell the subshell was forked from.
// /proc tells, or, on a system without it (macOS, the BSDs), ps(1); where
// neither can, it is the parent.
func callerPID() int { return callerOf(os.Getppid(), processTable("/proc")) }

// callerOf is callerPID for a lock whose parent is pid, reading procs.
func callerOf(pid int, procs processes) int {
	for range 8 {
		parent, ok := procs.parent(pid)
		if !ok || parent <= 1 || !sameProgram(procs, pid, parent) {
			break
		}
		pid = parent
	}
	return pid
}

// processes tells a process's parent and the program it runs.
type processes interface {
	parent(pid int) (int, bool)
	// program is the executable and command line of pid, equal for a
	// forked subshell and its shell.
	program(pid int) (string, bool)
}

// processTable reads the proc filesystem mounted at root when there is
// one, and asks ps otherwise.
func processTable(root string) processes {
	if _, err := os.Stat(filepath.Join(root, "self", "stat")); err == nil {
		return procfs(root)
	}
	return &psTable{}
}

// sameProgram reports whether a and b run the same executable with the
// same command line, as a forked subshell and its shell do.
func sameProgram(procs processes, a, b int) bool {
	x, okx := procs.program(a)
	y, oky := procs.program(b)
	return okx && oky && x == y
}

// procfs is a proc filesystem (Linux), at the directory it names.
type procfs string

// parent reads pid's parent from /proc/PID/stat.
func (root procfs) parent(pid int) (int, bool) {
	b, err := os.ReadFile(filepath.Join(string(root), strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, false
	}
	// "pid (comm) state ppid ...": comm may hold spaces and parentheses.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(s[i+1:])
	if len(f) < 2 {
		return 0, false
	}
	ppid, err := strconv.Atoi(f[1])
	return ppid, err == nil
}

func (root procfs) program(pid int) (string, bool) {
	dir := filepath.Join(string(root), strconv.Itoa(pid))
	exe, err := os.Readlink(filepath.Join(dir, "exe"))
	if err != nil {
		return "", false
	}
	cmdline, err := os.ReadFile(filepath.Join(dir, "cmdline"))
	if err != nil {
		return "", false
	}
	return exe + "\x00" + string(cmdline), true
}

// psTable asks ps(1) (its POSIX options, which macOS and the BSDs have),
// once per process.
type psTable struct {
	seen map[int]psEntry
}

type psEntry struct {
	ppid    int
	program string // comm and args
	ok      bool
}

func (t *psTable) parent(pid int) (int, bool) {
	e := t.entry(pid)
	return e.ppid, e.ok
}

func (t *psTable) program(pid int) (string, bool) {
	e := t.entry(pid)
	return e.program, e.ok
}

func (t *psTable) entry(pid int) psEntry {
	if e, ok := t.seen[pid]; ok {
		return e
	}
	if t.seen == nil {
		t.seen = map[int]psEntry{}
	}
	var e psEntry
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	c := exec.CommandContext(ctx, "ps", "-o", "ppid=", "-o", "comm=", "-o", "args=", "-p", strconv.Itoa(pid))
	c.Env = append(os.Environ(), "LC_ALL=C")
	if out, err := c.Output(); err == nil {
		line := strings.TrimSpace(string(out))
		ppid, rest, _ := strings.Cut(line, " ")
		if n, err := strconv.Atoi(ppid); err == nil && !strings.Contains(line, "\n") {
			e = psEntry{ppid: n, program: strings.TrimSpace(rest), ok: true}
		}
	}
	t.seen[pid] = e
	return e
}
