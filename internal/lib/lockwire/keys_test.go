package lockwire_test

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

func TestSlotKnownValues(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]int{"123456789": 12739, "foo": 12182, "{user1000}.following": 3443, "foo{}{bar}": 8363, "foo{{bar}}zap": 4015} {
		if got := lockwire.Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestAuxKeySameSlotOutsidePattern(t *testing.T) {
	keys := []string{"lock:deploy", "lock:{order}:1", "lock:a}b", "lock:a{}b", "lock:a{b", "lock:ü nicode *?[x]", "", "lock:}{"}
	seen := map[string]string{}
	for _, k := range keys {
		for _, kind := range []string{lockwire.KindFence, lockwire.KindQueue} {
			a := lockwire.AuxKey(kind, k)
			if lockwire.Slot(a) != lockwire.Slot(k) {
				t.Errorf("AuxKey(%q, %q) = %q in slot %d, key in slot %d", kind, k, a, lockwire.Slot(a), lockwire.Slot(k))
			}
			if strings.HasPrefix(a, "lock:") {
				t.Errorf("AuxKey %q is inside the lock pattern", a)
			}
			if prev, dup := seen[a]; dup {
				t.Errorf("AuxKey %q for both %q and %q", a, prev, k)
			}
			seen[a] = k
		}
	}
	if got := lockwire.AuxKey(lockwire.KindFence, "lock:deploy"); got != "lockctl:fence:{lock:deploy}" {
		t.Errorf("common case = %q", got)
	}
}

func TestKeyOfAuxInvertsAuxKey(t *testing.T) {
	keys := []string{
		"lock:deploy",         // {key}
		"lock:{order}:1",      // a hash tag of its own: {order}lock:{order}:1
		"lock:a}b",            // '}' in the key: a slot tag, then the key
		"lock:a{}b",           // an empty {} is no hash tag, but braces in the key
		"lock:a{b",            // an unclosed brace
		"lock:}{",             // both
		"lock:ü nicode *?[x]", // glob characters and UTF-8
		"deploy",              // raw keys (--prefix '')
		"{x}",
		"lockctl:fence:{lock:deploy}", // a lock key that looks like an aux key
	}
	kinds := []string{lockwire.KindFence, lockwire.KindQueue, lockwire.KindSem, lockwire.KindSemVal, lockwire.KindQueueHB, lockwire.KindChannel, lockwire.KindChecked}
	for _, k := range keys {
		for _, kind := range kinds {
			a := lockwire.AuxKey(kind, k)
			gotKind, gotKey, ok := lockwire.KeyOfAux(a)
			if !ok || gotKind != kind || gotKey != k {
				t.Errorf("KeyOfAux(%q) = %q, %q, %v; want %q, %q", a, gotKind, gotKey, ok, kind, k)
			}
		}
	}
	// The slot-tag shape really is in use for these keys.
	if a := lockwire.AuxKey(lockwire.KindSem, "lock:a}b"); !strings.HasSuffix(a, "}lock:a}b") || strings.HasPrefix(a, "lockctl:sem:{lock:a") {
		t.Errorf("slot-tag shape: %q", a)
	}
	if a := lockwire.AuxKey(lockwire.KindSem, "lock:{order}:1"); a != "lockctl:sem:{order}lock:{order}:1" {
		t.Errorf("hash-tag shape: %q", a)
	}
	for _, a := range []string{
		"lockctl:audit", "lock:deploy", "lockctl:sem:lock:deploy", "lockctl::{x}", "lockctl:sem:{x",
		"lockctl:sem:{zz}lock:deploy", // a tag AuxKey would not choose
		"lockctl:sem:{order}lock:x",   // the key's slot differs from the tag's
		"lockctl:sem:{lock:a}xyz",     // lock:axyz would have used {lock:axyz}
		"",
	} {
		if kind, key, ok := lockwire.KeyOfAux(a); ok {
			t.Errorf("KeyOfAux(%q) = %q, %q, true; want not ok", a, kind, key)
		}
	}
}

// Every auxiliary key lockctl writes lies in the auxiliary key space; the
// event stream's default key, the audit stream and lock keys do not.
func TestInAuxSpace(t *testing.T) {
	kinds := []string{lockwire.KindFence, lockwire.KindQueue, lockwire.KindSem, lockwire.KindSemVal, lockwire.KindQueueHB,
		lockwire.KindChannel, lockwire.KindWake, lockwire.KindChecked, lockwire.KindWriters, lockwire.KindWaiting}
	for _, kind := range kinds {
		for _, key := range []string{"lock:x", "", "a{b}c", "}{"} {
			if aux := lockwire.AuxKey(kind, key); !lockwire.InAuxSpace(aux) {
				t.Errorf("InAuxSpace(%q) = false", aux)
			}
		}
	}
	if w := lockwire.WakeKey("lock:x", "tok"); !lockwire.InAuxSpace(w) {
		t.Errorf("InAuxSpace(%q) = false", w)
	}
	for _, key := range []string{"lockctl:events", "lockctl:audit", "lockctl:", "lock:x", "fence:{x}", "lockctl:fencex:{x}"} {
		if lockwire.InAuxSpace(key) {
			t.Errorf("InAuxSpace(%q) = true", key)
		}
	}
}
