package inspect

import (
	"strconv"
	"testing"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

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

// The constants the package spells out for its readers are the values the
// wire format and the process check use.
func TestSpelledOutConstants(t *testing.T) {
	for _, c := range [][2]string{
		{ModeRead, lockwire.RedissonRead}, {ModeWrite, lockwire.RedissonWrite},
		{AuditKey, lockwire.AuxPrefix + "audit"}, {"lockctl:", lockwire.AuxPrefix},
		{string(ProcessUnknown), string(identity.ProcessUnknown)}, {string(ProcessAlive), string(identity.ProcessAlive)},
		{string(ProcessGone), string(identity.ProcessGone)}, {string(ProcessReused), string(identity.ProcessReused)},
		{strconv.Itoa(len(TokenHash("any token"))), "12"},
	} {
		if c[0] != c[1] {
			t.Errorf("%q, want %q", c[0], c[1])
		}
	}
}
