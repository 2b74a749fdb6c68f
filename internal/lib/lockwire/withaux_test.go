package lockwire

import "testing"

// WithAux must name exactly the keys AuxKey does, hash tags or not.
func TestWithAuxMatchesAuxKey(t *testing.T) {
	kinds := []string{KindFence, KindSem, KindSemVal, KindChannel}
	for _, key := range []string{"lock:a", "", "x", "lock:{a}b", "lock:}a", "lock:{}a", "{a", "lock:ä:%"} {
		got := WithAux(key, kinds...)
		if len(got) != 1+len(kinds) || got[0] != key {
			t.Fatalf("WithAux(%q) = %q", key, got)
		}
		for i, k := range kinds {
			if want := AuxKey(k, key); got[1+i] != want {
				t.Errorf("WithAux(%q)[%s] = %q, want %q", key, k, got[1+i], want)
			}
		}
	}
}
