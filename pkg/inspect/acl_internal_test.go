package inspect

import "testing"

// TestDeniedWhat: a refused command is a command, whatever its name holds;
// a refused key or channel is told by the end of the message, whatever the
// key's name holds. Messages as Redis 7 words them (NOPERM replies and ACL
// DRYRUN's answers).
func TestDeniedWhat(t *testing.T) {
	for _, c := range []struct{ msg, want string }{
		{"NOPERM this user has no permissions to run the 'hkeys' command", ""},
		{"NOPERM this user has no permissions to run the 'get' command", ""},
		{"This user has no permissions to run the 'keys' command", ""},
		{"NOPERM No permissions to access a key", "keys"},
		{"This user has no permissions to access the 'limit:x' key", "keys"},
		{"This user has no permissions to access the 'lock:channel' key", "keys"},
		{"NOPERM No permissions to access a channel", "channel"},
		{"This user has no permissions to access the 'lockctl:key' channel", "channel"},
	} {
		if got := deniedWhat(c.msg); got != c.want {
			t.Errorf("deniedWhat(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}
