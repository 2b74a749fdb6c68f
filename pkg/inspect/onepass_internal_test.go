package inspect

import "testing"

func TestOnePass(t *testing.T) {
	sem := (&Inspector{prefix: "lock:"}).semPattern()
	for _, tc := range []struct {
		a, want string
		ok      bool
	}{
		{"lock:*", "lock*", true},
		{"*", "*", true},
		{"**", "*", true},
		{"lock:deploy*", "", false}, // narrower: two server-filtered passes
		{"app:*", "", false},
		{"lock\\*x*", "", false},
	} {
		got, ok := onePass(tc.a, sem)
		if got != tc.want || ok != tc.ok {
			t.Errorf("onePass(%q, %q) = %q, %v; want %q, %v", tc.a, sem, got, ok, tc.want, tc.ok)
		}
		if !ok {
			continue
		}
		// Whatever either pattern matches, the one pass matches too.
		for _, k := range []string{"lock:a", "lock:", "lockctl:sem:{lock:a}", "lockctl:sem:{x}lock:b"} {
			if (globMatch(tc.a, k) || globMatch(sem, k)) && !globMatch(got, k) {
				t.Errorf("%q misses %q", got, k)
			}
		}
	}
}
