package limit_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/pkg/limit"
)

func TestParseRate(t *testing.T) {
	good := map[string]limit.Rate{
		"100/1m":   {100, time.Minute},
		"10/s":     {10, time.Second},
		"5000/1h":  {5000, time.Hour},
		"3/500ms":  {3, 500 * time.Millisecond},
		"1/ms":     {1, time.Millisecond},
		"7/m":      {7, time.Minute},
		"2/h":      {2, time.Hour},
		"60/1m30s": {60, 90 * time.Second},
		" 5 / 2s ": {5, 2 * time.Second}, //nolint:gocritic // the spaces are what this case tests
	}
	for in, want := range good {
		got, err := limit.ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	bad := []string{"", "100", "/1m", "100/", "0/1m", "-1/1m", "1.5/s", "x/s", "10/0s", "10/-1s",
		"10/fortnight", "10/1", "10/1ns", "10/1500ns", "10/.5s", "10/s/s", "ten/s", "99999999999999999999/s"}
	for _, in := range bad {
		_, err := limit.ParseRate(in)
		if !errors.Is(err, limit.ErrInvalid) {
			t.Errorf("ParseRate(%q) error = %v; want ErrInvalid", in, err)
			continue
		}
		if !strings.Contains(err.Error(), "100/1m, 10/s, 5000/1h, 3/500ms") {
			t.Errorf("ParseRate(%q) error %q does not say what is accepted", in, err)
		}
	}
}

func TestRateString(t *testing.T) {
	for in, want := range map[string]string{"100/1m": "100/1m", "10/s": "10/1s", "3/500ms": "3/500ms", "5/90s": "5/90s", "1/1500us": "1/1500us"} {
		r, err := limit.ParseRate(in)
		if err != nil {
			t.Fatal(err)
		}
		if r.String() != want {
			t.Errorf("%q.String() = %q; want %q", in, r.String(), want)
		}
		if back, err := limit.ParseRate(r.String()); err != nil || back != r {
			t.Errorf("ParseRate(%q) = %v, %v; want %v", r.String(), back, err, r)
		}
	}
}

func TestParseAlgorithm(t *testing.T) {
	if a, err := limit.ParseAlgorithm(""); err != nil || a != limit.GCRA {
		t.Fatalf("default algorithm = %q, %v", a, err)
	}
	for _, a := range limit.Algorithms {
		if got, err := limit.ParseAlgorithm(string(a)); err != nil || got != a {
			t.Errorf("ParseAlgorithm(%q) = %q, %v", a, got, err)
		}
	}
	if _, err := limit.ParseAlgorithm("leaky"); !errors.Is(err, limit.ErrInvalid) || !strings.Contains(err.Error(), "sliding-window") {
		t.Errorf("ParseAlgorithm(leaky) = %v", err)
	}
}
