package cmd

import (
	"fmt"
	"time"

	"github.com/lockctl/lockctl/pkg/lock"
)

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
	if h.JobURL != "" {
		m["ci"] = h.JobURL
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
