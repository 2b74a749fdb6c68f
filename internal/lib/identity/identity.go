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
	"strings"
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

// PIDStart is the start time of this process, as StartTime reads it: what
// a lock records beside the pid in its owner, so that a PID reused by
// another process is told apart. 0 where there is no /proc.
var PIDStart = sync.OnceValue(func() int64 { return StartTime(os.Getpid()) })

// StartTime is when process pid started, in clock ticks after boot
// (/proc/PID/stat's starttime, field 22): with the pid, it names one
// process on this host for as long as the host runs. 0 when it cannot be
// read (the process is gone, or there is no /proc).
func StartTime(pid int) int64 {
	start, _ := startTime(procRoot, pid)
	return start
}

const procRoot = "/proc"

// startTime reads pid's start time, and whether it has died: a zombie
// (state Z, or X) keeps its /proc entry until its parent reaps it.
func startTime(root string, pid int) (start int64, dead bool) {
	if pid <= 0 {
		return 0, false
	}
	// starttime is field 22 of the stat line, the 20th after comm.
	f, ok := StatFields(root, pid)
	if !ok || len(f) < 20 {
		return 0, false
	}
	n, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil || n < 0 {
		return 0, false
	}
	return n, f[0] == "Z" || f[0] == "X"
}

// StatFields reads /proc/PID/stat under root (a proc filesystem, "/proc"
// on Linux) and returns its fields after the command name: state, ppid,
// and so on (field 3 of proc(5) is the first). The command name may hold
// spaces and parentheses, so the fields are counted after its last ')'.
func StatFields(root string, pid int) ([]string, bool) {
	b, err := os.ReadFile(root + "/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(s[i+1:]), true
}

// Process is what this host knows of the process a lock's owner names.
type Process string

// States of an owner's process, as CheckProcess tells them.
const (
	// ProcessUnknown: it cannot be told (another host, no pid, no /proc).
	ProcessUnknown Process = ""
	// ProcessAlive: the pid runs and, when a start time was recorded, is
	// the same process.
	ProcessAlive Process = "alive"
	// ProcessGone: no process has the pid (or only a zombie, dead
	// and not yet reaped).
	ProcessGone Process = "gone"
	// ProcessReused: the pid runs, but started at another time than the
	// one recorded: another process took the pid, the owner is gone.
	ProcessReused Process = "reused"
)

// CheckProcess tells whether process pid of this host is still the one
// that started at start (a StartTime; 0 when unknown, which only tells
// whether the pid runs).
func CheckProcess(pid int, start int64) Process { return checkProcess(procRoot, pid, start) }

func checkProcess(root string, pid int, start int64) Process {
	if pid <= 0 {
		return ProcessUnknown
	}
	if _, err := os.Stat(root + "/self/stat"); err != nil {
		// No proc filesystem here: nothing can be told.
		return ProcessUnknown
	}
	now, dead := startTime(root, pid)
	switch {
	case now == 0, dead:
		return ProcessGone
	case start > 0 && now != start:
		return ProcessReused
	}
	return ProcessAlive
}

// Host is this host's name as owners record it (the part of UserHost after
// '@').
func Host() string {
	_, h, _ := strings.Cut(UserHost(), "@")
	return h
}
