package lockwire

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/internal/lib/redisreply"
)

// Reply codes, per script: the first element of each script's reply. The
// same number means different things in different scripts (4 is "holds
// left" in release.lua and "no TTL recorded" in renew.lua), so each script
// has its own names, and its decoder (DecodeAcquire, DecodeRelease …)
// refuses a code the script does not return. Codes lists them all; a test
// reads every script's source and checks that each code it can return is
// named there.
const (
	// acquire.lua and fifo_acquire.lua.
	AcquireRefused  int64 = 0 // {0, type, ...}: another holder, as held() or semHeld() describes
	AcquireAcquired int64 = 1 // {1, fence, server ms}
	AcquireAgain    int64 = 2 // {2, stored value, server ms}: the same token held it already (a retry)

	// sem_acquire.lua: AcquireRefused, AcquireAcquired, AcquireAgain, and:
	SemAcquireLimit int64 = 4 // {4, limit}: the live holders use another limit (0: they hold it shared)

	// shared_acquire.lua: AcquireRefused, AcquireAcquired, AcquireAgain, and:
	SharedAcquireLimit int64 = 4 // {4, limit}: a semaphore of that limit holds the name

	// renew.lua.
	RenewNotHeld   int64 = 0 // {0}: no lock and no semaphore
	RenewRenewed   int64 = 1 // {1, ttl in ms}
	RenewOther     int64 = 2 // {2, type, ...}: another holder, as held() describes
	RenewSemaphore int64 = 3 // {3}: no lock, but a semaphore of the same name (sem_renew.lua decides)
	RenewNoTTL     int64 = 4 // {4}: ttl 0, but the value records no TTL

	// sem_renew.lua.
	SemRenewNotHeld int64 = 0 // {0}: the token holds no slot
	SemRenewRenewed int64 = 1 // {1, ttl in ms}
	SemRenewNoTTL   int64 = 4 // {4}: ttl 0, but the value records no TTL

	// release.lua.
	ReleaseNotHeld   int64 = 0 // {0}: no lock and no semaphore
	ReleaseReleased  int64 = 1 // {1}: deleted, waiters woken
	ReleaseOther     int64 = 2 // {2, type, ...}: another holder, as held() describes
	ReleaseSemaphore int64 = 3 // {3}: no lock, but a semaphore of the same name (sem_release.lua decides)
	ReleaseHoldsLeft int64 = 4 // {4, holds left}: one hold of a re-entered lease given back
	ReleaseNotWoken  int64 = 5 // {5, error, channel, command}: deleted, but the server refused the wake-up: publishing on channel, or command to pick the waiter

	// sem_release.lua.
	SemReleaseNotHeld   int64 = 0 // {0}: the token holds no slot
	SemReleaseReleased  int64 = 1 // {1}
	SemReleaseHoldsLeft int64 = 4 // {4, holds left}
	SemReleaseNotWoken  int64 = 5 // {5, error, channel, command}: released, but the server refused the wake-up, as ReleaseNotWoken

	// reenter.lua.
	ReenterNotHeld int64 = 0 // {0}: the token holds nothing here
	ReenterLock    int64 = 1 // {1, new value, pttl, server ms}: re-entered the lock
	ReenterOther   int64 = 2 // {2, type, ...}: another holder, as held() describes
	ReenterSlot    int64 = 3 // {3, new value, pttl, server ms}: re-entered a semaphore or shared slot

	// inspect.lua.
	InspectFree int64 = 0 // {0}
	InspectHeld int64 = 2 // {2, type, ...}: as held() describes, or semHeld() with code 2

	// check.lua.
	CheckRefused  int64 = 0 // {0, highest fence recorded}
	CheckAccepted int64 = 1 // {1, fence}

	// fence_next.lua.
	FenceIssued int64 = 1 // {1, fence, server ms}

	// redlock_raise.lua (an integer reply, no array).
	RaiseLost int64 = 0 // the lock no longer carries the token
	RaiseDone int64 = 1 // counter raised (and the lock carries fence F)

	// pkg/inspect's forcerelease.lua.
	ForceNone      int64 = 0 // {0}: no lock and no semaphore slot
	ForceReleased  int64 = 1 // {1, type, body, pttl, kind, owner, token, fence, audit id, holders left, refusal, channel, command}
	ForceOther     int64 = 2 // {2, type, body, pttl, holders}: held, not by the token
	ForceNotLock   int64 = 3 // {3, type, what}: not a lock
	ForceAmbiguous int64 = 4 // {4, holders}: the hash prefix names several holders
	ForceTooShort  int64 = 5 // {5, digits}: a hex token no holder has, too short for a hash prefix
)

