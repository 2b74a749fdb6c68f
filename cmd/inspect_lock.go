package cmd

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/lockctl/lockctl/cmd/ui"
	"github.com/lockctl/lockctl/pkg/inspect"
	"github.com/lockctl/lockctl/pkg/lock"
	"github.com/spf13/cobra"
)

func newInspectLockCmd(f *Factory) *cobra.Command {
	var showToken bool
	c := &cobra.Command{
		Use:   "lock NAME",
		Short: "Show one lock in full: holder, TTL, fence counter, waiters, shared and semaphore holders",
		Long: `Show one lock in full: the holder (owner, age, TTL, fence, note, CI job URL,
token hash) and its mode (exclusive, shared or semaphore), the fence
counter, the FIFO queue, every holder of a --limit lock or of one held
--shared, and the exclusive acquirers waiting ("writer" rows: while any is
listed, no new --shared holder gets in; each drops off the list at its
expiry unless it tries again). A Redisson lock shows its fields, and its
holds ("hold" rows, mode read or write) for a read-write lock, and the
waiters in its fair queue ("fair queue") for a fair lock.

"renewed" says when the holder last renewed its lease (server time) and its
renewal period; a holder that has gone more than two periods without a
renewal is NOT RENEWING: killed (kill -9), stopped, or cut off from Redis,
its lock held until its TTL with nobody behind it. A lease renewed by hand
(lock, then renew) has no period and is never called that; a lock of
another client has no renewal record. For a holder on this host, "process"
says whether its pid still runs and is still the same process (its start
time is recorded with the lock).

A holder's token is shown as its hash (the first 12 hex digits of
SHA-1(token), as 'inspect locks --wide' shows and 'inspect force-release'
accepts): the token itself lets anyone renew or release the lock, and this
output ends up in terminals, tickets and chat. --show-token adds the full
token of each holder and the raw stored value.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			name, err := validName(args, "lock NAME")
			if err != nil {
				return err
			}
			in, err := inspector(f)
			if err != nil {
				return err
			}
			d, err := in.Lock(c.Context(), name)
			if err != nil {
				return err
			}
			if f.G.Output == "json" {
				return f.IO.PrintJSON(detailJSON(d, showToken))
			}
			return f.IO.PrintDetail([]string{"FIELD", "VALUE"}, detailRows(d, showToken))
		},
	}
	c.Flags().BoolVar(&showToken, "show-token", false, "also show each holder's full token and the raw stored value (secrets: they let anyone release the lock)")
	return c
}

// tokenText is a holder's token as the detail view shows it: its hash, and
// the token itself only when asked for.
func tokenText(l inspect.Lock, show bool) string {
	if show && l.Token != "" {
		return ui.Escape(l.Token) + " (sha1 prefix " + l.TokenHash + ")"
	}
	return l.TokenHash + " (sha1 prefix)"
}

func detailRows(d *inspect.Detail, showToken bool) [][]string {
	esc := ui.Escape
	rows := [][]string{{"name", esc(d.Name)}, {"key", esc(d.Key)}}
	state := "free"
	switch {
	case d.Lock != nil:
		state = "held"
	case d.Mode() == inspect.ModeShared:
		state = fmt.Sprintf("held shared by %d holder(s)", len(d.Holders))
	case len(d.Holders) > 0:
		state = "held " + strings.Trim(holdersText(int64(len(d.Holders)), d.Limit), "()")
	}
	rows = append(rows, []string{"state", state})
	if l := d.Lock; l != nil {
		rows = append(rows, []string{"kind", l.Kind()}, []string{"mode", l.Mode()}, []string{"owner", esc(l.Owner)})
		if !l.AcquiredAt.IsZero() {
			rows = append(rows, []string{"acquired", l.AcquiredAt.Local().Format(time.RFC3339) + " (" + ageText(l.Age) + " ago)"})
		}
		rows = append(rows, []string{"ttl", ttlCell(l.TTL)})
		rows = append(rows, []string{"renewed", renewalText(l.Renewal)})
		if s := processText(*l); s != "" {
			rows = append(rows, []string{"process", s})
		}
		if l.Format == lock.FormatLockctl && l.Reason == "" {
			rows = append(rows, []string{"fence", strconv.FormatInt(l.Fence, 10)})
		}
		if l.Format == lock.FormatRedisson || l.Reentry > 1 {
			rows = append(rows, []string{"reentry", strconv.FormatInt(l.Reentry, 10)})
		}
		rows = append(rows, []string{"token", tokenText(*l, showToken)})
		if l.Note != "" {
			rows = append(rows, []string{"note", esc(l.Note)})
		}
		if l.JobURL != "" {
			rows = append(rows, []string{"ci", esc(l.JobURL)})
		}
		if d.Raw != "" && showToken {
			// lockctl's value starts with the token; a plain SET lock's
			// value is its token.
			rows = append(rows, []string{"value", esc(d.Raw)})
		}
		for _, k := range sortedKeys(d.Fields) {
			rows = append(rows, []string{"field", esc(k) + " = " + esc(d.Fields[k])})
		}
		for i, h := range d.RWHolds {
			rows = append(rows, []string{fmt.Sprintf("hold %d", i+1), rwHoldText(h, showToken)})
		}
	}
	if len(d.Holders) > 0 {
		if mode := d.Holders[0].Mode(); mode == inspect.ModeShared {
			rows = append(rows, []string{"kind", "shared"}, []string{"mode", mode})
		} else {
			rows = append(rows, []string{"kind", "semaphore"}, []string{"mode", mode}, []string{"limit", limitText(d)})
		}
		rows = append(rows, []string{"slots", esc(d.SemKey) + ", " + esc(d.SemValKey)})
		for i, h := range d.Holders {
			rows = append(rows, []string{fmt.Sprintf("holder %d", i+1), holderText(h, showToken)})
		}
	}
	rows = append(rows, []string{"fence counter", fmt.Sprintf("%d (%s)", d.Fence, esc(d.FenceKey))})
	rows = append(rows, []string{"waiters", fmt.Sprintf("%d subscribed, %d queued", d.Subscribers, len(d.Queue))})
	if d.RedissonQueued > 0 || (d.Lock != nil && d.Lock.Format == lock.FormatRedisson && d.Lock.RWMode == "") {
		rows = append(rows, []string{"fair queue", fmt.Sprintf("%d waiting in Redisson's fair queue (%s)", d.RedissonQueued, esc(d.RedissonQueueKey))})
	}
	for i, w := range d.Queue {
		rows = append(rows, []string{fmt.Sprintf("queue %d", i+1), waiterText(w)})
	}
	if len(d.Writers) > 0 {
		rows = append(rows, []string{"writers", fmt.Sprintf("%d exclusive acquirer(s) waiting, no new shared holder gets in (%s)",
			len(d.Writers), esc(d.WritersKey))})
		for i, w := range d.Writers {
			rows = append(rows, []string{fmt.Sprintf("writer %d", i+1), "token " + w.TokenHash + ", expires in " + shortDuration(w.TTL) + " unless it tries again"})
		}
	}
	return rows
}

// limitText is the semaphore's bound, and every holder's when they differ
// (each acquire compares with its own --limit, so a mismatch lets more in).
func limitText(d *inspect.Detail) string {
	if d.Limit == 0 {
		return "unknown"
	}
	s := strconv.FormatInt(d.Limit, 10)
	for _, h := range d.Holders {
		if h.Limit != d.Limit {
			var all []string
			for _, h := range d.Holders {
				all = append(all, strconv.FormatInt(h.Limit, 10))
			}
			return s + " (holders disagree: " + strings.Join(all, ", ") + ")"
		}
	}
	return s
}

// renewalText says when a holder last renewed, and whether it has
// stopped (inspect.Renewal.Stale).
func renewalText(r inspect.Renewal) string {
	if !r.Recorded {
		return "no renewal record (a lock of another client: whether its holder renews cannot be told)"
	}
	s := r.At.Local().Format(time.RFC3339) + " (" + ageText(r.Age) + " ago"
	switch {
	case r.Every == 0:
		return s + "; renewed by hand, no renewal period)"
	case r.Stale:
		return fmt.Sprintf("%s; renews every %s): NOT RENEWING, no renewal for more than %d periods: the holder was killed, is stopped or cannot reach Redis; the lock frees itself at its TTL",
			s, shortDuration(r.Every), inspect.StalePeriods)
	}
	return s + "; renews every " + shortDuration(r.Every) + ")"
}

// processText says whether l's owner process still runs, when its host is
// this one; "" when that cannot be told. A lease renewed by hand may
// outlive the shell that took it (its token passed on), so only a holder
// with a renewal period is called dead for it.
func processText(l inspect.Lock) string {
	id := "pid " + strconv.Itoa(l.PID)
	dead := ""
	if l.Renewal.Every > 0 {
		dead = ": the holder is dead"
	}
	switch l.Process {
	case inspect.ProcessAlive:
		return id + " is running on this host"
	case inspect.ProcessGone:
		return id + " is not running on this host" + dead
	case inspect.ProcessReused:
		return id + " is another process now (the pid was reused)" + dead
	}
	return ""
}

// holderText is one semaphore holder on one line.
func holderText(h inspect.Lock, showToken bool) string {
	tok := h.TokenHash
	if showToken && h.Token != "" {
		tok = ui.Escape(h.Token)
	}
	s := ui.Escape(orDash(h.Owner)) + " (token " + tok + ", fence " + strconv.FormatInt(h.Fence, 10) +
		", age " + ageText(h.Age) + ", ttl " + ttlCell(h.TTL)
	if h.Renewal.Recorded {
		s += ", renewed " + ageText(h.Renewal.Age) + " ago"
	}
	if h.Renewal.Stale {
		s += ", NOT RENEWING"
	}
	if p := processText(h); p != "" {
		s += ", " + p
	}
	s += ")"
	if h.Note != "" {
		s += " note: " + ui.Escape(h.Note)
	}
	if h.JobURL != "" {
		s += " ci: " + ui.Escape(h.JobURL)
	}
	return s
}

// rwHoldText is one hold of a Redisson read-write lock on one line.
func rwHoldText(h inspect.Lock, showToken bool) string {
	tok := h.TokenHash
	if showToken {
		tok = ui.Escape(h.Token)
	}
	return ui.Escape(h.Owner) + " (" + h.Mode() + ", reentry " + strconv.FormatInt(h.Reentry, 10) + ", token " + tok + ")"
}

// waiterText is one FIFO waiter: the queue keeps only its token.
func waiterText(w inspect.Waiter) string {
	s := "token " + w.TokenHash + ", waiting " + ageText(w.Waiting)
	switch {
	case w.Heartbeat == 0:
		s += ", stopped trying (dropped at the next attempt)"
	case w.Heartbeat > 0:
		s += ", heartbeat " + shortDuration(w.Heartbeat)
	}
	return s
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

type waiterRecord struct {
	TokenHash   string `json:"token_hash"`
	ArrivedAt   string `json:"arrived_at"`
	WaitingMS   int64  `json:"waiting_ms"`
	HeartbeatMS int64  `json:"heartbeat_ms"`
}

type writerRecord struct {
	TokenHash string `json:"token_hash"`
	ExpiresAt string `json:"expires_at"`
	TTLMS     int64  `json:"ttl_ms"`
}

func detailJSON(d *inspect.Detail, showToken bool) map[string]any {
	queue := make([]waiterRecord, 0, len(d.Queue))
	for _, w := range d.Queue {
		queue = append(queue, waiterRecord{TokenHash: w.TokenHash, ArrivedAt: w.Arrived.Format(time.RFC3339Nano),
			WaitingMS: msOrMinus(w.Waiting), HeartbeatMS: msOrMinus(w.Heartbeat)})
	}
	writers := make([]writerRecord, 0, len(d.Writers))
	for _, w := range d.Writers {
		writers = append(writers, writerRecord{TokenHash: w.TokenHash, ExpiresAt: w.Expires.Format(time.RFC3339Nano), TTLMS: msOrMinus(w.TTL)})
	}
	holders := make([]lockRecord, 0, len(d.Holders))
	for _, h := range d.Holders {
		r := lockJSON(h)
		if showToken {
			r.Token = h.Token
		}
		holders = append(holders, r)
	}
	for _, h := range d.RWHolds {
		r := lockJSON(h)
		if showToken {
			r.Token = h.Token
		}
		holders = append(holders, r)
	}
	m := map[string]any{
		"name": d.Name, "key": d.Key, "held": d.Held(), "mode": nil,
		"fence_counter": d.Fence, "fence_key": d.FenceKey,
		"subscribers": d.Subscribers,
		"queue_key":   d.QueueKey, "queue": queue,
		"semaphore_key": d.SemKey, "semaphore_values_key": d.SemValKey,
		"limit": d.Limit, "holders": holders,
		"writers_key": d.WritersKey, "writers": writers,
		"redisson_queue_key": d.RedissonQueueKey, "redisson_queued": d.RedissonQueued,
		"lock": nil,
	}
	if mode := d.Mode(); mode != "" {
		m["mode"] = mode
	}
	if d.Lock != nil {
		lj := lockJSON(*d.Lock)
		if showToken {
			lj.Token = d.Lock.Token
			if d.Raw != "" {
				m["value"] = d.Raw
			}
		}
		m["lock"] = lj
		if d.Fields != nil {
			m["fields"] = d.Fields
		}
	}
	return m
}
