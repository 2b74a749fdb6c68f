package cmd

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/cli/support/errtext"
	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/lib/leasetime"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/spf13/cobra"
)

// waitFlags are the acquisition flags shared by lock and run.
type waitFlags struct {
	nonblock     bool
	wait         time.Duration
	waitValue    *durationValue // -w's, which knows whether a setting gave it
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
	w.waitValue = newDuration(&w.wait, 0, true, true)
	fs.VarP(w.waitValue, "wait", "w", "wait at most D for the lock (a bare number is seconds; 0 = -n; default: wait until acquired)")
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
	if err := w.checkWait(c); err != nil {
		return nil, err
	}
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
		JobURL: identity.CIJobURL(f.Getenv),
		Limit:  w.limit,
		FIFO:   w.fifo,
		Shared: w.shared,
		Wait:   wait,
		// A waiter rides through a failover or restart as short as one
		// call's bound; a Redis down for longer still ends the wait
		// (69), so that a cron job does not wait out its whole -w on a
		// dead server.
		RetryFor: f.G.Timeout,
		Observer: func(ev lock.AcquireEvent) {
			switch {
			case ev.Late == nil:
				status.busy(ev.Holder)
			case onLate != nil:
				onLate(ev.Late)
			}
		},
	}, nil
}

// checkWait refuses -n with -w D (D > 0): one fails at once, the other
// waits, and neither should silently win. Given one on the command line
// and the other by a setting (a config file's `wait: 5m`), the command
// line's wins, as it does over any setting.
func (w *waitFlags) checkWait(c *cobra.Command) error {
	if !w.nonblock || !w.waitSet() || w.wait == 0 {
		return nil
	}
	onArgv := func(name string) bool { return c.Flags().Changed(name) }
	switch {
	case onArgv("nonblock") && !onArgv("wait"):
		w.waitValue.set = false
		return nil
	case onArgv("wait") && !onArgv("nonblock"):
		w.nonblock = false
		return nil
	}
	where := "on the command line"
	if !onArgv("wait") {
		where = "in the settings (config file)"
	}
	return &UsageError{Err: fmt.Errorf("-n and -w %s contradict each other (both %s)", w.wait, where),
		Hints: []string{"-n gives up at once when the lock is held, -w D waits up to D for it: keep one (-w 0 is -n)"}}
}

// waitSet reports whether -w was given, on the command line or by a
// setting.
func (w *waitFlags) waitSet() bool { return w.waitValue != nil && w.waitValue.set }

// waitDuration turns -n and -w into lock.AcquireOptions.Wait: 0 is
// non-blocking, negative waits until the context ends (the default).
func (w *waitFlags) waitDuration(c *cobra.Command) time.Duration {
	switch {
	case w.nonblock:
		return 0
	case w.waitSet():
		return w.wait
	}
	return -1
}

// refused words a failed acquisition of name after waited: a -w wait
// that ran out says so, and the holder's CI job is named. Then -E applies.
func (w *waitFlags) refused(c *cobra.Command, name string, err error, waited time.Duration) error {
	return w.refusedAs(c, name, name, err, waited)
}

