package cmd

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/spf13/cobra"
)

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
			lease, err := l.Resume(c.Context(), name, token)
			if err == nil {
				// --ttl unset is 0: the TTL the lease was taken with.
				err = lease.Refresh(c.Context(), o.ttl)
			}
			if err != nil {
				f.recordRenewFailed(c.Context(), name, err)
				return explainRefusal(name, err)
			}
			if f.G.Output == "json" {
				return f.IO.PrintJSON(map[string]any{"name": name, "key": l.Key(name), "renewed": true, "ttl_ms": lease.TTL().Milliseconds()})
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
			lease, err := l.Resume(c.Context(), name, token)
			if err != nil {
				// Refused before the release: recorded as the release's own refusal is.
				f.recordReleaseRefused(c.Context(), name, err)
			} else {
				err = lease.Release(c.Context())
			}
			if err != nil && !notWoken(f, "released "+name, err) {
				return explainRefusal(name, err)
			}
			if lease != nil && lease.Holds() > 0 {
				f.IO.Errorf("%s stays held: this token re-entered it and has %d hold(s) left; the last release frees it", name, lease.Holds())
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
	var (
		held *lock.HeldError
		late *lock.LateError
	)
	switch {
	case errors.As(err, &late):
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
