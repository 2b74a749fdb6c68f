package exporter

import (
	"bufio"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The Prometheus text exposition format, version 0.0.4, written here rather
// than by client_golang: Go runs the initialisers of every package linked
// into the binary at every start of every command, and client_golang's
// (with protobuf, procfs, expfmt and expvar) cost each `lockctl run` about
// as much as the rest of lockctl's own start-up. The output is byte for
// byte what client_golang's registry and expfmt's text encoder write for
// the same const metrics (exposition_oracle_test.go checks it against
// them): families sorted by name, series by label values, floats in
// expfmt's notation.

// contentType is what /metrics answers with: the text format 0.0.4.
const contentType = "text/plain; version=0.0.4; charset=utf-8"

// Kinds of family: the word its TYPE line says.
const (
	kindGauge     = "gauge"
	kindCounter   = "counter"
	kindHistogram = "histogram"
)

// family is one metric: its name, help, kind and label names. The label
// names are in sorted order, the order the format writes them in (a test
// checks every family lockctl declares).
type family struct {
	name, help string
	kind       string
	labels     []string
}

// series is one labelled sample of a family; a histogram's carries its
// cumulative bucket counts (by upper bound), its sum and count instead of
// a value.
type series struct {
	values  []string // label values, in the order of family.labels
	value   float64
	buckets map[float64]uint64
	sum     float64
	count   uint64
}

// exposition gathers the series of one scrape and writes them.
//
// A series is refused (left out, its error kept for the log) when it could
// not be read back as the series it is, so that one bad series never fails
// the scrape: a label value that is not valid UTF-8, a label set its family
// already has (only the first is kept), a number of label values other
// than the family's label names, or a value of another kind than its
// family's. None of these can come from the Exporter today (labelValue
// makes every name valid UTF-8, names that then coincide are merged before
// they get here, and each family is written by one call of one kind); the
// checks keep a future mistake down to one series, as client_golang's
// registry did.
type exposition struct {
	families map[*family][]series
	seen     map[string]bool // family name + label values, for duplicates
	errs     []error
}

func newExposition() *exposition {
	return &exposition{families: map[*family][]series{}, seen: map[string]bool{}}
}

func (x *exposition) gauge(f *family, v float64, labels ...string) {
	x.add(f, kindGauge, series{values: labels, value: v})
}

func (x *exposition) counter(f *family, v uint64, labels ...string) {
	x.add(f, kindCounter, series{values: labels, value: float64(v)})
}

// histogram adds a histogram series: buckets maps each upper bound to the
// count of observations at or below it (as client_golang's
// NewConstHistogram takes them).
func (x *exposition) histogram(f *family, count uint64, sum float64, buckets map[float64]uint64, labels ...string) {
	x.add(f, kindHistogram, series{values: labels, buckets: buckets, sum: sum, count: count})
}

func (x *exposition) add(f *family, kind string, s series) {
	if err := x.check(f, kind, s); err != nil {
		x.errs = append(x.errs, err)
		return
	}
	x.families[f] = append(x.families[f], s)
}

// check says why s cannot be written as a series of f, or nil.
func (x *exposition) check(f *family, kind string, s series) error {
	if kind != f.kind {
		return fmt.Errorf("%s: a %s value for a %s", f.name, kind, f.kind)
	}
	if len(s.values) != len(f.labels) {
		return fmt.Errorf("%s: %d label values %q for the labels %q", f.name, len(s.values), s.values, f.labels)
	}
	for i, v := range s.values {
		if !utf8.ValidString(v) {
			return fmt.Errorf("%s: label %s=%q is not valid UTF-8", f.name, f.labels[i], v)
		}
	}
	id := seriesID(f.name, s.values)
	if x.seen[id] {
		return fmt.Errorf("%s: series %q collected twice", f.name, s.values)
	}
	x.seen[id] = true
	return nil
}

// seriesID identifies a series; label values are valid UTF-8 by then, so
// a 0xff byte separates them unambiguously.
func seriesID(name string, values []string) string {
	return name + "\xff" + strings.Join(values, "\xff")
}

// writeTo writes the families that have series, sorted by name, each one's
// series sorted by label values; only is the set of family names to write
// (nil: all).
func (x *exposition) writeTo(w io.Writer, only map[string]bool) error {
	fams := make([]*family, 0, len(x.families))
	for f, ss := range x.families {
		if len(ss) > 0 && (only == nil || only[f.name]) {
			fams = append(fams, f)
		}
	}
	sort.Slice(fams, func(i, j int) bool { return fams[i].name < fams[j].name })
	bw := bufio.NewWriter(w)
	var buf []byte
	for _, f := range fams {
		ss := x.families[f]
		sort.Slice(ss, func(i, j int) bool { return valuesLess(ss[i].values, ss[j].values) })
		buf = appendFamily(buf[:0], f, ss)
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// valuesLess orders series by their label values, the first that differs
// deciding.
func valuesLess(a, b []string) bool {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return a[i] < b[i]
		}
	}
	return len(a) < len(b)
}

// appendFamily appends the HELP and TYPE lines of f and one line per
// sample of its series.
func appendFamily(b []byte, f *family, ss []series) []byte {
	b = append(b, "# HELP "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = appendEscaped(b, f.help, false)
	b = append(b, "\n# TYPE "...)
	b = append(b, f.name...)
	b = append(b, ' ')
	b = append(b, f.kind...)
	b = append(b, '\n')
	for _, s := range ss {
		if f.kind != kindHistogram {
			b = appendSample(b, f.name, "", f.labels, s.values, "", s.value)
			continue
		}
		bounds := make([]float64, 0, len(s.buckets))
		for le := range s.buckets {
			bounds = append(bounds, le)
		}
		sort.Float64s(bounds)
		inf := false
		for _, le := range bounds {
			b = appendSample(b, f.name, "_bucket", f.labels, s.values, formatFloat(le), float64(s.buckets[le]))
			inf = inf || math.IsInf(le, +1)
		}
		if !inf {
			b = appendSample(b, f.name, "_bucket", f.labels, s.values, "+Inf", float64(s.count))
		}
		b = appendSample(b, f.name, "_sum", f.labels, s.values, "", s.sum)
		b = appendSample(b, f.name, "_count", f.labels, s.values, "", float64(s.count))
	}
	return b
}

// appendSample appends one line: the name with its suffix, the labels
// (le last when given), the value.
func appendSample(b []byte, name, suffix string, labels, values []string, le string, v float64) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	if len(labels) > 0 || le != "" {
		sep := byte('{')
		for i, l := range labels {
			b = append(b, sep)
			b = append(b, l...)
			b = append(b, `="`...)
			b = appendEscaped(b, values[i], true)
			b = append(b, '"')
			sep = ','
		}
		if le != "" {
			b = append(b, sep)
			b = append(b, `le="`...)
			b = append(b, le...)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = appendFloat(b, v)
	return append(b, '\n')
}

// appendEscaped appends s with backslash and newline escaped, and the
// double quote too in a label value (quoted); help text keeps its quotes.
func appendEscaped(b []byte, s string, quoted bool) []byte {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quoted:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// appendFloat appends v as expfmt writes it: NaN, +Inf, -Inf, 0 for
// either zero, else the shortest representation that reads back as v in
// 'g' notation (an exponent from 1e+06 up and below 1e-04: 1e+06,
// 1.5e-05).
func appendFloat(b []byte, v float64) []byte {
	switch {
	case math.IsNaN(v):
		return append(b, "NaN"...)
	case math.IsInf(v, +1):
		return append(b, "+Inf"...)
	case math.IsInf(v, -1):
		return append(b, "-Inf"...)
	case v == 0:
		return append(b, '0')
	}
	return strconv.AppendFloat(b, v, 'g', -1, 64)
}

func formatFloat(v float64) string { return string(appendFloat(nil, v)) }
