package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const root = "../../.."

// pkg/lock offers what a library user needs: the lease-centric API (a lease
// known by name and token is resumed, then renewed and released as a
// Lease), and no name that only lockctl's own packages use (those live in
// internal packages that pkg/lock imports, such as internal/lib/lockwire).
func TestLockSurface(t *testing.T) {
	names := surface(filepath.Join(root, "pkg/lock"))
	for _, want := range []string{"Lease.Release", "Lease.Refresh", "Lease.Done", "Lease.Watch", "Lease.Err", "Lease.Fence",
		"Lease.Holds", "Locker.Resume", "Locker.Reenter", "Locker.Get", "HeldError.Err", "HeldError.Holder",
		"DataError.Err", "DataError.Limit", "DataError.WantLimit", "LostError.Err", "LateError.Slow",
		"Lease.RenewNow", "WatchdogOptions.Observer", "ScriptCommands",
		// One error model: a few sentinels (the package doc's table).
		"ErrNotObtained", "ErrNotHeld", "ErrNotOwner", "ErrLost", "ErrInvalid", "ErrWrongType",
		"ErrUnavailable", "ErrStaleFence", "ErrNotWoken",
		"AcquireOptions.Observer", "AcquireEvent.Late", "AcquireEvent.Holder", "AcquireOptions.JobURL", "Holder.JobURL"} {
		if !slices.Contains(names, want) {
			t.Errorf("pkg/lock has no %s", want)
		}
	}
	for _, internal := range []string{"Locker.Release", "Locker.Renew", "Locker.Watch", "Renewer", "NewHeldError", "DataErrorOf",
		"WatchMasterSwitch", "NewToken", "DefaultOwner", "OwnerWithPID", "SystemClock",
		"Locker.ReleaseKey", "Locker.ReleaseLease", "Locker.ReleaseHold", "Locker.RenewKey", "Locker.GetKey",
		"Locker.Wake", "Locker.HeldSince", "Locker.Renewer", "WatchdogOptions.Since",
		"AuxKey", "AuxPrefix", "KeyOfAux", "Channel", "KindFence", "KindChannel", "KindWake", "ParseValue",
		"ParseRedisson", "ParseRedissonRW", "ParseRedissonAny", "IsRedissonAux", "HashString", "Slot",
		"RedissonRead", "RedissonWrite",
		// The watchdog is the Lease's (Watch, Done, Err); its engine is
		// internal/lib/watchdog. Events go to an events.Sink; a wrong type and
		// a semaphore's other limit are *DataError values; a slow link is
		// a *LateError with Slow set.
		"Watchdog", "StartWatchdog", "PanicError", "EventSink", "WrongTypeError", "LimitError", "ErrSlowLink",
		// Folded into the sentinels above: a limit mismatch is a *DataError
		// matching ErrInvalid; replicas, quorum and a slow link match
		// ErrUnavailable; a late reply's details are a *LateError. One
		// Observer tells of busy and late attempts.
		"ErrLimitMismatch", "ErrNotReplicated", "ErrNoQuorum", "ErrLate",
		"AcquireOptions.OnBusy", "AcquireOptions.OnLate", "AcquireOptions.CI", "Holder.CI"} {
		if slices.Contains(names, internal) {
			t.Errorf("pkg/lock exports %s", internal)
		}
	}
}

// Every sentinel error of the library's packages is documented as "ErrX is ...".
func TestSentinelErrorDocs(t *testing.T) {
	n := 0
	for _, dir := range []string{"pkg/lock", "pkg/limit", "pkg/once", "pkg/events", "pkg/inspect"} {
		fset := token.NewFileSet()
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		for _, path := range files {
			if strings.HasSuffix(path, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.VAR {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for _, name := range vs.Names {
						if !name.IsExported() || !strings.HasPrefix(name.Name, "Err") {
							continue
						}
						n++
						doc := vs.Doc
						if doc == nil && len(g.Specs) == 1 {
							doc = g.Doc
						}
						if text := doc.Text(); !strings.HasPrefix(text, name.Name+" is ") {
							t.Errorf("%s: %s.%s's doc does not start %q: %q", fset.Position(name.Pos()), dir, name.Name, name.Name+" is ", text)
						}
					}
				}
			}
		}
	}
	if n < 20 {
		t.Errorf("only %d sentinel errors found: the packages were not read", n)
	}
}

// pkg/lock's surface does not grow back: top-level names plus methods
// (fields are not counted), and the lines of `go doc -short`. The Lease's
// accessors (Name, Key, Token, ..., Renewals) count as methods where the
// fields they replaced did not, and Clock and Timer replaced an internal
// type; WatchEvent and Lease.RenewNow replaced three callbacks and a
// channel of WatchdogOptions (fields, not counted): 93.
func TestLockSurfaceSize(t *testing.T) {
	const maxNames, maxDocLines = 93, 30
	n := 0
	for _, name := range surface(filepath.Join(root, "pkg/lock")) {
		if !fields[name] {
			n++
		}
	}
	if n > maxNames {
		t.Errorf("pkg/lock has %d top-level names and methods, more than %d", n, maxNames)
	}
	out, err := exec.Command("go", "doc", "-short", filepath.Join(root, "pkg/lock")).Output()
	if err != nil {
		t.Fatalf("go doc: %v", err)
	}
	if lines := strings.Count(string(out), "\n"); lines > maxDocLines {
		t.Errorf("go doc -short pkg/lock is %d lines, more than %d", lines, maxDocLines)
	}
}

