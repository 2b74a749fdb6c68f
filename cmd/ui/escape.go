package ui

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/charmbracelet/lipgloss"
)

// Escape makes text that came from Redis (lock names, owners, notes, raw
// values, CI URLs, audit reasons) safe to print: anyone who can write to
// Redis chooses those bytes, and printed raw they reach the operator's
// terminal, where an escape sequence can retitle the window, write the
// clipboard (OSC 52), move the cursor over other rows or hide text, and a
// newline or tab forges rows of a listing or columns of its tab-separated
// form. So:
//
//   - \n, \r and \t are shown as those two-character escapes; every other C0
//     control, DEL and invalid UTF-8 byte as \xNN (ESC is \x1b);
//   - C1 controls (U+0080..U+009F, which some terminals obey as CSI, OSC...)
//     and the invisible format characters that reorder or hide text
//     (bidirectional overrides, zero-width marks, U+2028/U+2029) as \uNNNN;
//   - everything else, backslashes included, is kept as is, so ordinary
//     names read and copy unchanged.
//
// The result is one line of printable text. It is for display, not a
// reversible encoding: `-o json` has the exact value.
func Escape(s string) string {
	if plainASCII(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		case hidden(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// hidden reports the runes Escape shows as \uNNNN: C1 controls, format
// characters (Cf: bidi overrides and isolates, zero-width spaces and
// joiners, the BOM) and the line and paragraph separators.
func hidden(r rune) bool {
	return (r >= 0x80 && r <= 0x9f) || unicode.Is(unicode.Cf, r) || r == '\u2028' || r == '\u2029'
}

func plainASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}

// DataCellWidth is the widest a table cell of data from Redis is shown on a
// terminal: enough for owners, notes and CI job URLs; a longer value is cut
// with an ellipsis so that one absurd value cannot push a listing off the
// screen (-o json and the tab-separated rows keep it whole).
const DataCellWidth = 100

// Truncate cuts s to at most w terminal columns, ending in "…" when it cut.
// s must hold no escape sequences (Escape's output).
func Truncate(s string, w int) string {
	if w <= 0 || lipgloss.Width(s) <= w {
		return s
	}
	var b strings.Builder
	used := 0
	for _, r := range s {
		rw := lipgloss.Width(string(r))
		if used+rw > w-1 {
			break
		}
		b.WriteRune(r)
		used += rw
	}
	return b.String() + "…"
}

// sgrLen is the length of the Select Graphic Rendition sequence s starts
// with (0 if none): the only escape sequence lockctl's own styling
// (lipgloss) writes into table cells.
func sgrLen(s string) int {
	if !strings.HasPrefix(s, "\x1b[") {
		return 0
	}
	for i := 2; i < len(s); i++ {
		switch c := s[i]; {
		case c == 'm':
			return i + 1
		case c == ';' || c == ':' || (c >= '0' && c <= '9'):
		default:
			return 0
		}
	}
	return 0
}

// escapeStyled escapes a table cell that may carry lockctl's own colours:
// SGR sequences are kept, everything else goes through Escape. Printers
// escape the data they put in cells; this catches whatever they missed
// without undoing their styling.
func escapeStyled(s string) string {
	if !strings.Contains(s, "\x1b") {
		return Escape(s)
	}
	var b strings.Builder
	start := 0
	for i := 0; i < len(s); {
		if n := sgrLen(s[i:]); n > 0 {
			b.WriteString(Escape(s[start:i]))
			b.WriteString(s[i : i+n])
			i += n
			start = i
			continue
		}
		i++
	}
	b.WriteString(Escape(s[start:]))
	return b.String()
}

// jsonSafe rewrites, inside encoded JSON, the runes encoding/json leaves raw
// but a terminal may obey or hide (DEL, C1 controls, format characters) as
// \uNNNN escapes: the same string to a JSON parser, inert on a terminal.
// Such runes can only occur inside JSON strings, where \u escapes are valid.
func jsonSafe(b []byte) []byte {
	clean := true
	for _, c := range b {
		if c >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == 0x7f || hidden(r):
			if r1, r2 := utf16.EncodeRune(r); r1 != utf8.RuneError {
				out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
			} else {
				out = fmt.Appendf(out, `\u%04x`, r)
			}
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}
