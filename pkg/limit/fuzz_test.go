package limit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testkit/plant"
	"github.com/lockctl/lockctl/pkg/limit"
	"github.com/redis/go-redis/v9"
)

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"100/1m", "10/s", "5000/1h", "3/500ms", "1/us", "1/1ns", "1/1500ns", "1/1.5s",
		" 5 / 2s ", "0/1s", "-1/s", "1/-1s", "1/+1s", "1/.5s", "9223372036854775807/1h", "9223372036854775808/1h",
		"1/2562047h", "1/2562048h", "1/", "/s", "1", "1//s", "1/s/s", "1/1d", "1/µs", "1/1µs", "1e3/s", "+1/s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		r, err := limit.ParseRate(s)
		if err != nil {
			if !errors.Is(err, limit.ErrInvalid) {
				t.Fatalf("ParseRate(%q): %v does not match ErrInvalid", s, err)
			}
			return
		}
		if r.Limit <= 0 || r.Period <= 0 || r.Period%time.Microsecond != 0 {
			t.Fatalf("ParseRate(%q) = %+v", s, r)
		}
		// String is what messages and JSON show; it must read back.
		back, err := limit.ParseRate(r.String())
		if err != nil || back != r {
			t.Fatalf("ParseRate(%q) = %+v prints %q, which reads back as %+v, %v", s, r, r.String(), back, err)
		}
	})
}

// FuzzPlantedLimit plants foreign, corrupted and wrong-type values at a
// limit key: every algorithm must decide or refuse with a typed error
// (ErrWrongType or a Redis error reply), never panic or leak a parse error.
func FuzzPlantedLimit(f *testing.F) {
	seeds := []plant.Seed{
		{0, "garbage", false}, {0, "1:0", false}, {0, "99999999999999999999:0", false}, {0, "0:99999999999999999999", false},
		{0, "1:2:3", false}, {0, "99999999999999999999:1:1", false}, {0, "-1:0", false}, {0, "x", true},
		{0, "", false}, {0, "\xff\x00", false},
		{1, "tk=1,ts=2", false}, {1, "tk=inf,ts=0", false}, {1, "tk=nan,ts=nan", false}, {1, "tk=x,ts=1", false},
		{1, "tk=1e308,ts=-1e308", false}, {1, "other=1", false}, {1, "tk=5", false},
		{2, "1=a,2=b", false}, {2, "inf=a", false}, {2, "-inf=a,inf=b", false}, {2, "1e300=x", false},
		{3, "x", false}, {4, "x", false}, {5, "f=v", false}, {6, "", false},
	}
	for _, s := range seeds {
		f.Add(s.Typ, s.Payload, s.Huge, int64(1))
		f.Add(s.Typ, s.Payload, s.Huge, int64(3))
	}
	c := srv.Client(f)
	f.Fuzz(func(t *testing.T, typ byte, payload string, huge bool, cost int64) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cost = 1 + abs(cost)%5
		for _, algo := range limit.Algorithms {
			prefix := "limit:fuzz:" + plant.Unique() + ":"
			l, err := limit.New(c, limit.Rate{Limit: 5, Period: time.Second}, &limit.Options{Algorithm: algo, Prefix: prefix})
			if err != nil {
				t.Fatal(err)
			}
			key := l.Key("k")
			size := 0
			if huge {
				size = plant.Huge
			}
			plant.At(ctx, t, c, key, typ, payload, size)
			r, err := l.Allow(ctx, "k", cost)
			c.Del(ctx, key)
			var rerr redis.Error
			switch {
			case err == nil:
				if r.RetryAfter < 0 || r.ResetAfter < 0 || (r.Allowed && r.RetryAfter != 0) {
					t.Fatalf("%s on %q (type %d): %+v", algo, payload, int(typ)%len(plant.Types), r)
				}
			case errors.Is(err, limit.ErrWrongType):
			case errors.As(err, &rerr):
			default:
				t.Fatalf("%s on %q (type %d): %T %v: not a typed error", algo, payload, int(typ)%len(plant.Types), err, err)
			}
		}
	})
}

func abs(n int64) int64 {
	if n < 0 {
		return -(n + 1)
	}
	return n
}
