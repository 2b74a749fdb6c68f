package lock

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"sync"

	"github.com/lockctl/lockctl/internal/lockwire"
)

// DefaultOwner is user@host:pid, enough for a person reading a listing to
// find the process that holds a lock.
func DefaultOwner() string { return defaultOwner() }

var defaultOwner = sync.OnceValue(func() string { return OwnerWithPID(os.Getpid()) })

// OwnerWithPID is user@host:pid for another process than this one: the
// shell that called a command which returns while its lock lives on.
func OwnerWithPID(pid int) string {
	return userHost() + ":" + strconv.Itoa(pid)
}

var userHost = sync.OnceValue(func() string {
	name := os.Getenv("USER")
	if name == "" {
		name = os.Getenv("LOGNAME")
	}
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		} else {
			name = strconv.Itoa(os.Getuid())
		}
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return name + "@" + host
})

// defaultOwnerJSON is DefaultOwner as a JSON string, encoded once: every
// Acquire without an Owner stores it.
var defaultOwnerJSON = sync.OnceValue(func() string { return lockwire.EncodeJSONString(DefaultOwner()) })

// NewToken returns 128 random bits as 32 hex digits: unguessable, so no
// other client can release or renew a lock it does not hold by accident.
func NewToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("lock: token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

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
