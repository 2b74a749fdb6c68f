package ui

import (
	"bytes"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/renderer"
	"github.com/olekukonko/tablewriter/tw"
)

// tablewriterTable renders a table as lockctl's tables were rendered by
// tablewriter (no borders, no rules, left-aligned, headers as given):
// writeTable must print the same bytes, without linking tablewriter (and
// its initialisers) into lockctl.
func tablewriterTable(t *testing.T, header []string, rows [][]string) string {
	t.Helper()
	var b bytes.Buffer
	tbl := tablewriter.NewTable(&b,
		tablewriter.WithRenderer(renderer.NewBlueprint(tw.Rendition{
			Borders: tw.BorderNone,
			Settings: tw.Settings{
				Separators: tw.Separators{BetweenColumns: tw.Off, BetweenRows: tw.Off},
				Lines:      tw.Lines{ShowHeaderLine: tw.Off},
			},
		})),
		tablewriter.WithHeaderAlignment(tw.AlignLeft),
		tablewriter.WithRowAlignment(tw.AlignLeft),
		tablewriter.WithHeaderAutoFormat(tw.Off),
	)
	if header != nil {
		h := make([]any, len(header))
		for i, c := range header {
			h[i] = c
		}
		tbl.Header(h...)
	}
	for _, r := range rows {
		row := make([]any, len(r))
		for i, c := range r {
			row[i] = c
		}
		if err := tbl.Append(row...); err != nil {
			t.Fatal(err)
		}
	}
	if err := tbl.Render(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestWriteTableAsTablewriter(t *testing.T) {
	bold := func(s string) string { return "\x1b[1m" + s + "\x1b[0m" }
	header := []string{"NAME", "OWNER", "HOST", "PID", "AGE", "TTL", "FENCE", "WAITERS", "NOTE"}
	cases := []struct {
		header []string
		rows   [][]string
	}{
		{header, nil},
		{header, [][]string{{"deploy", "ci", "build-3", "4242", "3s", "57s", "1796539672372401", "0", ""}}},
		{[]string{bold("NAME"), bold("OWNER")}, [][]string{{"deploy", "ci@h:1"}, {"a", "日本語"}, {"", ""}}},
		{[]string{"A", "B", "C"}, [][]string{{"  lead", "trail  ", " both "}, {"x"}}},
		{nil, [][]string{{"deploy", "ci"}, {"b", "\x1b[32mok\x1b[0m"}}},
		{[]string{"FIELD", "VALUE"}, [][]string{{"note", strings.Repeat("long words ", 30)}, {"x", strings.Repeat("y", 300)}}},
		{[]string{"A", "B"}, [][]string{{`evil\x1b[2J\nforged\trow`, "café ñ"}, {"Ωmega", "✓ done"}}},
		{[]string{"A"}, [][]string{{""}}},
		{[]string{"A"}, [][]string{{"x", "y"}, {"long", ""}}},
		{nil, nil},
	}
	pool := []string{"", "a", "deploy", "lock:x", "ci@build-3:4242", "日本", "é", " x ", "\x1b[1mb\x1b[0m", "1796539672372401", "-", "(holders 1/3)", "Ω", "✓"}
	r := rand.New(rand.NewPCG(1, 2))
	for range 300 {
		n := 1 + r.IntN(6)
		h := make([]string, n)
		for i := range h {
			h[i] = strings.ToUpper(pool[1+r.IntN(len(pool)-1)])
		}
		if r.IntN(5) == 0 {
			h = nil
		}
		rows := make([][]string, r.IntN(5))
		for i := range rows {
			row := make([]string, 1+r.IntN(n))
			for j := range row {
				row[j] = pool[r.IntN(len(pool))]
			}
			rows[i] = row
		}
		cases = append(cases, struct {
			header []string
			rows   [][]string
		}{h, rows})
	}
	for _, tc := range cases {
		var b bytes.Buffer
		if err := writeTable(&b, tc.header, tc.rows); err != nil {
			t.Fatal(err)
		}
		if want := tablewriterTable(t, tc.header, tc.rows); b.String() != want {
			t.Errorf("header %q rows %q:\ngot  %q\nwant %q", tc.header, tc.rows, b.String(), want)
		}
	}
}
