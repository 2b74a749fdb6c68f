// Package limit decides rate limits in Redis: four algorithms behind one
// interface, each decision one Lua script in one round trip, timed by the
// server's clock (TIME inside the script) so that skewed client clocks never
// over-admit. Every key a script writes carries a TTL, set in the same
// script as the write (the sliding log's, by the write that opened its
// current window-long stretch, to outlast every entry of it).
//
// # Errors
//
// Callers branch with errors.Is on the sentinels and read the details with
// errors.As on the error types. Each type matches the sentinel of its row,
// no other; every message starts with "limit: ".
//
//	sentinel         when                                          type for details
//	ErrInvalid       unusable rate, burst, cost, key or algorithm; *ConfigError
//	                 the key is limited under another configuration
//	ErrNeverAllowed  a cost above the burst: no wait admits it     *CostError
//	ErrLimited       a call refused for now (Result.Err)           *LimitedError
//	ErrWrongType     the key holds a value this algorithm did not  *WrongTypeError
//	                 write
//
// Network and server errors are returned wrapped, as go-redis gave them.
package limit

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/lockctl/lockctl/internal/lib/luascript"
	"github.com/lockctl/lockctl/internal/lib/redisreply"
	"github.com/redis/go-redis/v9"
)

// DefaultPrefix starts every rate-limit key: KEY "user:42" is "limit:user:42".
const DefaultPrefix = "limit:"

// Algorithm names a limiting algorithm.
type Algorithm string

const (
	// GCRA keeps one string per key (O(1) memory) and spaces calls one
	// every PERIOD/N after an initial burst. The default.
	GCRA Algorithm = "gcra"
	// SlidingLog keeps one sorted-set member per admitted call: exact (never
	// more than N in any window of PERIOD), memory proportional to N.
	SlidingLog Algorithm = "sliding-log"
	// SlidingWindow keeps two counters and weights the previous window:
	// approximate, O(1) memory.
	SlidingWindow Algorithm = "sliding-window"
	// TokenBucket keeps one string: a bucket of Burst tokens refilled at N per PERIOD.
	TokenBucket Algorithm = "token-bucket"
)

// Algorithms lists every algorithm, the default first.
var Algorithms = []Algorithm{GCRA, SlidingLog, SlidingWindow, TokenBucket}

// ParseAlgorithm accepts an algorithm name; "" is the default.
func ParseAlgorithm(s string) (Algorithm, error) {
	if s == "" {
		return GCRA, nil
	}
	for _, a := range Algorithms {
		if string(a) == s {
			return a, nil
		}
	}
	names := make([]string, len(Algorithms))
	for i, a := range Algorithms {
		names[i] = string(a)
	}
	return "", fmt.Errorf("%w: unknown algorithm %q: want one of %s", ErrInvalid, s, strings.Join(names, ", "))
}

// Options configure a Limiter; nil means all defaults.
type Options struct {
	// Algorithm defaults to GCRA.
	Algorithm Algorithm
	// Burst is how many calls an idle key admits at once (GCRA) or the
	// bucket capacity (TokenBucket). 0 means the rate's N. The window
	// algorithms admit exactly N per window and refuse any other burst.
	Burst int64
	// Prefix defaults to DefaultPrefix.
	Prefix string
}

func (o *Options) algorithm() Algorithm {
	if o == nil || o.Algorithm == "" {
		return GCRA
	}
	return o.Algorithm
}

func (o *Options) prefix() string {
	if o == nil || o.Prefix == "" {
		return DefaultPrefix
	}
	return o.Prefix
}

func (o *Options) burst() int64 {
	if o == nil {
		return 0
	}
	return o.Burst
}

// Result is one decision. Durations are rounded up to whole milliseconds:
// a caller that waits RetryAfter is never early.
type Result struct {
	Key        string // the Redis key
	Allowed    bool
	Limit      int64         // the most a key admits at once: the burst, N for the window algorithms
	Remaining  int64         // calls of cost 1 that would be admitted right now
	RetryAfter time.Duration // 0 when allowed; else when the same cost would be admitted
	ResetAfter time.Duration // when the key is back to Remaining == Limit
}

