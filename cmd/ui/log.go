package ui

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"
)

// Level is a diagnostic line's severity, as --log-format json names it.
type Level int

// The levels of lockctl's diagnostics.
const (
	LevelDebug Level = iota // -v
	LevelInfo               // progress, waiting, notes
	LevelWarn               // something went wrong and lockctl carries on
	LevelError              // the command failed: the final error line
)

func (l Level) String() string {
	switch l {
	case LevelDebug:
		return "debug"
	case LevelWarn:
		return "warn"
	case LevelError:
		return "error"
	}
	return "info"
}

// Field is one key of a JSON log line besides time, level and msg.
type Field struct {
	Key   string
	Value any
}

// Fields builds fields from key, value pairs (a key without a value is
// dropped), in the order given, as log/slog takes them.
func Fields(kv ...any) []Field {
	out := make([]Field, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		if k, ok := kv[i].(string); ok {
			out = append(out, Field{Key: k, Value: kv[i+1]})
		}
	}
	return out
}

// Entry is one diagnostic: the line text mode prints (after "lockctl: "),
// its hints, and what JSON adds.
type Entry struct {
	Level Level
	// Text is the line as text mode prints it, without "lockctl: ".
	// JSON's msg is Text without a leading "warning: " (the level says
	// it).
	Text  string
	Hints []string
	// Fields are the JSON keys besides time, level, msg and hint; a
	// duration is written in milliseconds, an error as its message.
	Fields []Field
}

// logger writes diagnostics on stderr, each one as whole lines in one
// write under a lock, so that lines of two goroutines (a renewal warning,
// a status line) never interleave.
type logger struct {
	mu     sync.Mutex
	json   bool
	fields []Field // added to every JSON line (the lock's name)
	now    func() time.Time
	buf    bytes.Buffer
}

// SetLogFormat picks text (today's "lockctl: ..." lines) or json (one
// object per line) for every diagnostic from now on.
func (s *IOStreams) SetLogFormat(format string) {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	s.log.json = format == "json"
}

// JSONLog reports whether diagnostics are JSON lines.
func (s *IOStreams) JSONLog() bool {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	return s.log.json
}

// SetLogField adds key to every JSON diagnostic that does not set it
// itself (the NAME or KEY the command acts on).
func (s *IOStreams) SetLogField(key string, value any) {
	s.log.mu.Lock()
	defer s.log.mu.Unlock()
	for i, f := range s.log.fields {
		if f.Key == key {
			s.log.fields[i].Value = value
			return
		}
	}
	s.log.fields = append(s.log.fields, Field{key, value})
}

// ValidLogFormat reports whether format is a --log-format value.
func ValidLogFormat(format string) bool { return format == "text" || format == "json" }

// Log writes one diagnostic on stderr: in text, "lockctl: TEXT" and a
// "lockctl: hint: ..." line per hint, each escaped (diagnostics quote lock
// names, owners and server replies, and none may drive the terminal or
// forge a line); in json, one object.
func (s *IOStreams) Log(e Entry) {
	l := &s.log
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Reset()
	if l.json {
		l.appendJSON(&l.buf, e)
	} else {
		fmt.Fprintf(&l.buf, "lockctl: %s\n", Escape(e.Text))
		for _, h := range e.Hints {
			fmt.Fprintf(&l.buf, "lockctl: hint: %s\n", Escape(h))
		}
	}
	_, _ = s.ErrOut.Write(l.buf.Bytes())
}

// Logf is Log of a line formatted by format, at level, with fields.
func (s *IOStreams) Logf(level Level, fields []Field, format string, args ...any) {
	s.Log(Entry{Level: level, Text: fmt.Sprintf(format, args...), Fields: fields})
}

// Errorf writes one diagnostic line to stderr, prefixed "lockctl: " in
// text. Its level follows the text: "warning: ..." is a warning, anything
// else information; lines with data of their own use Log.
func (s *IOStreams) Errorf(format string, args ...any) {
	text := fmt.Sprintf(format, args...)
	level := LevelInfo
	if strings.HasPrefix(text, "warning: ") {
		level = LevelWarn
	}
	s.Log(Entry{Level: level, Text: text})
}

const logTime = "2006-01-02T15:04:05.000Z07:00"

func (l *logger) appendJSON(b *bytes.Buffer, e Entry) {
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	msg := e.Text
	if e.Level == LevelWarn {
		msg = strings.TrimPrefix(msg, "warning: ")
	}
	b.WriteString(`{"time":"`)
	b.WriteString(now().UTC().Format(logTime))
	b.WriteString(`","level":"`)
	b.WriteString(e.Level.String())
	b.WriteString(`","msg":`)
	appendValue(b, msg)
	seen := map[string]bool{"time": true, "level": true, "msg": true, "hint": true}
	for _, f := range e.Fields {
		seen[f.Key] = false
	}
	field := func(f Field) {
		if done, ok := seen[f.Key]; ok && done {
			return
		}
		seen[f.Key] = true
		b.WriteString(",")
		appendValue(b, f.Key)
		b.WriteString(":")
		appendValue(b, f.Value)
	}
	// The command's NAME first, unless the line names another.
	for _, f := range l.fields {
		if _, own := seen[f.Key]; !own {
			field(f)
		}
	}
	for _, f := range e.Fields {
		field(f)
	}
	if len(e.Hints) > 0 {
		b.WriteString(`,"hint":`)
		appendValue(b, e.Hints)
	}
	b.WriteString("}\n")
}

// appendValue writes v as JSON: a duration in milliseconds, an error as its
// message, and whatever a terminal could obey escaped (jsonSafe).
func appendValue(b *bytes.Buffer, v any) {
	switch x := v.(type) {
	case time.Duration:
		v = x.Milliseconds()
	case time.Time:
		v = x.UTC().Format(logTime)
	case error:
		v = x.Error()
	case fmt.Stringer:
		v = x.String()
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		out.Reset()
		_ = enc.Encode(fmt.Sprint(v))
	}
	b.Write(jsonSafe(bytes.TrimSuffix(out.Bytes(), []byte("\n"))))
}
