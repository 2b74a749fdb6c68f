package cmd

import (
	"errors"
	"strings"

	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
)

// printRefusalJSON: with -o json, a refusal because someone else holds the
// lock (held elsewhere, or not the owner on renew and release) also prints
// that holder as JSON on stdout, so a script can read who holds the lock
// without parsing stderr. The holder's token is never printed.
func printRefusalJSON(f *Factory, err error, code int) {
	if printIncompleteJSON(f, err, code) {
		return
	}
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

// printIncompleteJSON: with -o json, a Cluster listing that could not read
// every node (or none: the cluster is down) ends its output with an object
// naming what it missed, after the records it could read, so that a script
// never takes an empty or short list for the whole truth. It reports
// whether it printed.
func printIncompleteJSON(f *Factory, err error, code int) bool {
	var partial *inspect.IncompleteError
	if err == nil || f.G.Output != "json" || !errors.As(err, &partial) {
		return false
	}
	missed := make([]map[string]any, len(partial.Missed))
	for i, m := range partial.Missed {
		missed[i] = map[string]any{"node": m.Node, "slots": m.SlotRanges(), "reason": m.Reason()}
	}
	refused := "incomplete"
	if partial.Down {
		refused = "cluster_down"
	}
	_ = f.IO.PrintJSON(map[string]any{"refused": refused, "incomplete": true, "missed": missed, "exit": code})
	return true
}
