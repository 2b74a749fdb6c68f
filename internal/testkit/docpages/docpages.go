// Package docpages is the one list of lockctl's documentation pages whose
// examples, tables and links the tests check: README.md and every
// docs/*.md. A test that reads the documentation reads it through here, so
// a page added to docs/ is checked without touching any test.
package docpages

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Page is one documentation page.
type Page struct {
	Path string // relative to the checkout's root, with forward slashes
	Text string
}

// Pages returns README.md and docs/*.md (in name order) under root, the
// checkout's root.
func Pages(root string) ([]Page, error) {
	paths, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	paths = append([]string{filepath.Join(root, "README.md")}, paths...)
	pages := make([]Page, 0, len(paths))
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return nil, err
		}
		pages = append(pages, Page{Path: filepath.ToSlash(rel), Text: string(b)})
	}
	return pages, nil
}

// WithHeading returns the one page that has a line equal to heading (such
// as "## Exit codes"), and an error when none or several have it.
func WithHeading(pages []Page, heading string) (Page, error) {
	var found []Page
	for _, p := range pages {
		for _, l := range strings.Split(p.Text, "\n") {
			if l == heading {
				found = append(found, p)
				break
			}
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return Page{}, fmt.Errorf("no page has a %q section", heading)
	}
	var names []string
	for _, p := range found {
		names = append(names, p.Path)
	}
	return Page{}, fmt.Errorf("%q is a section of several pages: %s", heading, strings.Join(names, ", "))
}
