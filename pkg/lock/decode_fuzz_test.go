package lock

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/lockctl/lockctl/internal/lib/lockwire"
)

// replyFrom builds a script reply of the shape go-redis hands back (int64,
// string, nil, nested []any, a reply error inside an array) from fuzz bytes.
func replyFrom(b []byte, depth int) (any, []byte) {
	if len(b) == 0 {
		return nil, b
	}
	op, b := b[0], b[1:]
	switch op % 5 {
	case 0: // a length byte (0..8), then that many little-endian bytes, sign-extended
		if len(b) == 0 {
			return int64(0), b
		}
		var buf [8]byte
		n := copy(buf[8-min(int(b[0]%9), len(b)-1):], b[1:])
		return int64(binary.LittleEndian.Uint64(buf[:])) >> (8 * (8 - n)), b[1+n:]
	case 1:
		if len(b) == 0 {
			return "", b
		}
		n := min(int(b[0]), len(b)-1)
		return string(b[1 : 1+n]), b[1+n:]
	case 2:
		if depth > 3 || len(b) == 0 {
			return []any{}, b
		}
		n := int(b[0] % 7)
		b = b[1:]
		a := make([]any, 0, n)
		for i := 0; i < n; i++ {
			var v any
			v, b = replyFrom(b, depth+1)
			a = append(a, v)
		}
		return a, b
	case 3:
		return nil, b
	default:
		return errors.New("ERR planted"), b
	}
}

func addReply(f *testing.F, parts ...[]byte) {
	var b []byte
	for _, p := range parts {
		b = append(b, p...)
	}
	f.Add(b)
}

func FuzzDecode(f *testing.F) {
	i := func(n byte) []byte { return []byte{0, 1, n} }
	s := func(v string) []byte { return append([]byte{1, byte(len(v))}, v...) }
	arr := func(n byte) []byte { return []byte{2, n} }
	neg := []byte{0, 8, 0xfb, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff} // -5
	val := `{"token":"ab","fence":7,"owner":"ci@h:1","acquired_ms":1767225600000}`
	addReply(f, arr(3), i(1), i(7), i(9))                                // acquired
	addReply(f, arr(3), i(2), s(val), i(9))                              // same token
	addReply(f, arr(4), i(0), s("string"), s(val), i(200))               // held
	addReply(f, arr(4), i(0), s("string"), s("foreign"), []byte{0xff})   // held, no TTL
	addReply(f, arr(4), i(0), s("hash"), arr(2), s("u:1"), s("2"), i(5)) // Redisson
	addReply(f, arr(2), i(0), s("list"))                                 // wrong type
	addReply(f, arr(5), i(0), s("semaphore"), s(val), i(100), i(3))      // semaphore full
	addReply(f, arr(5), i(0), s("semaphore"), s(val), neg, i(3))         // semaphore full, negative pttl
	addReply(f, arr(3), i(0), s("none"), i(2))                           // FIFO: earlier waiters
	addReply(f, arr(5), i(0), s("string"), s(val), i(100), i(1))         // FIFO: held, 1 ahead
	addReply(f, arr(1), i(3))
	addReply(f, arr(0))
	addReply(f, s("x"))
	addReply(f, arr(4), i(0), s("hash"), arr(3), s("a"), s("b"), s("c"), i(1))
	addReply(f, arr(4), i(0), s("string"), []byte{4}, i(1))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, _ := replyFrom(b, 0)
		for name, dec := range map[string]func(any) (reply, error){
			"release": lockwire.DecodeRelease, "renew": lockwire.DecodeRenew, "acquire": lockwire.DecodeAcquire,
			"semAcquire": lockwire.DecodeSemAcquire, "fifoAcquire": lockwire.DecodeFIFOAcquire, "inspect": lockwire.DecodeInspect,
			"reenter": lockwire.DecodeReenter,
		} {
			r, err := dec(v)
			if err != nil {
				continue
			}
			// Whatever decoded must describe a holder or say the key is
			// not a lock: never panic on the way to the caller's error.
			h, err := holderOf(r, "lock:fuzz")
			if err != nil {
				if !errors.Is(err, ErrWrongType) {
					t.Fatalf("%s(%#v).holder: %v, want ErrWrongType", name, v, err)
				}
				continue
			}
			if h.Key != "lock:fuzz" {
				t.Fatalf("%s(%#v).holder = %+v", name, v, h)
			}
			if h.TTL < -1 {
				t.Fatalf("%s(%#v).holder TTL %v: a negative TTL is -1 (none)", name, v, h.TTL)
			}
			_ = newHeldError(ErrNotOwner, h).Error()
		}
	})
}
