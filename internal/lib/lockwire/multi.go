package lockwire

import "github.com/lockctl/lockctl/internal/lib/redisreply"

// Reply codes of the scripts that take, renew and release a set of locks
// in one step (pkg/lock's multi.go). A refusal or a loss names the key at
// fault by its place in the set (1-based), the second element of the
// reply; the rest is the reply of the one-lock script.
const (
	// multi_acquire.lua.
	MultiAcquireRefused  int64 = 0 // {0, i, type, ...}: name i is held, as held() or semHeld() describes; nothing taken
	MultiAcquireAcquired int64 = 1 // {1, server ms, fence 1, ..., fence n}

	// multi_renew.lua: RenewNotHeld {0, i}, RenewRenewed {1, ttl in ms},
	// RenewOther {2, i, type, ...} and RenewNoTTL {4, i}.

	// multi_release.lua: ReleaseNotHeld {0, i}, ReleaseReleased {1},
	// ReleaseOther {2, i, type, ...}, ReleaseHoldsLeft {4, holds left},
	// ReleaseNotWoken {5, error, channel, command}.
)

// multiCodes are the codes of the set scripts, for Codes.
var multiCodes = map[string]map[int64]string{
	"multi_acquire.lua": {MultiAcquireRefused: "refused", MultiAcquireAcquired: "acquired"},
	"multi_renew.lua": {RenewNotHeld: "a key not held", RenewRenewed: "renewed", RenewOther: "another holder",
		RenewNoTTL: "no TTL recorded"},
	"multi_release.lua": {ReleaseNotHeld: "a key not held", ReleaseReleased: "released", ReleaseOther: "another holder",
		ReleaseHoldsLeft: "holds left", ReleaseNotWoken: "released, wake-up refused"},
}

// withIndex splits the key's place i out of a {code, i, ...} reply.
func withIndex(v any) (rest []any, i int, ok bool) {
	a, ok := v.([]any)
	if !ok || len(a) < 2 {
		return nil, 0, false
	}
	n, ok := a[1].(int64)
	if !ok || n < 1 {
		return nil, 0, false
	}
	return append([]any{a[0]}, a[2:]...), int(n), true
}

// DecodeMultiAcquire reads multi_acquire.lua's replies: the fences of an
// acquisition, in the set's order, or a refusal, with the place of the
// name refused.
func DecodeMultiAcquire(v any) (r Reply, fences []int64, i int, err error) {
	a, ok := v.([]any)
	if !ok || len(a) < 2 {
		return Reply{}, nil, 0, redisreply.Unexpected("script reply", v)
	}
	switch code, _ := a[0].(int64); code {
	case MultiAcquireAcquired:
		ms, ok := a[1].(int64)
		if !ok || len(a) < 3 {
			return Reply{}, nil, 0, redisreply.Unexpected("script reply", v)
		}
		fences = make([]int64, 0, len(a)-2)
		for _, f := range a[2:] {
			n, err := fenceOf(f)
			if err != nil {
				return Reply{}, nil, 0, redisreply.Unexpected("script reply", v)
			}
			fences = append(fences, n)
		}
		return Reply{Code: code, NowMS: ms, Fence: fences[0], Acked: -1}, fences, 0, nil
	case MultiAcquireRefused:
		rest, i, ok := withIndex(v)
		if !ok {
			return Reply{}, nil, 0, redisreply.Unexpected("script reply", v)
		}
		r, err := decodeSemAcquire(rest)
		if err == nil && r.Code != MultiAcquireRefused {
			err = redisreply.Unexpected("script reply", v)
		}
		return r, nil, i, err
	}
	return Reply{}, nil, 0, redisreply.Unexpected("script reply", v)
}

// DecodeMultiRenew reads multi_renew.lua's replies, as DecodeRenew, with
// the place of the key at fault.
func DecodeMultiRenew(v any) (Reply, int, error) {
	return decodeIndexed(v, RenewRenewed, multiCodes["multi_renew.lua"], decode)
}

// DecodeMultiRelease reads multi_release.lua's replies, as DecodeRelease,
// with the place of the key at fault.
func DecodeMultiRelease(v any) (Reply, int, error) {
	a, ok := v.([]any)
	if ok && len(a) > 0 {
		switch code, _ := a[0].(int64); code {
		case ReleaseReleased, ReleaseHoldsLeft, ReleaseNotWoken:
			r, err := wakeRefused(v, ReleaseNotWoken)
			r, err = known(multiCodes["multi_release.lua"], r, err, v)
			return r, 0, err
		}
	}
	return decodeIndexed(v, -1, multiCodes["multi_release.lua"], decode)
}

// decodeIndexed reads a {code, i, ...} reply with dec, or, for the code
// plain, a reply without a place.
func decodeIndexed(v any, plain int64, codes map[int64]string, dec func(any) (Reply, error)) (Reply, int, error) {
	a, ok := v.([]any)
	if !ok || len(a) == 0 {
		return Reply{}, 0, redisreply.Unexpected("script reply", v)
	}
	if code, _ := a[0].(int64); code == plain {
		r, err := dec(v)
		r, err = known(codes, r, err, v)
		return r, 0, err
	}
	rest, i, ok := withIndex(v)
	if !ok {
		return Reply{}, 0, redisreply.Unexpected("script reply", v)
	}
	r, err := dec(rest)
	r, err = known(codes, r, err, v)
	return r, i, err
}
