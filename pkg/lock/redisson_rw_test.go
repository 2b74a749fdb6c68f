package lock_test

import (
	"testing"

	"github.com/lockctl/lockctl/pkg/lock"
)

const rwThread = "8f6f3e2a-6b7e-4f5e-9a51-0c1d2e3f4a5b:1"

func TestParseRedissonRW(t *testing.T) {
	hs, ok := lock.ParseRedissonRW("k", map[string]string{"mode": "write", rwThread + ":write": "2", rwThread: "1"}, 5)
	if !ok || len(hs) != 2 {
		t.Fatalf("write lock with a read hold of its writer: %+v %v", hs, ok)
	}
	// Field order: the read hold "…:1" sorts before "…:1:write".
	if r, w := hs[0], hs[1]; r.RWMode != lock.RedissonRead || r.Reentry != 1 || r.Owner != rwThread || r.Token != rwThread ||
		w.RWMode != lock.RedissonWrite || w.Reentry != 2 || w.Owner != rwThread || w.Token != rwThread+":write" ||
		r.Holders != 2 || w.Kind() != "redisson" || w.TTL != 5 {
		t.Fatalf("holds %+v", hs)
	}
	for _, f := range []map[string]string{
		{"mode": "read"},                          // no hold: Redisson deletes such a hash
		{"mode": "other", rwThread: "1"},          // not a mode of Redisson's
		{rwThread: "1", rwThread + ":write": "1"}, // no mode
		{"mode": "read", "name": "alice"},         // a user's hash
		{"mode": "read", rwThread: "0"},           // no hold count
		{"mode": "read", rwThread + ":x": "1"},    // no thread id
	} {
		if hs, ok := lock.ParseRedissonRW("k", f, -1); ok {
			t.Errorf("ParseRedissonRW(%v) = %+v: not a read-write lock", f, hs)
		}
		if _, ok := lock.ParseRedisson("k", f, -1); ok && f["mode"] != "" {
			t.Errorf("ParseRedisson(%v) took a hash with a mode field", f)
		}
	}
	// A plain Redisson lock is not a read-write lock, and ParseRedissonAny
	// reads both.
	plain := map[string]string{rwThread: "3"}
	if _, ok := lock.ParseRedissonRW("k", plain, -1); ok {
		t.Fatal("plain lock taken for a read-write lock")
	}
	if h, ok := lock.ParseRedissonAny("k", plain, -1); !ok || h.Reentry != 3 || h.RWMode != "" {
		t.Fatalf("ParseRedissonAny(plain) = %+v %v", h, ok)
	}
	h, ok := lock.ParseRedissonAny("k", map[string]string{"mode": "read", rwThread: "1", "x:2": "1"}, -1)
	if !ok || h.RWMode != lock.RedissonRead || h.Owner != rwThread+",x:2" {
		t.Fatalf("ParseRedissonAny(read lock) = %+v %v", h, ok)
	}
}

func TestIsRedissonAux(t *testing.T) {
	for key, want := range map[string]bool{
		"{rw}:" + rwThread + ":rwlock_timeout:1":       true,
		"lock:{rw}:" + rwThread + ":rwlock_timeout:12": true,
		"redisson_lock_queue:{lock:fair}":              true,
		"redisson_lock_timeout:{lock:fair}":            true,
		"lock:rw":                                      false,
		"lock:rwlock_timeout:1":                        false,
		"{rw}:" + rwThread + ":rwlock_timeout:x":       false,
		"lock:redisson_lock_queue:x":                   false,
	} {
		if got := lock.IsRedissonAux(key); got != want {
			t.Errorf("IsRedissonAux(%q) = %v, want %v", key, got, want)
		}
	}
}