// Codes names, per script file, every reply code the script returns.
var Codes = map[string]map[int64]string{
	"acquire.lua":      {AcquireRefused: "refused", AcquireAcquired: "acquired", AcquireAgain: "held already"},
	"fifo_acquire.lua": {AcquireRefused: "refused", AcquireAcquired: "acquired", AcquireAgain: "held already"},
	"sem_acquire.lua": {AcquireRefused: "refused", AcquireAcquired: "acquired", AcquireAgain: "held already",
		SemAcquireLimit: "another limit"},
	"shared_acquire.lua": {AcquireRefused: "refused", AcquireAcquired: "acquired", AcquireAgain: "held already",
		SharedAcquireLimit: "a semaphore"},
	"renew.lua": {RenewNotHeld: "not held", RenewRenewed: "renewed", RenewOther: "another holder",
		RenewSemaphore: "a semaphore", RenewNoTTL: "no TTL recorded"},
	"sem_renew.lua": {SemRenewNotHeld: "not held", SemRenewRenewed: "renewed", SemRenewNoTTL: "no TTL recorded"},
	"release.lua": {ReleaseNotHeld: "not held", ReleaseReleased: "released", ReleaseOther: "another holder",
		ReleaseSemaphore: "a semaphore", ReleaseHoldsLeft: "holds left", ReleaseNotWoken: "released, wake-up refused"},
	// release.lua's replies, and {1, fence, ms}: released and handed to
	// the waiter named (pkg/lock's handoff.go).
	"handoff.lua": {ReleaseNotHeld: "not held", ReleaseReleased: "released, or handed on", ReleaseOther: "another holder",
		ReleaseSemaphore: "a semaphore", ReleaseHoldsLeft: "holds left", ReleaseNotWoken: "released, wake-up refused"},
	"sem_release.lua": {SemReleaseNotHeld: "not held", SemReleaseReleased: "released", SemReleaseHoldsLeft: "holds left",
		SemReleaseNotWoken: "released, wake-up refused"},
	"reenter.lua":       {ReenterNotHeld: "not held", ReenterLock: "re-entered the lock", ReenterOther: "another holder", ReenterSlot: "re-entered a slot"},
	"inspect.lua":       {InspectFree: "free", InspectHeld: "held"},
	"check.lua":         {CheckRefused: "refused", CheckAccepted: "accepted"},
	"fence_next.lua":    {FenceIssued: "issued"},
	"redlock_raise.lua": {RaiseLost: "token lost", RaiseDone: "raised"},
	"forcerelease.lua": {ForceNone: "nothing held", ForceReleased: "released", ForceOther: "another holder", ForceNotLock: "not a lock",
		ForceAmbiguous: "prefix names several holders", ForceTooShort: "prefix too short"},
	// The scripts of a set of locks (multi.go).
	"multi_acquire.lua": multiCodes["multi_acquire.lua"],
	"multi_renew.lua":   multiCodes["multi_renew.lua"],
	"multi_release.lua": multiCodes["multi_release.lua"],
}

// Types a refusal names besides Redis's own (string, hash, ...).
const (
	TypeSemaphore = "semaphore" // semaphore slots hold the name
	TypeShared    = "shared"    // shared holders hold it
	TypeWriters   = "writers"   // exclusive acquirers wait, and go first
	TypeNone      = "none"      // FIFO: the lock is free, but earlier waiters go first
)

// Reply is a decoded script reply. Code means what the script's constants
// above say; Type, Value, Fields and PTTL describe a holder when one
// refused us.
type Reply struct {
	Code   int64
	Type   string
	Value  string
	Fields map[string]string
	PTTL   time.Duration
	Fence  int64
	NowMS  int64
	Acked  int   // replicas that acknowledged the write; -1 when not asked
	Num    int64 // {code, n} replies: a renewal's ttl in ms, the holds left, a semaphore's limit, waiting writers
	// Command is the command a release's wake-up was refused when it was
	// not the PUBLISH ({5, error, channel, command}): picking the waiter
	// to wake was refused.
	Command string

	Holders int64 // semaphore or shared refusal: live holders
	Queue   int64 // FIFO refusal: waiters ahead
	Arrival int64 // FIFO refusal: the waiter's arrival in the queue (server µs)
}