// Err is nil when the call was allowed and a *LimitedError otherwise.
func (r Result) Err() error {
	if r.Allowed {
		return nil
	}
	return &LimitedError{Result: r}
}

// Limiter decides whether a call of a given cost on a key is admitted,
// consuming the cost when it is. One script, one round trip.
//
// The key's state records the Config it was written under: a call under
// another one fails with a *ConfigError (ErrInvalid) and changes
// nothing.
type Limiter interface {
	Allow(ctx context.Context, key string, cost int64) (Result, error)
	// Reset forgets key's state and the configuration stored with it,
	// then decides a call of cost under the Limiter's configuration, in
	// one step: the deliberate way to change a key's rate, algorithm or
	// burst. The key starts afresh, so the call is admitted.
	Reset(ctx context.Context, key string, cost int64) (Result, error)
	// Config is the configuration the Limiter writes under.
	Config() Config
	// Key is the Redis key used for key (the prefix applied).
	Key(key string) string
}

// maxExact bounds every intermediate value of the scripts: doubles hold
// integers exactly up to 2^53, and the scripts add at most two bounded terms.
const maxExact = 1 << 51

type limiter struct {
	client redis.Scripter
	script *luascript.Script
	prefix string
	burst  int64 // the most cost a single call may have
	args   []any // the algorithm's arguments; the cost, the configuration and the reset flag follow
	// costUnit is what one unit of cost is in the script's units (p for
	// GCRA and the token bucket, whose scripts take cost*p).
	costUnit int64
	// The reply carries remaining in the script's units and times in its
	// ticks: remaining is the first divided by remDiv (rounded down), a
	// time in microseconds the second divided by tickDiv (rounded up),
	// which the script no longer spends its time on.
	remDiv, tickDiv int64
	// window and unit are the window algorithms' arguments (the sliding
	// log's window in microseconds; the sliding window's in units of unit
	// microseconds), which their short replies are read with.
	window, unit int64
	config       Config
	cfg          string // config.String(), the form the scripts compare
	// allow1 is the whole argument list of Allow with cost 1, the commonest
	// call, built once: go-redis copies it into the command, so the calls
	// of many goroutines share it.
	allow1 []any
	// maxRetry bounds the RetryAfter any state this rate writes can give:
	// a whole period and the time to earn a whole burst back (a sliding
	// window's previous window fades over a second period). A longer one
	// comes from a state someone else wrote (a timestamp far ahead), and
	// Wait would sleep on it for ever.
	maxRetry time.Duration
}

// New builds a Limiter for rate on client. It checks the rate, burst and
// algorithm, and that the scripts' integer arithmetic stays exact.
func New(client redis.Scripter, rate Rate, opts *Options) (Limiter, error) {
	if client == nil {
		return nil, fmt.Errorf("%w: nil client", ErrInvalid)
	}
	if err := rate.validate(); err != nil {
		return nil, fmt.Errorf("%w: rate %s: %v", ErrInvalid, rate, err)
	}
	algo := opts.algorithm()
	burst := opts.burst()
	if burst < 0 {
		return nil, fmt.Errorf("%w: burst %d is negative", ErrInvalid, burst)
	}
	if burst == 0 {
		burst = rate.Limit
	}
	l := &limiter{client: client, prefix: opts.prefix(), burst: burst, config: Config{Algorithm: algo, Rate: rate, Burst: burst}}
	// Slack for rounding and the clock's step between calls.
	l.maxRetry = rate.Period + time.Duration(float64(rate.Period)*float64(burst)/float64(rate.Limit)) + time.Second
	periodUS := int64(rate.Period / time.Microsecond)
	tooFine := fmt.Errorf("%w: rate %s with burst %d is too fine for exact arithmetic: use a smaller N, burst or period", ErrInvalid, rate, burst)
	switch algo {
	case GCRA, TokenBucket:
		// The emission interval PERIOD/N microseconds is p/d exactly.
		g := gcd(periodUS, rate.Limit)
		p, d := periodUS/g, rate.Limit/g
		if burst > maxExact/p || d > maxExact/1000 {
			return nil, tooFine
		}
		l.script = scripts()[algo]
		l.args = []any{d, burst * p}
		l.costUnit, l.remDiv, l.tickDiv = p, p, d
	case SlidingLog:
		if burst != rate.Limit {
			return nil, fmt.Errorf("%w: %s admits exactly N per window; burst %d differs from %d", ErrInvalid, algo, burst, rate.Limit)
		}
		if periodUS > maxExact/2 {
			return nil, tooFine
		}
		l.script = scripts()[algo]
		l.args = []any{periodUS, rate.Limit}
		l.costUnit, l.remDiv, l.tickDiv = 1, 1, 1
		l.window = periodUS
	case SlidingWindow:
		if burst != rate.Limit {
			return nil, fmt.Errorf("%w: %s admits N per window; burst %d differs from %d", ErrInvalid, algo, burst, rate.Limit)
		}
		// Microseconds when the products fit, else milliseconds.
		window, unit := periodUS, int64(1)
		if rate.Limit > maxExact/window {
			if periodUS%1000 != 0 || rate.Limit > maxExact/(periodUS/1000) {
				return nil, tooFine
			}
			window, unit = periodUS/1000, 1000
		}
		l.script = scripts()[algo]
		l.args = []any{window, unit, rate.Limit}
		l.costUnit, l.remDiv, l.tickDiv = 1, window, 1
		l.window, l.unit = window, unit
	default:
		_, err := ParseAlgorithm(string(algo))
		return nil, err
	}
	l.cfg = l.config.String()
	l.allow1 = l.arguments(1, false)
	return l, nil
}

