package cmd

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/internal/cli/support/errtext"
	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/spf13/cobra"
	"golang.org/x/term"
)

// topHistory is how many recent waits and holds a lock's sparklines keep.
const topHistory = 12

func newTopCmd(f *Factory) *cobra.Command {
	var every time.Duration
	c := &cobra.Command{
		Use:   "top",
		Short: "Live view of held locks, holders, TTLs, waiters and recent wait/hold times",
		Long: `A full-screen view of the locks under the prefix, refreshed every second and
sorted by name: holder, age, a bar of the TTL left of the lease, waiters and
the FIFO queue, and sparklines of each lock's recent waits and holds (from
the event stream; see --no-events). q or ^C quits and restores the terminal.

It needs a terminal; in a pipe or a log use 'lockctl inspect locks --watch 2s'.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return runTop(c.Context(), f, every)
		},
	}
	c.Flags().Var(newDuration(&every, time.Second, false, false), "interval", "refresh period")
	return c
}

func runTop(ctx context.Context, f *Factory, every time.Duration) error {
	in, out := os.Stdin, os.Stdout
	if !f.IO.IsStdinTTY() || !f.IO.IsStdoutTTY() || !term.IsTerminal(int(in.Fd())) {
		return &UsageError{Err: errors.New("top needs a terminal"),
			Hints: []string{"use `lockctl inspect locks --watch 2s` for a fresh table every 2s"}}
	}
	insp, err := inspector(f)
	if err != nil {
		return err
	}
	client, err := f.Client()
	if err != nil {
		return err
	}
	old, err := term.MakeRaw(int(in.Fd()))
	if err != nil {
		return err
	}
	// Alternate screen, cursor hidden; both undone however top ends.
	fmt.Fprint(out, "\x1b[?1049h\x1b[?25l")
	defer func() {
		fmt.Fprint(out, "\x1b[?25h\x1b[?1049l")
		_ = term.Restore(int(in.Fd()), old) // on the way out: nothing better to do if it fails
	}()

	quit := make(chan struct{})
	var quitOnce sync.Once
	stop := func() { quitOnce.Do(func() { close(quit) }) }
	go func() {
		b := make([]byte, 16)
		for {
			n, err := in.Read(b)
			if err != nil {
				stop()
				return
			}
			for _, c := range b[:n] {
				if c == 'q' || c == 'Q' || c == 3 || c == 4 { // q, ^C, ^D
					stop()
					return
				}
			}
		}
	}()
	// Raw mode turns ^C into a byte, but a SIGINT or SIGTERM from elsewhere
	// still ends ctx.
	restore := f.OnSignal(func(os.Signal) { stop() })
	defer restore()

	hist := newTopHistory()
	key := f.eventsKey()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var refresh int64
	for {
		refresh++
		view := ui.TopView{Title: insp.Pattern(""), Refresh: refresh}
		rctx, cancel := context.WithTimeout(ctx, max(f.G.Timeout, every))
		hist.read(rctx, client, key)
		view.Locks, err = topLocks(rctx, insp, hist)
		cancel()
		if err != nil {
			view.Status = "lockctl: " + errtext.Of(err)
		}
		w, h, serr := term.GetSize(int(out.Fd()))
		if serr != nil {
			w, h = 80, 24
		}
		fmt.Fprint(out, "\x1b[H\x1b[2J"+f.IO.RenderTop(view, w, h))
		select {
		case <-quit:
			return nil
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

// topHistoryT keeps recent waits and holds per lock name from the event stream.
type topHistoryT struct {
	last         string
	started      bool
	waits, holds map[string][]time.Duration
}

func newTopHistory() *topHistoryT {
	return &topHistoryT{waits: map[string][]time.Duration{}, holds: map[string][]time.Duration{}}
}

func (h *topHistoryT) read(ctx context.Context, c events.Reader, key string) {
	var batch []events.Entry
	var err error
	if !h.started {
		batch, h.last, err = events.Recent(ctx, c, key, 2000)
	} else {
		batch, h.last, err = events.Read(ctx, c, key, h.last, 2000)
	}
	if err != nil {
		return
	}
	h.started = true
	for _, e := range batch {
		switch {
		case e.Kind == events.Acquired:
			h.waits[e.Name] = keepLast(append(h.waits[e.Name], e.Duration), topHistory)
		case e.Kind == events.Released && e.Duration > 0:
			h.holds[e.Name] = keepLast(append(h.holds[e.Name], e.Duration), topHistory)
		}
	}
}

func keepLast(ds []time.Duration, n int) []time.Duration {
	if len(ds) > n {
		return ds[len(ds)-n:]
	}
	return ds
}

// topLocks is one scan as rows, sorted by name (a semaphore's holders
// after one another).
func topLocks(ctx context.Context, insp *inspect.Inspector, h *topHistoryT) ([]ui.TopLock, error) {
	var rows []ui.TopLock
	err := insp.Locks(ctx, "", nil, func(l inspect.Lock) error {
		rows = append(rows, ui.TopLock{Name: l.Name, Holder: l.Owner, Mode: l.Mode(), Age: l.Age, TTL: l.TTL, LeaseTTL: l.LeaseTTL,
			Waiters: l.Subscribers, Queued: l.Queued, Waits: h.waits[l.Name], Holds: h.holds[l.Name]})
		return nil
	})
	sort.SliceStable(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	return rows, err
}