// Each decoder's codes, looked up once.
var (
	acquireCodes       = Codes["acquire.lua"]
	fifoAcquireCodes   = Codes["fifo_acquire.lua"]
	semAcquireCodes    = Codes["sem_acquire.lua"]
	sharedAcquireCodes = Codes["shared_acquire.lua"]
	renewCodes         = Codes["renew.lua"]
	semRenewCodes      = Codes["sem_renew.lua"]
	releaseCodes       = Codes["release.lua"]
	semReleaseCodes    = Codes["sem_release.lua"]
	reenterCodes       = Codes["reenter.lua"]
	inspectCodes       = Codes["inspect.lua"]
	fenceNextCodes     = Codes["fence_next.lua"]
)

// known checks that the reply's code is one of the script's codes.
func known(codes map[int64]string, r Reply, err error, v any) (Reply, error) {
	if err != nil {
		return r, err
	}
	if _, ok := codes[r.Code]; !ok {
		return Reply{}, redisreply.Unexpected("script reply", v)
	}
	return r, nil
}

// DecodeAcquire reads acquire.lua's replies.
func DecodeAcquire(v any) (Reply, error) {
	r, err := decodeSemAcquire(v)
	return known(acquireCodes, r, err, v)
}

// DecodeFIFOAcquire reads fifo_acquire.lua's replies: acquire.lua's, with
// the number of waiters ahead and the waiter's arrival appended to a
// refusal.
func DecodeFIFOAcquire(v any) (Reply, error) {
	r, err := withQueue(decodeSemAcquire)(v)
	return known(fifoAcquireCodes, r, err, v)
}

// DecodeSemAcquire reads sem_acquire.lua's replies.
func DecodeSemAcquire(v any) (Reply, error) {
	r, err := decodeSemAcquire(v)
	return known(semAcquireCodes, r, err, v)
}

// DecodeSharedAcquire reads shared_acquire.lua's replies; fifo: a FIFO
// waiter's, whose refusals carry its rank and arrival in the queue.
func DecodeSharedAcquire(v any, fifo bool) (Reply, error) {
	dec := decodeShared
	if fifo {
		dec = withQueue(decodeShared)
	}
	r, err := dec(v)
	return known(sharedAcquireCodes, r, err, v)
}

// DecodeRenew reads renew.lua's replies.
func DecodeRenew(v any) (Reply, error) {
	r, err := decode(v)
	return known(renewCodes, r, err, v)
}

// DecodeSemRenew reads sem_renew.lua's replies.
func DecodeSemRenew(v any) (Reply, error) {
	r, err := decode(v)
	return known(semRenewCodes, r, err, v)
}

// DecodeRelease reads release.lua's replies. The server's refusal of a
// wake-up ({5, error, channel}) is left in Type, the channel it refused in
// Value.
func DecodeRelease(v any) (Reply, error) {
	r, err := wakeRefused(v, ReleaseNotWoken)
	return known(releaseCodes, r, err, v)
}

// DecodeSemRelease reads sem_release.lua's replies, as DecodeRelease.
func DecodeSemRelease(v any) (Reply, error) {
	r, err := wakeRefused(v, SemReleaseNotWoken)
	return known(semReleaseCodes, r, err, v)
}

// wakeRefused reads a {code, error, channel[, command]} reply (a release
// whose wake-up the server refused): the server's words in r.Type, the
// channel refused in r.Value (empty when the message went out), the command
// refused, when not the PUBLISH, in r.Command. Other replies go to decode.
func wakeRefused(v any, code int64) (Reply, error) {
	if a, ok := v.([]any); ok && (len(a) == 3 || len(a) == 4) {
		if c, _ := a[0].(int64); c == code {
			why, ok1 := a[1].(string)
			ch, ok2 := a[2].(string)
			var cmd string
			ok3 := true
			if len(a) == 4 && a[3] != nil {
				cmd, ok3 = a[3].(string)
			}
			if ok1 && ok2 && ok3 {
				return Reply{Code: code, Type: why, Value: ch, Command: cmd, Acked: -1}, nil
			}
			return Reply{}, redisreply.Unexpected("script reply", v)
		}
	}
	return decode(v)
}

