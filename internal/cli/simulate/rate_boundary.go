package simulate

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/pkg/limit"
)

func addRateBoundary(register func(*scenario)) {
	register(&scenario{
		info: Info{
			Name:  "rate-boundary",
			Title: "a fixed window admits twice the limit across its boundary",
			Summary: "The limit is 5 calls per 10 s. A fixed window (INCR a per-window counter, EXPIRE it) resets at each boundary: " +
				"5 calls just before it and 5 just after all pass, 10 in under a second. A sliding log and GCRA count the last 10 s wherever the boundary falls.",
		},
		lanes: []string{"A", "B"},
		variants: []variant{
			{name: "fixed window: INCR plus EXPIRE", technique: "broken", run: rateFixed},
			{name: "sliding log (lockctl limit --algo sliding-log)", technique: "correct", run: rateWith(limit.SlidingLog)},
			{name: "GCRA (lockctl limit, the default)", technique: "correct", run: rateWith(limit.GCRA)},
		},
	})
}

const (
	rateKey    = "api:user-7"
	rateLimit  = 5
	ratePeriod = 10 * time.Second
)

// rateCalls are the calls of every variant: A's burst at the end of the
// first window, B's at the start of the next.
func rateCalls(ctx context.Context, e *env, first string, try func(ctx context.Context) bool) {
	for i := 0; i < 2*rateLimit; i++ {
		actor, t := "A", 9.5+0.1*float64(i)
		if i >= rateLimit {
			actor = "B"
		}
		e.at(ctx, sec(t))
		var ok bool
		e.do(ctx, actor, fmt.Sprintf("call %d", i+1), func(ctx context.Context) { ok = try(ctx) })
		if ok {
			e.admitted = append(e.admitted, e.now)
		}
		switch i {
		case 0:
			e.note("A sends 5 calls in the last half second of a window. " + first)
		case rateLimit:
			e.note("B sends 5 more just after the boundary.")
		}
	}
}

func rateFixed(ctx context.Context, e *env) Verdict {
	n := e.lockNode()
	rateCalls(ctx, e, "Each call counts itself in the current window's key; the first call of a window sets its expiry.", func(ctx context.Context) bool {
		window := int64(e.now / ratePeriod)
		key := n.key("limit:" + rateKey + ":" + strconv.FormatInt(window, 10))
		count, err := n.rdb.Do(ctx, "INCR", key).Int64()
		if err != nil {
			return false
		}
		if count == 1 {
			n.rdb.Do(ctx, "PEXPIRE", key, e.ms(ratePeriod))
		}
		return count <= rateLimit
	})
	return rateVerdict(e)
}

func rateWith(algo limit.Algorithm) func(ctx context.Context, e *env) Verdict {
	return func(ctx context.Context, e *env) Verdict {
		n := e.lockNode()
		l, err := limit.New(n.rdb, limit.Rate{Limit: rateLimit, Period: e.wall(ratePeriod)}, &limit.Options{Algorithm: algo, Prefix: n.key("limit:")})
		if err != nil {
			e.fail(err)
			return Verdict{}
		}
		// Load the script before t=0, as warm does for the lock scripts.
		wctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _ = l.Allow(wctx, "lockctl-simulate-warmup", 1) // only the loading matters
		n.rdb.Del(wctx, l.Key("lockctl-simulate-warmup"))
		cancel()
		first := "One script per call, on the server's clock. The common replies are one number, read with the arguments sent: "
		if algo == limit.GCRA {
			first += "µs the theoretical arrival time now lies ahead when admitted, -1 minus those it lay ahead when refused."
		} else {
			first += "when admitted, the calls already in the window; a refusal is allowed (0), remaining, then µs until a retry and until a full reset."
		}
		rateCalls(ctx, e, first, func(ctx context.Context) bool {
			r, err := l.Allow(ctx, rateKey, 1)
			if err != nil {
				e.fail(err)
				return false
			}
			return r.Allowed
		})
		return rateVerdict(e)
	}
}

// rateVerdict finds the most calls admitted within any one period.
func rateVerdict(e *env) Verdict {
	most, span := 0, time.Duration(0)
	for i := range e.admitted {
		j := i
		for j+1 < len(e.admitted) && e.admitted[j+1]-e.admitted[i] < ratePeriod {
			j++
		}
		if j-i+1 > most {
			most, span = j-i+1, e.admitted[j]-e.admitted[i]
		}
	}
	if most > rateLimit {
		return Verdict{Summary: fmt.Sprintf("admitted %d calls within %s: the limit is %d per %s", most, secs(span), rateLimit, secs(ratePeriod))}
	}
	return Verdict{Safe: true, Summary: fmt.Sprintf("admitted %d of %d calls, never more than %d within %s", len(e.admitted), 2*rateLimit, rateLimit, secs(ratePeriod))}
}
