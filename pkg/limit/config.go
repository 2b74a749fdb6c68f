package limit

import (
	"fmt"
	"strconv"
	"strings"
)

// Config is what a key's state is written under, and stored with it: a
// call under another one is refused (*ConfigError), so that one
// misconfigured caller can neither raise nor lower everyone's limit.
// Limiter.Reset replaces it on purpose. It lives as long as the state: a
// key idle long enough to be forgotten (Result.ResetAfter) takes the next
// caller's.
type Config struct {
	Algorithm Algorithm
	Rate      Rate
	// Burst is the effective burst (the rate's N unless set); the window
	// algorithms' is always N.
	Burst int64
}

// String is the stored form, which the scripts compare verbatim: "gcra
// 10/1s burst 10", "sliding-log 100/1m". Rate.String is canonical, so one
// configuration has one form.
func (c Config) String() string {
	s := string(c.Algorithm) + " " + c.Rate.String()
	if c.Algorithm == GCRA || c.Algorithm == TokenBucket {
		s += " burst " + strconv.FormatInt(c.Burst, 10)
	}
	return s
}

// parseConfig reads Config.String's form back; ok is false for anything
// else (a value lockctl did not write).
func parseConfig(s string) (Config, bool) {
	f := strings.Fields(s)
	if len(f) != 2 && len(f) != 4 {
		return Config{}, false
	}
	algo, err := ParseAlgorithm(f[0])
	if err != nil || f[0] == "" {
		return Config{}, false
	}
	rate, err := ParseRate(f[1])
	if err != nil {
		return Config{}, false
	}
	c := Config{Algorithm: algo, Rate: rate, Burst: rate.Limit}
	if len(f) == 4 {
		if f[2] != "burst" {
			return Config{}, false
		}
		if c.Burst, err = strconv.ParseInt(f[3], 10, 64); err != nil || c.Burst < 1 {
			return Config{}, false
		}
	}
	if c.String() != s {
		return Config{}, false
	}
	return c, true
}

// ConfigError is the refusal of a call under Want on Key, whose state was
// written under Stored (another algorithm, rate or burst). It matches
// ErrInvalid: the caller's configuration disagrees with the one every other
// caller of the key uses, which no retry fixes.
type ConfigError struct {
	Key          string
	Stored, Want Config
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("limit: %s is limited as %s, not %s", e.Key, e.Stored, e.Want)
}

// Is makes a *ConfigError match ErrInvalid.
func (e *ConfigError) Is(target error) bool { return target == ErrInvalid }
