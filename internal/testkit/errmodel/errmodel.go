// Package errmodel checks a library package's error model against its
// package doc: the "# Errors" table names each sentinel and the error types
// that match it; every exported sentinel and error type of the package is
// in the table, each type matches exactly the sentinels of its rows, and
// every message starts with the package's prefix.
package errmodel

import (
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Case is one value of an exported error type, built as the package builds
// it. Also names sentinels beyond its type's rows that this value matches;
// the row of its type must mention each.
type Case struct {
	Type string // "*DoneError"
	Err  error
	Also []string
}

// row is one sentinel's row of the table: its types and its whole text.
type row struct {
	types []string
	text  string
}

// Check parses the package in dir, reads its "# Errors" table and checks
// sentinels (every exported Err* variable, by name) and cases (at least one
// per exported type with an Error method) against it.
func Check(t *testing.T, dir, prefix string, sentinels map[string]error, cases []Case) {
	t.Helper()
	doc, vars, types := parse(t, dir)
	rows := table(t, doc)
	for _, name := range vars {
		s, ok := sentinels[name]
		if !ok {
			t.Errorf("sentinel %s is not in the test's list", name)
			continue
		}
		if _, ok := rows[name]; !ok {
			t.Errorf("sentinel %s has no row in the package doc's Errors table", name)
		}
		if !strings.HasPrefix(s.Error(), prefix) {
			t.Errorf("%s's message %q does not start with %q", name, s, prefix)
		}
	}
	for name := range rows {
		if !slices.Contains(vars, name) {
			t.Errorf("the Errors table names %s, which the package does not declare", name)
		}
	}
	for _, typ := range types {
		if !slices.ContainsFunc(cases, func(c Case) bool { return c.Type == typ }) {
			t.Errorf("error type %s has no case in the test", typ)
		}
		if !slices.ContainsFunc(slices.Collect(mapValues(rows)), func(r row) bool { return slices.Contains(r.types, typ) }) {
			t.Errorf("error type %s is in no row of the Errors table", typ)
		}
	}
	for _, c := range cases {
		if !strings.HasPrefix(c.Err.Error(), prefix) {
			t.Errorf("%s: message %q does not start with %q", c.Type, c.Err, prefix)
		}
		for name, s := range sentinels {
			want := slices.Contains(rows[name].types, c.Type) || slices.Contains(c.Also, name)
			if got := errors.Is(c.Err, s); got != want {
				t.Errorf("%s (%v): errors.Is(%s) = %v, want %v", c.Type, c.Err, name, got, want)
			}
		}
		for _, name := range c.Also {
			r := rowOf(rows, c.Type)
			if !strings.Contains(r.text, name) {
				t.Errorf("%s also matches %s, which its row of the Errors table does not say", c.Type, name)
			}
		}
	}
}

func mapValues(m map[string]row) func(func(row) bool) {
	return func(yield func(row) bool) {
		for _, r := range m {
			if !yield(r) {
				return
			}
		}
	}
}

func rowOf(rows map[string]row, typ string) row {
	for _, r := range rows {
		if slices.Contains(r.types, typ) {
			return r
		}
	}
	return row{}
}

// parse returns the package doc, the exported Err* variables and the
// exported types with an Error method of the package in dir.
func parse(t *testing.T, dir string) (doc string, vars, types []string) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(fset, f, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if af.Doc != nil {
			doc += af.Doc.Text()
		}
		for _, d := range af.Decls {
			switch d := d.(type) {
			case *ast.GenDecl:
				if d.Tok != token.VAR {
					continue
				}
				for _, spec := range d.Specs {
					for _, n := range spec.(*ast.ValueSpec).Names {
						if n.IsExported() && strings.HasPrefix(n.Name, "Err") {
							vars = append(vars, n.Name)
						}
					}
				}
			case *ast.FuncDecl:
				if d.Recv == nil || d.Name.Name != "Error" || len(d.Recv.List) != 1 {
					continue
				}
				if star, ok := d.Recv.List[0].Type.(*ast.StarExpr); ok {
					if id, ok := star.X.(*ast.Ident); ok && id.IsExported() {
						types = append(types, "*"+id.Name)
					}
				}
			}
		}
	}
	return doc, vars, types
}

// table reads the "# Errors" section's table: a row starts with an
// indented sentinel name and runs on over the indented lines after it that
// start with no other; its types are its words that start with "*".
func table(t *testing.T, doc string) map[string]row {
	t.Helper()
	_, sec, ok := strings.Cut(doc, "# Errors\n")
	if !ok {
		t.Fatal("the package doc has no # Errors section")
	}
	if i := strings.Index(sec, "\n# "); i >= 0 {
		sec = sec[:i]
	}
	rows := map[string]row{}
	cur := ""
	for _, line := range strings.Split(sec, "\n") {
		if !strings.HasPrefix(line, "\t") {
			cur = ""
			continue
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if strings.HasPrefix(f[0], "Err") {
			cur = f[0]
			f = f[1:]
		}
		if cur == "" {
			continue
		}
		r := rows[cur]
		r.text += " " + strings.Join(f, " ")
		for _, w := range f {
			if strings.HasPrefix(w, "*") {
				r.types = append(r.types, strings.TrimRight(w, ",.;"))
			}
		}
		rows[cur] = r
	}
	if len(rows) == 0 {
		t.Fatal("the # Errors section has no table")
	}
	return rows
}
