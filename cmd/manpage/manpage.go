// Package manpage writes lockctl's man pages from the command tree. It is
// apart from package cmd so that the man-page generator (cobra/doc,
// go-md2man, blackfriday) is linked only into the tools that write the
// pages, not into lockctl, whose every start would run its initialisers.
package manpage

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/lockctl/lockctl/cmd"
	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

// manDate is the date in the man pages' header. It is fixed so that
// `make man` changes the pages only when the commands change (and the
// drift test can compare them); SOURCE_DATE_EPOCH overrides it for
// packagers who stamp their own.
var manDate = time.Date(2026, time.December, 1, 0, 0, 0, 0, time.UTC)

// Write writes one man page per command of root's tree into dir
// (lockctl.1, lockctl-run.1, lockctl-inspect-locks.1, ...). Every page gets
// EXIT STATUS, ENVIRONMENT and FILES sections, as flock(1) has, from the
// same tables as docs/reference.md (cmd/reference.go): a reader of `man lockctl-run`
// finds the exit codes where man pages keep them.
func Write(root *cobra.Command, dir string) error {
	h := &doc.GenManHeader{Title: "LOCKCTL", Section: "1", Source: "lockctl", Manual: "lockctl manual"}
	if os.Getenv("SOURCE_DATE_EPOCH") == "" {
		d := manDate
		h.Date = &d
	}
	extra := manSections()
	var walk func(c *cobra.Command) error
	walk = func(c *cobra.Command) error {
		for _, sub := range c.Commands() {
			if !sub.IsAvailableCommand() || sub.IsAdditionalHelpTopicCommand() {
				continue
			}
			if err := walk(sub); err != nil {
				return err
			}
		}
		var buf bytes.Buffer
		if err := genMan(c, h, &buf); err != nil {
			return err
		}
		page := insertManSections(buf.String(), extra)
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		return os.WriteFile(filepath.Join(dir, name), []byte(page), 0o644)
	}
	return walk(root)
}

// genMan is doc.GenMan with c's fine print (cmd.FinePrint), which --help
// leaves out, as a DETAILS section after the DESCRIPTION: cobra/doc
// writes the description as Markdown under a "# DESCRIPTION" heading, so
// a heading after Long is a section of the page.
func genMan(c *cobra.Command, h *doc.GenManHeader, buf *bytes.Buffer) error {
	fine := cmd.FinePrint(c)
	if fine == "" {
		return doc.GenMan(c, h, buf)
	}
	long := c.Long
	defer func() { c.Long = long }()
	desc := long
	if desc == "" {
		desc = c.Short
	}
	c.Long = desc + "\n\n# DETAILS\n" + fine
	return doc.GenMan(c, h, buf)
}

// insertManSections puts extra where man-pages(7) orders it: after the
// options, before EXAMPLE and SEE ALSO.
func insertManSections(page, extra string) string {
	for _, next := range []string{".SH EXAMPLE", ".SH SEE ALSO"} {
		if i := strings.Index(page, next); i >= 0 {
			return page[:i] + extra + page[i:]
		}
	}
	return page + extra
}

func manSections() string {
	var b strings.Builder
	section := func(title string, rows []cmd.RefRow) {
		b.WriteString(".SH " + title + "\n")
		for _, r := range rows {
			b.WriteString(".TP\n" + roffInline(r.Key) + "\n" + roffInline(r.Meaning) + "\n")
		}
		b.WriteString("\n\n")
	}
	section("EXIT STATUS", cmd.ExitStatusTable)
	section("ENVIRONMENT", cmd.EnvironmentTable)
	section("FILES", cmd.FilesTable)
	return b.String()
}

var mdCode = regexp.MustCompile("`([^`]*)`")

// roffInline renders a Markdown table cell as roff text: `code` in bold,
// backslashes and hyphens of code escaped, no line starting a request.
func roffInline(md string) string {
	s := strings.ReplaceAll(md, `\`, `\e`)
	s = mdCode.ReplaceAllStringFunc(s, func(m string) string {
		code := strings.ReplaceAll(m[1:len(m)-1], "-", `\-`)
		return `\fB` + code + `\fP`
	})
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}