// DecodeReenter reads reenter.lua's {1|3, value, pttl, server ms}, else the
// usual shapes.
func DecodeReenter(v any) (Reply, error) {
	if a, ok := v.([]any); ok && len(a) == 4 {
		code, _ := a[0].(int64)
		val, ok1 := a[1].(string)
		pttl, ok2 := a[2].(int64)
		now, ok3 := a[3].(int64)
		if (code == ReenterLock || code == ReenterSlot) && ok1 && ok2 && ok3 {
			return Reply{Code: code, Value: val, PTTL: time.Duration(pttl) * time.Millisecond, NowMS: now, Acked: -1}, nil
		}
	}
	r, err := decode(v)
	return known(reenterCodes, r, err, v)
}

// DecodeInspect reads inspect.lua's replies.
func DecodeInspect(v any) (Reply, error) {
	r, err := decodeSemAcquire(v)
	return known(inspectCodes, r, err, v)
}

// DecodeFenceNext reads fence_next.lua's reply, shaped as acquire.lua's.
func DecodeFenceNext(v any) (Reply, error) {
	r, err := decode(v)
	return known(fenceNextCodes, r, err, v)
}

// DecodeCheck reads check.lua's replies: {code, fence}, the fence (the
// caller's when accepted, the record's when refused) left in Value.
func DecodeCheck(v any) (Reply, error) {
	a, ok := v.([]any)
	if !ok || len(a) != 2 {
		return Reply{}, redisreply.Unexpected("fence check reply", v)
	}
	code, _ := a[0].(int64)
	if _, ok := Codes["check.lua"][code]; !ok {
		return Reply{}, redisreply.Unexpected("fence check reply", v)
	}
	return Reply{Code: code, Value: fmt.Sprint(a[1]), Acked: -1}, nil
}

// DecodeRaise reads redlock_raise.lua's integer reply.
func DecodeRaise(v any) (int64, error) {
	n, ok := v.(int64)
	if _, known := Codes["redlock_raise.lua"][n]; !ok || !known {
		return 0, redisreply.Unexpected("fence write-back reply", v)
	}
	return n, nil
}

// DecodeForceRelease checks the code of forcerelease.lua's reply, an array
// whose further elements pkg/inspect reads.
func DecodeForceRelease(v any) ([]any, int64, error) {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return nil, 0, redisreply.Unexpected("script reply", v)
	}
	code, ok := a[0].(int64)
	if _, known := Codes["forcerelease.lua"][code]; !ok || !known {
		return nil, 0, redisreply.Unexpected("script reply", v)
	}
	return a, code, nil
}

// decodeSemAcquire reads a semaphore refusal (decodeSem), else the usual
// shapes.
func decodeSemAcquire(v any) (Reply, error) {
	if r, ok := decodeSem(v); ok {
		return r, nil
	}
	return decode(v)
}

// decodeSem reads a semaphore refusal: {0, 'semaphore', value, pttl,
// holders}, or the same with code 2 (inspect.lua: held), or with 'shared'
// for shared holders.
func decodeSem(v any) (Reply, bool) {
	a, ok := v.([]any)
	if !ok || len(a) != 5 {
		return Reply{}, false
	}
	code, _ := a[0].(int64)
	typ, _ := a[1].(string)
	val, _ := a[2].(string)
	pttl, ok1 := a[3].(int64)
	n, ok2 := a[4].(int64)
	if (code != 0 && code != 2) || (typ != TypeSemaphore && typ != TypeShared) || !ok1 || !ok2 {
		return Reply{}, false
	}
	return Reply{Code: code, Type: typ, Value: val, PTTL: PTTLDuration(pttl), Holders: n, Acked: -1}, true
}

