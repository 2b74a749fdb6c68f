package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockctl/lockctl/pkg/events"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/spf13/cobra"
)

type forceOptions struct {
	name   string
	token  string
	reason string
}

func newForceReleaseCmd(f *Factory) *cobra.Command {
	o := &forceOptions{}
	c := &cobra.Command{
		Use:   "force-release NAME --token T [--reason S]",
		Short: "Free a stuck lock, only if the given holder still holds it",
		Long: `Free NAME only if the holder identified by --token still holds it; a holder
that took over in the meantime is left alone (exit 65, naming it).

--token is the holder's token, or the hash that 'inspect locks --wide'
shows, or a prefix of that hash of at least 6 hex digits that names one
holder alone. Of a --limit, --shared or Redisson read-write lock it frees
the one hold the token names. Waiters are woken as a release wakes them.
The comparison, the delete and the audit record (who, when, which holder,
why; see 'inspect audit') are one atomic script.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name, err := validName(args, "lock NAME")
			if err != nil {
				return err
			}
			if o.token == "" {
				return &UsageError{Err: errors.New("missing --token"),
					Hints: []string{"`lockctl inspect locks --wide` shows each holder's token hash"}}
			}
			o.name = name
			return runForceRelease(c.Context(), f, o)
		},
	}
	setFinePrint(c, `--token is the holder's token, or the hash that 'inspect locks --wide' shows,
or any prefix of it of at least 6 hex digits (of SHA-1(token)) that names
one holder alone; a shorter one, or one that several holders share (slots
of one semaphore), is refused (exit 64) and changes nothing. For a plain
SET lock of another client the token is its whole value; for a Redisson
lock, its uuid:threadId field. For a --limit lock it frees the one
semaphore slot the token holds, for a lock held --shared the one shared holder's slot; the
other holders keep theirs. Waiters are woken as a release wakes them (the
FIFO head, the exclusive waiter listed longest ago, the shared waiters, one
waiting --limit holder for a freed slot), so the next holder gets in at
once. For a Redisson read-write lock it frees the one hold the token
names (uuid:threadId:write for the writer, uuid:threadId for a reader; see
'inspect lock'), the other readers keep theirs, and Redisson's waiters are
woken as Redisson's own unlock wakes them. The comparison, the delete,
waking the waiters and the audit record (who, when, which holder, why; see
'inspect audit') happen in one atomic script.

Nothing is changed unless the key is a lock the token holds and the audit
record can be written: a hash that is not a Redisson lock (an application's
record) is refused (exit 65), as is a Redis user
that may not write the audit stream (exit 69). Keys under lockctl's own
"lockctl:" namespace are never locks (exit 64). Only waking the waiters is
best effort: when the server refuses the publish, the release stands and a
warning says so.`)
	c.Flags().StringVar(&o.token, "token", "", "the holder's token, or its hash from 'inspect locks --wide'")
	c.Flags().StringVar(&o.reason, "reason", "", "why, for the audit log")
	return c
}

// runForceRelease frees o.name's hold that o.token names, and says which
// holder it freed, or why none.
func runForceRelease(ctx context.Context, f *Factory, o *forceOptions) error {
	in, err := inspector(f)
	if err != nil {
		return err
	}
	r, err := in.ForceRelease(ctx, o.name, o.token, &inspect.ReleaseOptions{Reason: o.reason})
	if err != nil {
		return forceReleaseRefusal(err, in, o)
	}
	f.record(ctx, events.ForceRelease, o.name, 0)
	if r.Wake != nil {
		notWoken(f, "released "+o.name, r.Wake)
	}
	return printForceRelease(f, o.name, r)
}

// forceReleaseRefusal says why force-release changed nothing: which holder
// holds o.name instead of the one o.token names, and how to find it.
func forceReleaseRefusal(err error, in *inspect.Inspector, o *forceOptions) error {
	name := o.name
	var (
		held      *lock.HeldError
		wrongType *lock.DataError
		prefix    *inspect.PrefixError
	)
	switch {
	case errors.As(err, &prefix) && prefix.Holders > 1:
		return withHint(reword(err, "--token %s names %d holders of %s (a prefix of each one's token hash); nothing changed",
			prefix.Prefix, prefix.Holders, name),
			"give more of the token hash: `lockctl inspect lock "+name+"` lists every holder's")
	case errors.As(err, &prefix):
		return withHint(reword(err, "--token %s is no holder's token, and too short for a token hash: a hash prefix needs at least %d hex digits; nothing changed",
			prefix.Prefix, inspect.TokenPrefixMin),
			fmt.Sprintf("`lockctl inspect lock %s` shows each holder's token hash (%d digits)", name, len(inspect.TokenHash("any token"))))
	case errors.As(err, &held) && held.Holder.Reason == lock.ReasonSemaphore:
		return withHint(reword(err, "no slot of %s is held by %s; nothing changed (%d holder(s); the first to expire is %s, token %s, ttl %s)",
			name, givenToken(o.token), held.Holder.Holders, orDash(held.Holder.Owner), inspect.TokenHash(held.Holder.Token), ttlCell(held.Holder.TTL)),
			"`lockctl inspect lock "+name+"` lists every holder's token hash")
	case errors.As(err, &held) && held.Holder.Reason == lock.ReasonShared:
		return withHint(reword(err, "no shared holder of %s has token %s; nothing changed (%d shared holder(s); the first to expire is %s, token %s, ttl %s)",
			name, givenToken(o.token), held.Holder.Holders, orDash(held.Holder.Owner), inspect.TokenHash(held.Holder.Token), ttlCell(held.Holder.TTL)),
			"`lockctl inspect lock "+name+"` lists every shared holder's token hash")
	case errors.As(err, &held) && held.Holder.RWMode != "":
		return withHint(reword(err, "no hold of %s has token %s; nothing changed (a Redisson %s lock held by %s, %d hold(s), ttl %s)",
			name, givenToken(o.token), held.Holder.RWMode, held.Holder.Owner, held.Holder.Holders, ttlCell(held.Holder.TTL)),
			"`lockctl inspect lock "+name+"` lists every hold's token hash")
	case errors.As(err, &held):
		return withHint(reword(err, "%s is held by %s (token %s)%s, not by %s; nothing changed", name,
			held.Holder.Owner, inspect.TokenHash(held.Holder.Token), ttlText(held.Holder.TTL), givenToken(o.token)),
			"the holder changed since you looked: run `lockctl inspect lock "+name+"` again")
	case errors.Is(err, lock.ErrNotHeld):
		return reword(err, "%s is not held (expired or already released); nothing changed", name)
	case errors.Is(err, inspect.ErrOwnKey):
		return ownKeyRefusal("force-release", in.Key(name), err)
	case errors.As(err, &wrongType) && wrongType.Err == lock.ErrWrongType:
		return reword(err, "%s; nothing changed", err)
	}
	return err
}

// printForceRelease reports the release r of name: a JSON record on
// stdout, or a line on stderr naming the holder freed and its audit entry.
func printForceRelease(f *Factory, name string, r *inspect.Released) error {
	if f.G.Output == "json" {
		m := map[string]any{"name": name, "key": r.Holder.Key, "released": true,
			"kind": r.Holder.Kind(), "mode": releasedMode(r.Holder), "owner": r.Holder.Owner, "fence": r.Holder.Fence,
			"token_hash": r.TokenHash, "ttl_ms": msOrMinus(r.Holder.TTL), "audit_id": r.AuditID}
		if r.Holder.Reason == lock.ReasonSemaphore || r.Holder.Reason == lock.ReasonShared || r.Holder.RWMode != "" {
			m["holders_left"] = r.HoldersLeft
		}
		return f.IO.PrintJSON(m)
	}
	what := "released " + name
	switch r.Holder.Reason {
	case lock.ReasonSemaphore:
		what = fmt.Sprintf("freed a slot of %s (%d still held)", name, r.HoldersLeft)
	case lock.ReasonShared:
		what = fmt.Sprintf("freed a shared holder's slot of %s (%d shared holder(s) left)", name, r.HoldersLeft)
	}
	if r.Holder.RWMode != "" {
		what = fmt.Sprintf("freed the Redisson %s hold of %s (%d hold(s) left)", r.Holder.RWMode, name, r.HoldersLeft)
	}
	f.IO.Errorf("%s held by %s (token %s, fence %d); recorded in the audit log as %s",
		what, orDash(r.Holder.Owner), r.TokenHash, r.Holder.Fence, r.AuditID)
	return nil
}

// releasedMode is the mode of a released holder, as inspect.Lock.Mode
// names it.
func releasedMode(h lock.Holder) string {
	return inspect.Lock{Holder: lock.Holder{Reason: h.Reason, RWMode: h.RWMode}}.Mode()
}

// givenToken names the --token an operator passed without repeating a full
// token, which would let anyone who reads the terminal, the ticket or the CI
// log release the lock: a hash prefix (hex, shorter or longer than
// lockctl's 32-digit tokens) is shown as given, anything else as its hash.
func givenToken(t string) string {
	hex := len(t) >= inspect.TokenPrefixMin && len(t) <= 40 && len(t) != 32
	for i := 0; hex && i < len(t); i++ {
		hex = (t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f')
	}
	if hex {
		return t
	}
	return inspect.TokenHash(t)
}
