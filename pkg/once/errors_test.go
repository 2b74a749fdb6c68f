package once_test

import (
	"testing"

	"github.com/lockctl/lockctl/internal/testkit/errmodel"
	"github.com/lockctl/lockctl/pkg/once"
)

// TestErrorModel checks the package doc's Errors table: every sentinel and
// error type is in it, each type matches exactly its sentinels, and every
// message starts with "once: ".
func TestErrorModel(t *testing.T) {
	rec := once.Record{Key: "once:k", Owner: "alice@a:1", State: once.StateDone}
	running := rec
	running.State = once.StateRunning
	none := once.Record{Key: "once:k", State: "none"}
	errmodel.Check(t, ".", "once: ", map[string]error{
		"ErrInProgress": once.ErrInProgress, "ErrDone": once.ErrDone, "ErrFingerprint": once.ErrFingerprint,
		"ErrNotOwner": once.ErrNotOwner, "ErrLost": once.ErrLost, "ErrLate": once.ErrLate,
		"ErrUnknown": once.ErrUnknown, "ErrNotUnknown": once.ErrNotUnknown, "ErrNotFound": once.ErrNotFound,
		"ErrWrongType": once.ErrWrongType, "ErrInvalid": once.ErrInvalid,
	}, []errmodel.Case{
		{Type: "*InProgressError", Err: &once.InProgressError{Record: running}},
		{Type: "*DoneError", Err: &once.DoneError{Record: rec}},
		{Type: "*UnknownError", Err: &once.UnknownError{Record: rec}},
		{Type: "*NotUnknownError", Err: &once.NotUnknownError{Record: rec}},
		{Type: "*NotUnknownError", Err: &once.NotUnknownError{Record: none}},
		{Type: "*NotUnknownError", Err: &once.NotUnknownError{Record: running}, Also: []string{"ErrInProgress"}},
		{Type: "*FingerprintError", Err: &once.FingerprintError{Key: "once:k", Recorded: "a", Given: "b", Record: rec}},
		{Type: "*NotOwnerError", Err: &once.NotOwnerError{Record: running}},
		{Type: "*WrongTypeError", Err: &once.WrongTypeError{Key: "once:k", Msg: "WRONGTYPE"}},
	})
}