// decodeShared reads shared_acquire.lua's replies: a refusal for waiting
// writers, {0, 'writers', shared holders, writers}, or what acquire.lua
// and sem_acquire.lua answer.
func decodeShared(v any) (Reply, error) {
	if a, ok := v.([]any); ok && len(a) == 4 {
		code, _ := a[0].(int64)
		typ, _ := a[1].(string)
		holders, ok1 := a[2].(int64)
		writers, ok2 := a[3].(int64)
		if code == AcquireRefused && typ == TypeWriters && ok1 && ok2 {
			return Reply{Code: AcquireRefused, Type: typ, Holders: holders, Num: writers, Acked: -1}, nil
		}
	}
	return decodeSemAcquire(v)
}

// withQueue makes a FIFO script's reply decoder from the decoder of the same
// replies without a place in the queue: a refusal (code 0) carries the
// waiters ahead and the waiter's arrival as its last two elements.
func withQueue(dec func(any) (Reply, error)) func(any) (Reply, error) {
	return func(v any) (Reply, error) {
		a, ok := v.([]any)
		if !ok || len(a) < 4 {
			return dec(v)
		}
		if code, _ := a[0].(int64); code != AcquireRefused {
			return dec(v)
		}
		ahead, ok1 := a[len(a)-2].(int64)
		arrival, ok2 := a[len(a)-1].(int64)
		if !ok1 || !ok2 {
			return Reply{}, redisreply.Unexpected("script reply", v)
		}
		r, err := dec(a[:len(a)-2])
		r.Queue, r.Arrival = ahead, arrival
		return r, err
	}
}

// PTTLDuration turns a PTTL reply into a duration: -1 when the key has no
// TTL (the lock never frees itself). A TTL someone set centuries ahead
// saturates at half the range, so that callers' small additions (a waiter
// retries at TTL+1ms) cannot overflow into the past.
func PTTLDuration(ms int64) time.Duration {
	const most = math.MaxInt64 / 2 / int64(time.Millisecond)
	switch {
	case ms < 0:
		return -1
	case ms > most:
		ms = most
	}
	return time.Duration(ms) * time.Millisecond
}

// fenceOf reads a fence from a script reply: scripts return fences as
// decimal strings (see fence.lua), which no Lua double ever rounded.
func fenceOf(v any) (int64, error) {
	switch f := v.(type) {
	case string:
		return strconv.ParseInt(f, 10, 64)
	case int64:
		return f, nil
	}
	return 0, fmt.Errorf("not a fence: %v", v)
}

func isInt(v any) bool {
	_, ok := v.(int64)
	return ok
}

// decode reads the reply shapes the lock scripts document.
func decode(v any) (Reply, error) {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return Reply{}, redisreply.Unexpected("script reply", v)
	}
	r := Reply{Acked: -1}
	r.Code, ok = a[0].(int64)
	if !ok || r.Code < 0 || r.Code > 5 { // no script's code is outside 0..5 (see Codes)
		return Reply{}, redisreply.Unexpected("script reply", v)
	}
	bad := func() (Reply, error) { return Reply{}, redisreply.Unexpected("script reply", v) }
	switch {
	case len(a) == 2 && isInt(a[1]): // {code, n}
		r.Num = a[1].(int64)
	case len(a) == 3 && r.Code == 1: // acquired: fence, ms
		var err error
		if r.Fence, err = fenceOf(a[1]); err != nil {
			return bad()
		}
		if r.NowMS, ok = a[2].(int64); !ok {
			return bad()
		}
	case len(a) == 3 && r.Code == 2: // same token: value, ms
		if r.Value, ok = a[1].(string); !ok {
			return bad()
		}
		if r.NowMS, ok = a[2].(int64); !ok {
			return bad()
		}
	case len(a) >= 2: // held: type[, value|fields, pttl]
		if r.Type, ok = a[1].(string); !ok {
			return bad()
		}
		if len(a) == 4 {
			switch p := a[2].(type) {
			case string:
				r.Value = p
			case []any:
				r.Fields = make(map[string]string, len(p)/2)
				for i := 0; i+1 < len(p); i += 2 {
					r.Fields[fmt.Sprint(p[i])] = fmt.Sprint(p[i+1])
				}
			default:
				return bad()
			}
			pttl, ok := a[3].(int64)
			if !ok {
				return bad()
			}
			r.PTTL = PTTLDuration(pttl)
		}
	}
	return r, nil
}
