package cmd

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// durationValue is a pflag.Value for durations with lockctl's rules: Go
// syntax (300ms, 30s, 5m, 1h30m), a bare number meaning seconds where
// bareSeconds is set, nothing below the millisecond Redis resolves, and zero
// only where it means something (-w 0 = -n).
type durationValue struct {
	d           *time.Duration
	allowZero   bool
	bareSeconds bool
	set         bool // set by the command line or a setting (Changed is the command line's alone)
}

func newDuration(p *time.Duration, def time.Duration, allowZero, bareSeconds bool) *durationValue {
	*p = def
	return &durationValue{d: p, allowZero: allowZero, bareSeconds: bareSeconds}
}

func (v *durationValue) String() string {
	if *v.d == 0 {
		return "0s"
	}
	return v.d.String()
}
func (v *durationValue) Type() string { return "duration" }

func (v *durationValue) Set(s string) error {
	d, err := parseDuration(s, v.allowZero, v.bareSeconds)
	if err != nil {
		return err
	}
	*v.d = d
	v.set = true
	return nil
}

var errDurationHint = "use a number with a unit: 500ms, 30s, 5m, 2h (days: 24h)"

func parseDuration(s string, allowZero, bareSeconds bool) (time.Duration, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty duration; " + errDurationHint)
	}
	var d time.Duration
	// Bare numbers are decimal only: ParseFloat alone would also take 1e3,
	// 0x1p4, Inf and NaN, and NaN or an overflow converts to a negative
	// duration.
	n, err := strconv.ParseFloat(s, 64)
	bare := (err == nil || errors.Is(err, strconv.ErrRange)) && isDecimal(s)
	switch {
	case bare && bareSeconds:
		if math.Abs(n)*float64(time.Second) >= math.MaxInt64 {
			return 0, fmt.Errorf("%q is too long; %s", s, errDurationHint)
		}
		d = time.Duration(n * float64(time.Second))
	case bare && n == 0:
		d = 0
	default:
		d, err = time.ParseDuration(s)
		if err != nil {
			if strings.HasSuffix(s, "d") {
				return 0, fmt.Errorf("%q: days are not a unit; %s", s, errDurationHint)
			}
			return 0, fmt.Errorf("%q is not a duration; %s", s, errDurationHint)
		}
	}
	switch {
	case d < 0:
		return 0, fmt.Errorf("%q is negative; %s", s, errDurationHint)
	case d == 0 && !allowZero:
		return 0, fmt.Errorf("%q: must be more than zero; %s", s, errDurationHint)
	case d > 0 && d < time.Millisecond:
		return 0, fmt.Errorf("%q is below Redis's resolution of 1ms", s)
	}
	return d, nil
}

// isDecimal reports whether s is digits with an optional sign and fraction.
func isDecimal(s string) bool {
	if len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	digits := 0
	dot := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && !dot:
			dot = true
		default:
			return false
		}
	}
	return digits > 0
}

// replicasValue is --wait-replicas N[:D].
type replicasValue struct {
	n       *int
	timeout *time.Duration
}

func (v *replicasValue) Type() string { return "N[:D]" }
func (v *replicasValue) String() string {
	if *v.n == 0 {
		return ""
	}
	return fmt.Sprintf("%d:%s", *v.n, *v.timeout)
}

func (v *replicasValue) Set(s string) error {
	if s == "" || s == "off" || s == "0" {
		*v.n = 0
		return nil
	}
	num, dur, hasDur := strings.Cut(s, ":")
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 {
		return fmt.Errorf("%q: want N or N:D, e.g. 1 or 1:500ms", s)
	}
	*v.n = n
	*v.timeout = time.Second
	if hasDur {
		d, err := parseDuration(dur, false, false)
		if err != nil {
			return err
		}
		*v.timeout = d
	}
	return nil
}

// enumValue accepts one of a fixed set of words.
type enumValue struct {
	p       *string
	allowed []string
	// name stands for the value in the help when the words would make
	// the flag's column too wide (the usage lists them then).
	name string
}

func newEnum(p *string, def string, allowed ...string) *enumValue {
	*p = def
	return &enumValue{p: p, allowed: allowed}
}

// named makes the help show the value as name instead of the words.
func (v *enumValue) named(name string) *enumValue {
	v.name = name
	return v
}

func (v *enumValue) String() string { return *v.p }

func (v *enumValue) Type() string {
	if v.name != "" {
		return v.name
	}
	return strings.Join(v.allowed, "|")
}
func (v *enumValue) Set(s string) error {
	for _, a := range v.allowed {
		if s == a {
			*v.p = s
			return nil
		}
	}
	return fmt.Errorf("%q: want one of %s", s, strings.Join(v.allowed, ", "))
}

// exitCodeValue is -E N: an exit status a shell can see, 0..255. A larger N
// would wrap modulo 256 (256 is 0, a refusal reported as success), and a
// negative one would too, so both are refused as flock(1) refuses them.
type exitCodeValue struct{ p *int }

func newExitCode(p *int, def int) *exitCodeValue {
	*p = def
	return &exitCodeValue{p: p}
}

func (v *exitCodeValue) String() string { return strconv.Itoa(*v.p) }
func (v *exitCodeValue) Type() string   { return "N" }
func (v *exitCodeValue) Set(s string) error {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	if err != nil || n < 0 || n > 255 {
		return fmt.Errorf("%q: an exit code is a number from 0 to 255", s)
	}
	*v.p = n
	return nil
}

// boolSetting is a boolean flag read by parseBool, so that the command
// line takes what the environment and the config file take
// (--no-events=yes) and refuses the rest alike.
type boolSetting struct{ pflag.Value }

func (b boolSetting) Set(s string) error {
	v, err := parseBool(s)
	if err != nil {
		return err
	}
	return b.Value.Set(strconv.FormatBool(v))
}

// IsBoolFlag: a boolean flag needs no value (--verbose).
func (b boolSetting) IsBoolFlag() bool { return true }

// boolsByOneRule makes every boolean flag of the tree a boolSetting.
func boolsByOneRule(c *cobra.Command) {
	wrap := func(fl *pflag.Flag) {
		if _, done := fl.Value.(boolSetting); !done && fl.Value.Type() == "bool" {
			fl.Value = boolSetting{fl.Value}
		}
	}
	c.Flags().VisitAll(wrap)
	c.PersistentFlags().VisitAll(wrap)
	for _, sub := range c.Commands() {
		boolsByOneRule(sub)
	}
}
