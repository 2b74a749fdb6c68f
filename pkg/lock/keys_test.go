package lock_test

import (
	"strings"
	"testing"

	"github.com/lockctl/lockctl/pkg/lock"
)

func TestSlotKnownValues(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]int{"123456789": 12739, "foo": 12182, "{user1000}.following": 3443, "foo{}{bar}": 8363, "foo{{bar}}zap": 4015} {
		if got := lock.Slot(key); got != want {
			t.Errorf("Slot(%q) = %d, want %d", key, got, want)
		}
	}
}

func TestAuxKeySameSlotOutsidePattern(t *testing.T) {
	keys := []string{"lock:deploy", "lock:{order}:1", "lock:a}b", "lock:a{}b", "lock:a{b", "lock:ü nicode *?[x]", "", "lock:}{"}
	seen := map[string]string{}
	for _, k := range keys {
		for _, kind := range []string{lock.KindFence, lock.KindQueue} {
			a := lock.AuxKey(kind, k)
			if lock.Slot(a) != lock.Slot(k) {
				t.Errorf("AuxKey(%q, %q) = %q in slot %d, key in slot %d", kind, k, a, lock.Slot(a), lock.Slot(k))
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
	if got := lock.AuxKey(lock.KindFence, "lock:deploy"); got != "lockctl:fence:{lock:deploy}" {
		t.Errorf("common case = %q", got)
	}
}
