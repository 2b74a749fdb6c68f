package lock

import (
	"fmt"
	"sync"

	"github.com/lockctl/lockctl/internal/lib/identity"
	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

// defaultOwner is user@host:pid of this process (internal/lib/identity): the
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

// tokenAndOwner are the token and owner an acquire with o records: o's
// (a token that validToken refuses is ErrInvalid), else a new token and
// this process's owner.
func tokenAndOwner(o *AcquireOptions) (token, owner string, err error) {
	token = o.Token
	if token == "" {
		token = identity.Token()
	} else if !validToken(token) {
		return "", "", fmt.Errorf("%w: token must be 1-256 printable ASCII characters without '\"' or '\\'", ErrInvalid)
	}
	owner = o.Owner
	if owner == "" {
		owner = defaultOwner()
	}
	return token, owner, nil
}