// refusedAs is refused for a set of locks, name, of which busy is the one
// that refused it (the set's name when it is not known).
func (w *waitFlags) refusedAs(c *cobra.Command, name, busy string, err error, waited time.Duration) error {
	var held *lock.HeldError
	plain := errors.As(err, &held) && w.limit == 0 && !w.shared &&
		held.Holder.Reason == "" && held.Holder.Format != ""
	err = w.explainBusy(busy, err)
	if wait := w.waitDuration(c); wait > 0 && errors.Is(err, lock.ErrNotObtained) {
		what := errtext.Of(err)
		sep := ", "
		switch {
		case plain && busy == name:
			what = fmt.Sprintf("held by %s%s%s", held.Holder.Owner, ttlText(held.Holder.TTL), ciText(held.Holder.JobURL))
		case plain:
			what = fmt.Sprintf("%s held by %s%s%s", busy, held.Holder.Owner, ttlText(held.Holder.TTL), ciText(held.Holder.JobURL))
			sep = ": "
		case busy != name:
			sep = ": "
		}
		err = &waitTimeoutError{msg: fmt.Sprintf("gave up after %s waiting for %s%s%s", shortWait(waited, wait), name, sep, what), err: err, waited: waited}
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

// slowLinkHint says what to do about a link slower than the lease, with
// the figures measured.
func slowLinkHint(e *lock.LateError) string {
	// A renewal sent a third into the lease must be back before its
	// deadline, at ttl - margin: ttl above 2.4 round trips, 3 with room.
	ttl := (3 * e.Took).Round(time.Second)
	if ttl < 3*e.Took {
		ttl += time.Second
	}
	return fmt.Sprintf("replies took %s, longer than the %s lease can allow (it counts for %s after a call is sent: ttl - margin %s): raise --ttl to 3 times the round trip or more (--ttl %s), or find what slows the link",
		e.Took.Round(time.Millisecond), e.TTL, window(e.TTL), leasetime.DefaultMargin(e.TTL), ttl)
}

// window is how long after its call was sent a grant of a lease of ttl
// still counts: the round trip such a lease tolerates.
func window(ttl time.Duration) time.Duration {
	return leasetime.Deadline(time.Time{}, ttl, 0).Sub(time.Time{})
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
	var late *lock.LateError
	if !errors.As(err, &late) {
		return
	}
	switch {
	case late.Slow && !s.toldSlow:
		s.toldSlow, s.toldLate = true, true
		s.f.IO.Log(ui.Entry{Level: ui.LevelWarn, Hints: []string{slowLinkHint(late)},
			Fields: ui.Fields("rtt_ms", late.Took, "ttl_ms", late.TTL),
			Text: fmt.Sprintf("waiting for %s: granted twice, but each reply came too late to count (%s after it was sent; a %s lease counts for %s); still waiting, in case the link recovers",
				s.name, late.Took.Round(time.Millisecond), late.TTL, window(late.TTL))})
	case !late.Slow && !s.toldLate:
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
	s.f.IO.Logf(ui.LevelInfo, fields, "waiting for %s: held by %s%s%s%s%s; waited %s", s.name, h.Owner, ciText(h.JobURL), since, ttlText(h.TTL), queue, waited)
}

// waitTimeoutError is a -w wait that ran out: it says so, and how long it
// waited, where -n's refusal only names the holder.
type waitTimeoutError struct {
	msg    string
	err    error
	waited time.Duration
}

func (e *waitTimeoutError) Error() string { return e.msg }
func (e *waitTimeoutError) Unwrap() error { return e.err }

// explainBusy words "not acquired" for a semaphore, and for a link too
// slow for the lease.
func (w *waitFlags) explainBusy(name string, err error) error {
	var (
		held *lock.HeldError
		le   *lock.DataError
		slow *lock.LateError
	)
	switch {
	case errors.As(err, &slow) && slow.Slow:
		return withHint(err, slowLinkHint(slow))
	case errors.As(err, &le) && le.Err == lock.ErrInvalid && le.Limit == 0:
		return &UsageError{Err: reword(err, "%s is held in shared mode (--shared); this call asks for --limit %d", name, le.WantLimit),
			Hints: []string{fmt.Sprintf("a name is used either with --limit or with --shared, not both (%s: --shared while its holders live)", name)}}
	case errors.As(err, &le) && le.Err == lock.ErrInvalid && le.WantLimit == 0:
		return &UsageError{Err: reword(err, "%s is a semaphore held with --limit %d; --shared does not mix with it", name, le.Limit),
			Hints: []string{fmt.Sprintf("a name is used either with --limit or with --shared, not both (%s: --limit %d while its holders live)", name, le.Limit)}}
	case errors.As(err, &le) && le.Err == lock.ErrInvalid:
		return &UsageError{Err: reword(err, "%s is a semaphore held with --limit %d; this call asks for --limit %d", name, le.Limit, le.WantLimit),
			Hints: []string{fmt.Sprintf("every holder of %s must use the same --limit (%d while its holders live)", name, le.Limit)}}
	case errors.As(err, &held) && held.Holder.Reason == lock.ReasonShared:
		return reword(err, "%s is held shared by %d holder(s); an exclusive holder waits until none is; the first lease ends within %s",
			name, held.Holder.Holders, held.Holder.TTL.Round(time.Millisecond))
	case errors.As(err, &held) && held.Holder.Reason == lock.ReasonWriters:
		return reword(err, "%s: %d exclusive waiter(s) go first; shared holders wait for them (%d shared holder(s) now)",
			name, held.Holder.Queue, held.Holder.Holders)
	case errors.As(err, &held) && held.Holder.Reason == lock.ReasonSemaphore && w.limit == 0:
		return reword(err, "%s is held as a semaphore (%d slot(s) taken); a plain lock waits until none is; the next frees within %s",
			name, held.Holder.Holders, held.Holder.TTL.Round(time.Millisecond))
	case errors.As(err, &held) && held.Holder.Reason == lock.ReasonSemaphore:
		return reword(err, "%s: all %d slots are taken; the next frees within %s", name, held.Holder.Holders, held.Holder.TTL.Round(time.Millisecond))
	case errors.As(err, &held) && w.limit > 0:
		return reword(err, "%s is held as a plain lock by %s%s; semaphore slots wait until it is released", name, held.Holder.Owner, ttlText(held.Holder.TTL))
	case errors.As(err, &held) && w.shared:
		return reword(err, "%s is held exclusively by %s%s; shared holders wait until it is released", name, held.Holder.Owner, ttlText(held.Holder.TTL))
	case errors.As(err, &held) && held.Holder.JobURL != "":
		return reword(err, "%s%s", errtext.Of(err), ciText(held.Holder.JobURL))
	}
	return err
}
