package ui

import (
	"io"
	"strings"

	"github.com/charmbracelet/lipgloss"
)

// writeTable writes rows (under header, when it is not nil) as the
// terminal table: every cell trimmed of surrounding spaces and padded to
// its column's width, one space either side, no borders or rules; short
// rows get empty cells. Widths are display widths (lipgloss.Width: wide
// characters count two, lockctl's colour sequences none), as fitColumns
// and Truncate measure them.
func writeTable(w io.Writer, header []string, rows [][]string) error {
	lines := rows
	if header != nil {
		lines = append([][]string{header}, rows...)
	}
	n := 0
	for _, r := range lines {
		n = max(n, len(r))
	}
	if n == 0 {
		return nil
	}
	trimmed := make([][]string, len(lines))
	widths := make([][]int, len(lines))
	col := make([]int, n)
	for i, r := range lines {
		trimmed[i] = make([]string, n)
		widths[i] = make([]int, n)
		for j, c := range r {
			c = strings.TrimSpace(c)
			trimmed[i][j] = c
			widths[i][j] = lipgloss.Width(c)
			col[j] = max(col[j], widths[i][j])
		}
	}
	var b strings.Builder
	for i, r := range trimmed {
		for j, c := range r {
			b.WriteByte(' ')
			b.WriteString(c)
			b.WriteString(strings.Repeat(" ", col[j]-widths[i][j]+1))
		}
		b.WriteByte('\n')
	}
	_, err := io.WriteString(w, b.String())
	return err
}
