package cmd

import (
	"context"
	"errors"
	"strconv"

	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/spf13/cobra"
)

func newFenceCmd(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "fence",
		Short: "Fencing tokens: next, peek, and the storage-side check",
		Long: `A fencing token is a number that grows with every acquisition of a lock
(the counter plus one or the server's time in µs, whichever is greater, so it
keeps growing across a restart or failover that lost the counter).
The protected resource remembers the highest token it has seen and refuses
writes that carry an older one, so a holder whose lease expired during a pause
cannot overwrite the work of the holder that came after it.`,
		Args: cobra.ArbitraryArgs,
		RunE: groupRunE,
	}
	c.AddCommand(
		newFenceCheckCmd(f),
		&cobra.Command{
			Use:   "next NAME",
			Short: "Issue a new fence from NAME's counter and print it",
			Args:  cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return fenceCounter(c, f, args, true)
			},
		},
		&cobra.Command{
			Use:   "peek NAME",
			Short: "Print NAME's fencing counter without changing it",
			Args:  cobra.ExactArgs(1),
			RunE: func(c *cobra.Command, args []string) error {
				return fenceCounter(c, f, args, false)
			},
		},
	)
	return c
}

type fenceCheckOptions struct {
	resource string
	n        int64
	token    string
	shared   bool
}

func newFenceCheckCmd(f *Factory) *cobra.Command {
	o := &fenceCheckOptions{}
	c := &cobra.Command{
		Use:   "check RESOURCE N",
		Short: "Accept fence N for RESOURCE only if no newer one was seen (exit 65 otherwise)",
		Long: `Accept fence N for RESOURCE, atomically, when N is greater than the highest
fence accepted for it, and record N with the token presenting it. N equal to
the highest is accepted again only from the token that presented it first (a
holder writes many times); a lower N, or an equal one from anyone else or
without a token, exits 65 and says which fence is newer.

A shared holder (lock or run --shared) holds the fence of the last exclusive
acquisition, as every other shared holder since does: with --shared, N is
accepted when it is at least the highest fence, from any number of holders,
and recorded without a token, so the exclusive holder that presented it
before may not repeat it. Inside 'lockctl run NAME --shared' (LOCKCTL_MODE
is shared) --shared is the default.`,
		Example: `  # inside lockctl run: LOCKCTL_FENCE and LOCKCTL_TOKEN are set
  lockctl fence check orders-db "$LOCKCTL_FENCE" && write-orders
  lockctl fence check orders-db 42 --token "$TOKEN" || echo "stale fence"
  lockctl fence check orders-db "$FENCE" --shared && read-orders`,
		Args: cobra.ExactArgs(2),
		RunE: func(c *cobra.Command, args []string) error {
			resource, err := newName(args, "RESOURCE")
			if err != nil {
				return err
			}
			n, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil || n < 1 {
				return usageErrorf("fence %q: want a positive integer", args[1])
			}
			if o.shared && o.token != "" {
				return &UsageError{Err: errors.New("--shared and --token exclude each other"),
					Hints: []string{"shared holders all present the same fence; the check records no token for them"}}
			}
			if !c.Flags().Changed("shared") && o.token == "" && f.Getenv("LOCKCTL_MODE") == "shared" {
				o.shared = true
			}
			if o.token == "" && !o.shared {
				o.token = f.Getenv("LOCKCTL_TOKEN")
			}
			o.resource, o.n = resource, n
			return runFenceCheck(c.Context(), f, o)
		},
	}
	c.Flags().StringVar(&o.token, "token", "", "the token of the holder presenting N (default LOCKCTL_TOKEN)")
	c.Flags().BoolVar(&o.shared, "shared", false, "check for a shared holder: accept N equal to the highest from anyone (default when LOCKCTL_MODE is shared)")
	return c
}

// runFenceCheck accepts fence o.n for o.resource, or refuses it as stale
// (exit 65) with the newer fence.
func runFenceCheck(ctx context.Context, f *Factory, o *fenceCheckOptions) error {
	l, err := f.Locker()
	if err != nil {
		return err
	}
	if o.shared {
		err = l.Fences().CheckShared(ctx, o.resource, o.n)
	} else {
		err = l.Fences().Check(ctx, o.resource, o.n, o.token)
	}
	var stale *lock.StaleFenceError
	if errors.As(err, &stale) {
		return withHint(err, "a newer holder has written to this resource; the caller's lease is stale and its write must be dropped")
	}
	if err != nil {
		return err
	}
	if f.G.Output == "json" {
		return f.IO.PrintJSON(map[string]any{"resource": o.resource, "fence": o.n, "accepted": true})
	}
	return nil
}

func fenceCounter(c *cobra.Command, f *Factory, args []string, next bool) error {
	check := validName
	if next {
		check = newName
	}
	name, err := check(args, "lock NAME")
	if err != nil {
		return err
	}
	l, err := f.Locker()
	if err != nil {
		return err
	}
	var n int64
	if next {
		n, err = l.Fences().Next(c.Context(), name)
	} else {
		n, err = l.Fences().Peek(c.Context(), name)
	}
	if err != nil {
		return err
	}
	if f.G.Output == "json" {
		return f.IO.PrintJSON(map[string]any{"name": name, "key": l.Key(name), "fence": n})
	}
	return f.IO.PrintLine(strconv.FormatInt(n, 10))
}
