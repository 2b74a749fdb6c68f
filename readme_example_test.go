package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestReadmeShowsLibraryExample: the documentation's library section shows pkg/lock's
// first example (Example in pkg/lock/example_test.go, which go test runs
// against a real redis-server) whole: the same function, word for word, and
// exactly the imports it uses.
func TestReadmeShowsLibraryExample(t *testing.T) {
	const exampleFile = "pkg/lock/example_test.go"
	src, err := os.ReadFile(exampleFile)
	if err != nil {
		t.Fatal(err)
	}
	want, wantImports := exampleFunc(t, exampleFile, src, 0)
	if want == "" {
		t.Fatalf("%s has no func Example", exampleFile)
	}

	var shown []readmeBlock
	for _, b := range allBlocks(t, docPages(t)) {
		if isLibraryExample(b) {
			shown = append(shown, b)
		}
	}
	if len(shown) == 0 {
		t.Fatal("no page has a ```go block with func Example(): the library section does not show the example")
	}
	for _, b := range shown {
		const pkgLine = "package example\n"
		got, gotImports := exampleFunc(t, b.file, []byte(pkgLine+b.text), len(pkgLine))
		if got != want {
			t.Errorf("%s: the Example shown is not %s's:\n--- %s\n%s\n--- %s\n%s", b.where(), exampleFile, b.file, got, exampleFile, want)
		}
		if !slices.Equal(gotImports, wantImports) {
			t.Errorf("%s: the example's imports are %q, want the ones it uses: %q", b.where(), gotImports, wantImports)
		}
	}
}

// exampleFunc returns the source of func Example with its doc comment, and
// the import paths it uses (for the example file) or that the file lists
// (for the README's block, which imports only what it shows).
func exampleFunc(t *testing.T, name string, src []byte, skip int) (string, []string) {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	byName := map[string]string{}
	var listed []string
	for _, imp := range f.Imports {
		p, _ := strconv.Unquote(imp.Path.Value)
		n := path.Base(p)
		if imp.Name != nil {
			n = imp.Name.Name
		} else if strings.HasPrefix(n, "v") && strings.Contains(p, "go-redis") {
			n = "redis"
		}
		byName[n] = p
		listed = append(listed, p)
	}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "Example" || fn.Recv != nil {
			continue
		}
		start := fn.Pos()
		if fn.Doc != nil {
			start = fn.Doc.Pos()
		}
		text := string(src[fset.Position(start).Offset:fset.Position(fn.End()).Offset])
		if skip > 0 {
			slices.Sort(listed)
			return text, listed
		}
		var used []string
		ast.Inspect(fn, func(n ast.Node) bool {
			if sel, ok := n.(*ast.SelectorExpr); ok {
				if id, ok := sel.X.(*ast.Ident); ok && byName[id.Name] != "" && !slices.Contains(used, byName[id.Name]) {
					used = append(used, byName[id.Name])
				}
			}
			return true
		})
		slices.Sort(used)
		return text, used
	}
	return "", nil
}
