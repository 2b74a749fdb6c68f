package cmd

import (
	"errors"
	"strings"

	"github.com/lockctl/lockctl/pkg/lock"
)

// printRefusalJSON: with -o json, a refusal because someone else holds the
// lock (held elsewhere, or not the owner on renew and release) also prints
// that holder as JSON on stdout, so a script can read who holds the lock
// without parsing stderr. The holder's token is never printed.
func printRefusalJSON(f *Factory, err error, code int) {
	var held *lock.HeldError
	if err == nil || f.G.command == "" || f.G.Output != "json" || !errors.As(err, &held) {
		return
	}
	h := held.Holder
	reason := "held"
	if errors.Is(err, lock.ErrNotOwner) {
		reason = "not_owner"
	}
	m := holderJSON(strings.TrimPrefix(h.Key, f.G.Prefix), &h, true)
	m["refused"] = reason
	m["exit"] = code
	switch h.Reason {
	case lock.ReasonSemaphore:
		m["holders"], m["limit"] = h.Holders, h.Limit
	case lock.ReasonShared:
		m["holders"] = h.Holders
	case lock.ReasonQueue:
		m["queue"] = h.Queue
	case lock.ReasonWriters:
		m["holders"], m["writers_waiting"] = h.Holders, h.Queue
	}
	_ = f.IO.PrintJSON(m)
}