// inspectSurface is pkg/inspect's decided surface, top-level names and
// methods (struct fields are not listed): an Inspector that lists locks,
// describes one, finds and fixes keys without TTL, force-releases a holder
// by token or token hash with an audit record, reads the audit, checks a
// deployment (Doctor) and finds once records whose outcome is unknown; the
// records these return; the errors they match.
var inspectSurface = []string{
	"New", "Options", "Inspector", "ScanOptions",
	"Inspector.Locks", "Inspector.Lock", "Inspector.Orphans", "Inspector.FixOrphans",
	"Inspector.ForceRelease", "Inspector.Audit", "Inspector.Doctor", "Inspector.OnceUnknown",
	"Inspector.Key", "Inspector.Name", "Inspector.Pattern", "Inspector.Unscoped",
	"Lock", "Lock.Mode", "Lock.Waiters", "Renewal", "StalePeriods",
	"Process", "ProcessUnknown", "ProcessAlive", "ProcessGone", "ProcessReused",
	"ModeExclusive", "ModeShared", "ModeSemaphore", "ModeRead", "ModeWrite",
	"Detail", "Detail.Held", "Detail.Mode", "Waiter", "Writer",
	"Orphan", "Fix",
	"ReleaseOptions", "Released", "TokenHash", "TokenPrefixMin",
	"PrefixError", "PrefixError.Error", "PrefixError.Is", "ErrOwnKey",
	"AuditEntry", "AuditKey", "AuditActionOnceResolve",
	"Check", "Status", "StatusOK", "StatusWarn", "StatusFail", "ErrClusterDown",
	"ErrIncomplete", "IncompleteError", "IncompleteError.Error", "IncompleteError.Is", "IncompleteError.Unwrap",
	"Missed", "Missed.Reason", "Missed.SlotRanges",
}

// pkg/inspect exports its decided surface and nothing else: a name only
// lockctl's commands need (shell completion's names, the commands doctor's
// ACL check asks about) or only the package itself uses (Redisson's key
// and channel names, the glob escaper, the audit stream's bound) stays
// below it.
func TestInspectSurface(t *testing.T) {
	var got []string
	for _, name := range surface(filepath.Join(root, "pkg/inspect")) {
		if !fields[name] {
			got = append(got, name)
		}
	}
	for _, name := range got {
		if !slices.Contains(inspectSurface, name) {
			t.Errorf("pkg/inspect exports %s, which is not in its decided surface", name)
		}
	}
	for _, want := range inspectSurface {
		if !slices.Contains(got, want) {
			t.Errorf("pkg/inspect has no %s", want)
		}
	}
}

// pkg/inspect's surface does not grow back: top-level names plus methods
// (fields are not counted), and the lines of `go doc -short`.
func TestInspectSurfaceSize(t *testing.T) {
	const maxNames, maxDocLines = 63, 31
	n := 0
	for _, name := range surface(filepath.Join(root, "pkg/inspect")) {
		if !fields[name] {
			n++
		}
	}
	if n > maxNames || len(inspectSurface) > maxNames {
		t.Errorf("pkg/inspect has %d top-level names and methods (%d decided), more than %d", n, len(inspectSurface), maxNames)
	}
	out, err := exec.Command("go", "doc", "-short", filepath.Join(root, "pkg/inspect")).Output()
	if err != nil {
		t.Fatalf("go doc: %v", err)
	}
	if lines := strings.Count(string(out), "\n"); lines > maxDocLines {
		t.Errorf("go doc -short pkg/inspect is %d lines, more than %d", lines, maxDocLines)
	}
}

// pkg/lock's documentation stands on its own: what `go doc -all` shows
// names no internal package (a type a user cannot name, such as a Clock
// whose Timer is internal) and no file of the source. The sentinel errors
// shared with internal/lib/lockwire are the one exception, each documented
// with its message.
func TestLockDocStandsAlone(t *testing.T) {
	out, err := exec.Command("go", "doc", "-all", filepath.Join(root, "pkg/lock")).Output()
	if err != nil {
		t.Fatal(err)
	}
	file := regexp.MustCompile(`\b[a-z_]+\.(go|lua)\b`)
	pkg := regexp.MustCompile(`\b(lockwire|leasetime|watchdog|identity|luascript)\.[A-Z]|internal/`)
	alias := regexp.MustCompile(`^\s*Err\w+\s*= lockwire\.Err\w+$`)
	for i, line := range strings.Split(string(out), "\n") {
		if alias.MatchString(line) {
			continue
		}
		if pkg.MatchString(line) {
			t.Errorf("go doc line %d names an internal package: %s", i+1, line)
		}
		if m := file.FindString(line); m != "" {
			t.Errorf("go doc line %d names the source file %s: %s", i+1, m, line)
		}
	}
}
