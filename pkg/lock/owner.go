package lock

import (
	"sync"

	"github.com/lockctl/lockctl/internal/identity"
	"github.com/lockctl/lockctl/internal/lockwire"
)

// defaultOwner is user@host:pid of this process (internal/identity): the
// owner of an Acquire without one, the same as a once claim's.
var defaultOwner = identity.Owner

// defaultOwnerJSON is defaultOwner as a JSON string, encoded once: every
// Acquire without an Owner stores it.
var defaultOwnerJSON = sync.OnceValue(func() string { return lockwire.EncodeJSONString(defaultOwner()) })

// validToken reports whether token can be spliced into the stored JSON
// value verbatim: printable ASCII without quote or backslash, so the value
// prefix scripts compare is exactly what a JSON encoder would write.
func validToken(token string) bool {
	if token == "" || len(token) > 256 {
		return false
	}
	for i := 0; i < len(token); i++ {
		if c := token[i]; c < 0x21 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