// arguments are the script's ARGV for a call of cost: the algorithm's
// arguments, the cost, the configuration and the reset flag.
func (l *limiter) arguments(cost int64, reset bool) []any {
	flag := "0"
	if reset {
		flag = "1"
	}
	return append(append(make([]any, 0, len(l.args)+3), l.args...), cost*l.costUnit, l.cfg, flag)
}

func (l *limiter) Key(key string) string { return l.prefix + key }

func (l *limiter) Config() Config { return l.config }

func (l *limiter) Allow(ctx context.Context, key string, cost int64) (Result, error) {
	return l.decide(ctx, key, cost, false)
}

func (l *limiter) Reset(ctx context.Context, key string, cost int64) (Result, error) {
	return l.decide(ctx, key, cost, true)
}

func (l *limiter) decide(ctx context.Context, key string, cost int64, reset bool) (Result, error) {
	if key == "" {
		return Result{}, fmt.Errorf("%w: empty key", ErrInvalid)
	}
	if cost < 1 {
		return Result{}, fmt.Errorf("%w: cost %d is not positive", ErrInvalid, cost)
	}
	if cost > l.burst {
		return Result{}, &CostError{Cost: cost, Burst: l.burst}
	}
	k := l.prefix + key
	args := l.allow1
	if cost != 1 || reset {
		args = l.arguments(cost, reset)
	}
	val, err := l.script.Run(ctx, l.client, []string{k}, args...).Result()
	if err != nil {
		if redisreply.IsData(err) {
			return Result{}, &WrongTypeError{Key: k, Msg: err.Error()}
		}
		return Result{}, fmt.Errorf("limit: %s: %w", k, err)
	}
	var vals [4]int64
	switch v := val.(type) {
	case int64:
		var ok bool
		if vals, ok = l.short(v, cost); !ok {
			return Result{}, &WrongTypeError{Key: k, Msg: fmt.Sprintf("it holds a state no call of this rate writes (the script read %d from it)", v)}
		}
	case []any:
		if vals, err = l.long(k, v); err != nil {
			return Result{}, err
		}
	default:
		return Result{}, fmt.Errorf("limit: %s: %w", k, redisreply.Unexpected("script reply", val))
	}
	r := Result{
		Key:        k,
		Allowed:    vals[0] == 1,
		Limit:      l.burst,
		Remaining:  vals[1] / l.remDiv,
		RetryAfter: ceilMS(ceilDiv(vals[2], l.tickDiv)),
		ResetAfter: ceilMS(ceilDiv(vals[3], l.tickDiv)),
	}
	if r.RetryAfter > l.maxRetry || r.RetryAfter < 0 {
		return Result{}, &WrongTypeError{Key: k, Msg: fmt.Sprintf("it asks to retry after %s, longer than any call of this rate waits (%s): someone else wrote it", r.RetryAfter, l.maxRetry)}
	}
	return r, nil
}

