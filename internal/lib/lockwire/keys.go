package lockwire

import (
	"slices"
	"strings"
)

// AuxPrefix starts every auxiliary key lockctl writes (fence counters, wait
// queues, semaphores, fence-check records, the audit stream). It lies outside
// the default lock pattern "lock:*", so listings and orphan scans never see
// these keys; inspect also skips it explicitly for custom prefixes.
const AuxPrefix = "lockctl:"

// Kinds of auxiliary keys.
const (
	KindFence   = "fence"   // INCR counter, never expires
	KindQueue   = "queue"   // FIFO wait queue: ZSET token -> arrival (server µs)
	KindSem     = "sem"     // counting semaphore holders: ZSET token -> expiry (server ms)
	KindSemVal  = "semval"  // semaphore holders' values: HASH token -> lockctl JSON value
	KindQueueHB = "queuehb" // FIFO waiters' heartbeats: ZSET token -> expiry (server ms)
	KindChannel = "chan"    // pub/sub channel a release publishes on
	KindWake    = "wake"    // with ":<token>", a listed waiter's own wake-up stream and channel (wake.lua)
	KindChecked = "checked" // highest fence accepted by Check, per resource
	KindWriters = "writers" // exclusive acquirers waiting (see shared.go): ZSET token -> expiry (server ms)
	KindWaiting = "waiting" // shared and semaphore acquirers waiting (wake.lua): ZSET token -> expiry (server ms)
)

// auxKinds lists every kind of auxiliary key.
var auxKinds = []string{KindFence, KindQueue, KindSem, KindSemVal, KindQueueHB, KindChannel, KindWake, KindChecked, KindWriters, KindWaiting}

// InAuxSpace reports whether key lies where lockctl's scripts write the
// auxiliary keys of locks (AuxPrefix, a kind and a colon, whatever
// follows): a key that another part of lockctl (the event stream) must
// never use.
func InAuxSpace(key string) bool {
	rest, ok := strings.CutPrefix(key, AuxPrefix)
	if !ok {
		return false
	}
	kind, _, ok := strings.Cut(rest, ":")
	return ok && slices.Contains(auxKinds, kind)
}

// AuxKey names the auxiliary key of the given kind for lock key key. It lives
// in key's Redis Cluster slot: the braces hold exactly the string Redis hashes
// for key, or, when that string contains '}', another string that hashes to
// the same slot. The full key follows the braces whenever the braces alone
// would not identify it.
func AuxKey(kind, key string) string {
	h := HashString(key)
	if h == key && h != "" && !strings.Contains(h, "}") {
		return AuxPrefix + kind + ":{" + key + "}"
	}
	tag := h
	if tag == "" || strings.Contains(tag, "}") {
		tag = slotTag(Slot(key))
	}
	return AuxPrefix + kind + ":{" + tag + "}" + key
}

// WithAux returns key followed by AuxKey(kind, key) for each kind, the
// auxiliary names sharing one allocation in the usual case (a key without
// hash tag): every acquire, renew and release builds two or three of them.
func WithAux(key string, kinds ...string) []string {
	keys := make([]string, 1, 1+len(kinds))
	keys[0] = key
	if key == "" || strings.ContainsAny(key, "{}") {
		for _, k := range kinds {
			keys = append(keys, AuxKey(k, key))
		}
		return keys
	}
	n := 0
	for _, k := range kinds {
		n += len(AuxPrefix) + len(k) + len(":{}") + len(key)
	}
	var b strings.Builder
	b.Grow(n)
	for _, k := range kinds {
		b.WriteString(AuxPrefix)
		b.WriteString(k)
		b.WriteString(":{")
		b.WriteString(key)
		b.WriteByte('}')
	}
	all := b.String()
	for _, k := range kinds {
		m := len(AuxPrefix) + len(k) + len(":{}") + len(key)
		keys, all = append(keys, all[:m]), all[m:]
	}
	return keys
}

// HashString returns the part of key that Redis Cluster hashes: the content
// of the first non-empty {...} hash tag, or the whole key.
func HashString(key string) string {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			return key[s+1 : s+1+e]
		}
	}
	return key
}

// Slot is key's Redis Cluster hash slot.
func Slot(key string) int {
	return int(crc16([]byte(HashString(key))) % 16384)
}

// slotTag finds a short string without braces that hashes to slot.
func slotTag(slot int) string {
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyz"
	for n := 0; ; n++ {
		var b []byte
		for m := n; ; m /= len(alphabet) {
			b = append(b, alphabet[m%len(alphabet)])
			if m < len(alphabet) {
				break
			}
		}
		if int(crc16(b)%16384) == slot {
			return string(b)
		}
	}
}

// crc16 is the CRC16-CCITT (XMODEM) checksum Redis Cluster uses for slots.
func crc16(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for i := 0; i < 8; i++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// KeyOfAux inverts AuxKey: given an auxiliary key it returns its kind and
// the lock key it belongs to. ok is false for anything AuxKey does not
// produce (the audit stream, keys of other programs). Listings use it to
// find the locks whose holders live only in auxiliary keys (semaphores).
// The empty lock key is never a lock, so its one collision with another key
// is resolved in favour of the non-empty key.
func KeyOfAux(aux string) (kind, key string, ok bool) {
	rest, found := strings.CutPrefix(aux, AuxPrefix)
	if !found {
		return "", "", false
	}
	kind, rest, found = strings.Cut(rest, ":")
	if !found || kind == "" || !strings.HasPrefix(rest, "{") {
		return "", "", false
	}
	// The braces never hold '}' (AuxKey picks another tag then), so the
	// first '}' closes them.
	tag, tail, found := strings.Cut(rest[1:], "}")
	if !found {
		return "", "", false
	}
	key = tail
	if tail == "" {
		key = tag
	}
	// Only AuxKey's own output counts: this rejects other tags, and keys
	// whose tail would have fit in the braces.
	if AuxKey(kind, key) != aux {
		return "", "", false
	}
	return kind, key, true
}

// Channel is the pub/sub channel a release of key publishes on.
func Channel(key string) string { return AuxKey(KindChannel, key) }

// WakeKey is the wake-up stream of one waiter (token) of key, to which a
// release that can let it in appends (wake.lua) while it blocks reading it.
// It lies in key's cluster slot, and has the name of its WaiterChannel.
func WakeKey(key, token string) string { return AuxKey(KindWake, key) + ":" + token }

// WaiterChannel is the channel of one listed waiter (token) of key, on
// which a release that names it wakes it (wake.lua).
func WaiterChannel(key, token string) string { return AuxKey(KindWake, key) + ":" + token }
