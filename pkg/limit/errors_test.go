package limit_test

import (
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/errmodel"
	"github.com/lockctl/lockctl/pkg/limit"
)

// TestErrorModel checks the package doc's Errors table: every sentinel and
// error type is in it, each type matches exactly its sentinel, and every
// message starts with "limit: ".
func TestErrorModel(t *testing.T) {
	errmodel.Check(t, ".", "limit: ", map[string]error{
		"ErrInvalid": limit.ErrInvalid, "ErrNeverAllowed": limit.ErrNeverAllowed,
		"ErrLimited": limit.ErrLimited, "ErrWrongType": limit.ErrWrongType,
	}, []errmodel.Case{
		{Type: "*CostError", Err: &limit.CostError{Cost: 5, Burst: 2}},
		{Type: "*LimitedError", Err: &limit.LimitedError{Result: limit.Result{Key: "limit:k"}}},
		{Type: "*ConfigError", Err: &limit.ConfigError{Key: "limit:k"}},
		{Type: "*WrongTypeError", Err: &limit.WrongTypeError{Key: "limit:k", Msg: "WRONGTYPE"}},
	})
}
