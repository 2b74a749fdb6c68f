// Package identity is who lockctl says is acting: the owner recorded with a
// lock or a once claim (user@host:pid), the operator recorded in an audit
// (user@host), the CI job recorded with a lock, and the random token that
// identifies one hold. pkg/lock, pkg/once, pkg/inspect and cmd all take
// these from here, so that one process records one owner everywhere.
package identity

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/user"
	"strconv"
	"sync"
)

// UserHost is user@host of this process: $USER, else $LOGNAME, else the
// login name of the uid, else the uid; the host name, else "localhost".
// The environment is read once, at the first call.
var UserHost = sync.OnceValue(func() string {
	name := os.Getenv("USER")
	if name == "" {
		name = os.Getenv("LOGNAME")
	}
	if name == "" {
		if u, err := user.Current(); err == nil && u.Username != "" {
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

// Owner is user@host:pid of this process, enough for a person reading a
// listing to find the process that holds a lock or a claim: the owner of
// an acquire or a claim without one.
var Owner = sync.OnceValue(func() string { return OwnerWithPID(os.Getpid()) })

// OwnerWithPID is user@host:pid for another process than this one (of the
// same user on the same host): the shell that called a command which
// returns while its lock lives on.
func OwnerWithPID(pid int) string { return UserHost() + ":" + strconv.Itoa(pid) }

// Token returns 128 random bits as 32 hex digits: unguessable, so no other
// client can release or renew a hold it does not have by accident.
// crypto/rand.Read never fails (it ends the program rather than return
// short).
func Token() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// CIJobURL is the URL of the CI job this process runs in, from the
// variables the usual CI systems set (GitHub Actions, GitLab CI, Buildkite,
// Jenkins), read with getenv; "" outside CI.
func CIJobURL(getenv func(string) string) string {
	if s, r, id := getenv("GITHUB_SERVER_URL"), getenv("GITHUB_REPOSITORY"), getenv("GITHUB_RUN_ID"); s != "" && r != "" && id != "" {
		return s + "/" + r + "/actions/runs/" + id
	}
	for _, v := range []string{"CI_JOB_URL", "BUILDKITE_BUILD_URL", "BUILD_URL"} {
		if u := getenv(v); u != "" {
			return u
		}
	}
	return ""
}
