package simulate

import (
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// longHex matches tokens, script SHAs and other random-looking hex: shown
// shortened, so a timeline line stays readable and a token is still
// recognisable by its first characters. Runs of decimal digits are numbers
// (fences are the server's time in µs) and stay whole: their last digits
// are the ones that differ.
var longHex = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[0-9a-f]{16,}`) })

func shorten(s string) string {
	return longHex().ReplaceAllStringFunc(s, func(h string) string {
		if strings.Trim(h, "0123456789") == "" {
			return h
		}
		return h[:6] + "…"
	})
}

// strip removes the per-run prefixes of a real-server run, so the timeline
// shows the same key names in both modes (the header says they are removed).
func (e *env) strip(s string) string {
	if !e.real {
		return s
	}
	var prefixes []string
	for _, n := range e.nodes {
		prefixes = append(prefixes, n.prefix)
	}
	sort.Slice(prefixes, func(i, j int) bool { return len(prefixes[i]) > len(prefixes[j]) })
	for _, p := range prefixes {
		s = strings.ReplaceAll(s, p, "")
	}
	return s
}

func (e *env) showCommand(n *node, args []interface{}) string {
	parts := make([]string, len(args))
	for i, a := range args {
		s := fmt.Sprint(a)
		if i == 0 {
			s = strings.ToUpper(s)
		}
		parts[i] = quoteArg(shorten(e.strip(s)))
	}
	return strings.Join(parts, " ")
}

// quoteArg quotes an argument the way redis-cli accepts it back.
func quoteArg(s string) string {
	if s == "" {
		return `""`
	}
	if !strings.ContainsAny(s, " \t\r\n\"'\\") {
		return s
	}
	if !strings.ContainsAny(s, "'\\\r\n\t") {
		return "'" + s + "'"
	}
	return strconv.Quote(s)
}

func (e *env) showReply(n *node, cmd redis.Cmder) string {
	err := cmd.Err()
	if err == redis.Nil {
		return "(nil)"
	}
	if err != nil {
		return "(error) " + shorten(e.strip(err.Error()))
	}
	if sc, ok := cmd.(*redis.ScanCmd); ok {
		keys, cursor := sc.Val()
		return fmt.Sprintf("[%d, %s]", cursor, e.showValue(keys))
	}
	m := reflect.ValueOf(cmd).MethodByName("Val")
	if !m.IsValid() || m.Type().NumIn() != 0 || m.Type().NumOut() != 1 {
		return shorten(e.strip(cmd.String()))
	}
	return e.showValue(m.Call(nil)[0].Interface())
}

func (e *env) showValue(v interface{}) string {
	switch x := v.(type) {
	case nil:
		return "(nil)"
	case string:
		return quoteArg(shorten(e.strip(x)))
	case time.Duration:
		if x < 0 {
			return strconv.FormatInt(int64(x), 10)
		}
		return strconv.FormatInt(int64(x/time.Millisecond), 10)
	case []string:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = e.showValue(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case []interface{}:
		parts := make([]string, len(x))
		for i, s := range x {
			parts[i] = e.showValue(s)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case bool:
		if x {
			return "1"
		}
		return "0"
	default:
		return shorten(e.strip(fmt.Sprint(x)))
	}
}
