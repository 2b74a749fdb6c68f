package limit

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Rate is Limit events per Period.
type Rate struct {
	Limit  int64
	Period time.Duration
}

// rateHelp says what ParseRate accepts; every parse error ends with it.
const rateHelp = "want N/PERIOD with N a positive integer and PERIOD a Go duration or a bare unit (ms, s, m, h), e.g. 100/1m, 10/s, 5000/1h, 3/500ms"

// ParseRate reads "N/PERIOD": "100/1m", "10/s", "5000/1h", "3/500ms". A bare
// unit means one of it. Periods must be whole microseconds because the
// scripts count in microseconds of the server's clock.
func ParseRate(s string) (Rate, error) {
	bad := func(why string) (Rate, error) {
		return Rate{}, fmt.Errorf("%w: rate %q: %s; %s", ErrInvalid, s, why, rateHelp)
	}
	n, per, ok := strings.Cut(strings.TrimSpace(s), "/")
	if !ok {
		return bad("no '/'")
	}
	n, per = strings.TrimSpace(n), strings.TrimSpace(per)
	limit, err := strconv.ParseInt(n, 10, 64)
	if err != nil || limit <= 0 {
		return bad("N is not a positive integer")
	}
	if per == "" {
		return bad("PERIOD is empty")
	}
	if c := per[0]; c < '0' || c > '9' {
		if c == '.' || c == '-' || c == '+' {
			return bad("PERIOD must be positive")
		}
		per = "1" + per
	}
	d, err := time.ParseDuration(per)
	if err != nil {
		return bad("PERIOD is not a duration")
	}
	r := Rate{Limit: limit, Period: d}
	if err := r.validate(); err != nil {
		return bad(err.Error())
	}
	return r, nil
}

func (r Rate) validate() error {
	switch {
	case r.Limit <= 0:
		return fmt.Errorf("limit %d is not positive", r.Limit)
	case r.Period <= 0:
		return fmt.Errorf("period %s is not positive", r.Period)
	case r.Period%time.Microsecond != 0:
		return fmt.Errorf("period %s is not a whole number of microseconds", r.Period)
	}
	return nil
}

// String formats r the way ParseRate reads it, in the largest whole unit.
func (r Rate) String() string {
	p := r.Period
	for _, u := range []struct {
		d    time.Duration
		name string
	}{{time.Hour, "h"}, {time.Minute, "m"}, {time.Second, "s"}, {time.Millisecond, "ms"}, {time.Microsecond, "us"}} {
		if p >= u.d && p%u.d == 0 {
			return fmt.Sprintf("%d/%d%s", r.Limit, p/u.d, u.name)
		}
	}
	return fmt.Sprintf("%d/%s", r.Limit, p)
}