// short reads a script's reply of one integer, its common decisions' (each
// script says what it is), into the form of the long reply: {allowed,
// remaining, retry after, reset after} in the script's units. Returning one
// integer spares the script building a table and Redis converting it.
func (l *limiter) short(n, cost int64) ([4]int64, bool) {
	if n > 1<<53 || n < -1<<53 {
		// Beyond what the scripts compute exactly: a state someone else
		// wrote (a time far ahead), whose arithmetic would overflow here.
		return [4]int64{}, false
	}
	switch l.config.Algorithm {
	case GCRA:
		// n: the new TAT's ticks ahead when admitted, else -1 - those the
		// old one lay ahead.
		capacity, inc := l.burst*l.costUnit, cost*l.costUnit
		if n >= 0 {
			return [4]int64{1, capacity - n, 0, n}, true
		}
		ahead := -1 - n
		return [4]int64{0, capacity - ahead, ahead + inc - capacity, ahead}, true
	case TokenBucket:
		// n: the tokens left when admitted, else -1 - the tokens there are.
		full, need := l.burst*l.costUnit, cost*l.costUnit
		if n >= 0 {
			return [4]int64{1, n, 0, full - n}, true
		}
		tokens := -1 - n
		return [4]int64{0, tokens, need - tokens, full - tokens}, true
	case SlidingLog:
		// n: the entries in the window before this call's, admitted at now.
		if n >= 0 {
			return [4]int64{1, l.burst - n - cost, 0, l.window + cost - 1}, true
		}
	case SlidingWindow:
		// n: the units until the reset times N+1, plus the calls remaining.
		if n >= 0 {
			per := l.burst + 1
			return [4]int64{1, n % per * l.window, 0, n / per * l.unit}, true
		}
	}
	return [4]int64{}, false
}

// long reads a script's reply of a table: {allowed, remaining, retry
// after, reset after}, or {2, stored configuration}.
func (l *limiter) long(k string, reply []any) ([4]int64, error) {
	var vals [4]int64
	if len(reply) == 2 {
		// {2, stored configuration}: written under another one.
		stored, _ := reply[1].(string)
		c, ok := parseConfig(stored)
		if !ok {
			return vals, &WrongTypeError{Key: k, Msg: fmt.Sprintf("it records a configuration lockctl does not write: %q", stored)}
		}
		return vals, &ConfigError{Key: k, Stored: c, Want: l.config}
	}
	for i, v := range reply {
		n, ok := v.(int64)
		if !ok {
			return vals, fmt.Errorf("limit: %s: unexpected script reply %v", k, reply)
		}
		if i < len(vals) {
			vals[i] = n
		}
	}
	if len(reply) != len(vals) {
		return vals, fmt.Errorf("limit: %s: %w", k, redisreply.Unexpected("script reply", reply))
	}
	return vals, nil
}

// Wait calls l.Allow until the call is admitted, sleeping RetryAfter between
// attempts, and returns the admitting decision. It gives up with ctx's error
// (and the last refusal) when ctx ends first; a cost that can never be
// admitted fails at once.
func Wait(ctx context.Context, l Limiter, key string, cost int64) (Result, error) {
	for {
		r, err := l.Allow(ctx, key, cost)
		if err != nil || r.Allowed {
			return r, err
		}
		t := time.NewTimer(r.RetryAfter)
		select {
		case <-ctx.Done():
			t.Stop()
			return r, errors.Join(ctx.Err(), r.Err())
		case <-t.C:
		}
	}
}

// ceilDiv is a/b rounded up, for b > 0 (toward zero below 0, as the
// scripts' own division did).
func ceilDiv(a, b int64) int64 {
	q := a / b
	if a%b > 0 {
		q++
	}
	return q
}

func gcd(a, b int64) int64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
