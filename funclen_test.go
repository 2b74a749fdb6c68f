package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines bounds a function of lockctl's code, from its func line to
// its closing brace: a longer one is a list of steps to name and split.
const maxFuncLines = 100

func TestNoLongFunctions(t *testing.T) {
	long, err := longFunctions(".", maxFuncLines)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range long {
		t.Errorf("%s: %s is %d lines long (at most %d): split it into named steps", l.pos, l.id, l.lines, maxFuncLines)
	}
}

type longFunc struct {
	id, pos string
	lines   int
}

// longFunctions walks the module's Go files below root, leaving out tests,
// testdata and bench/ (a module of its own and scripts), and returns the
// function declarations longer than limit lines.
func longFunctions(root string, limit int) ([]longFunc, error) {
	var out []longFunc
	fset := token.NewFileSet()
	files := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (name == "testdata" || name == "bench" || name == "vendor" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		files++
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start, end := fset.Position(fn.Pos()), fset.Position(fn.End())
			if n := end.Line - start.Line + 1; n > limit {
				out = append(out, longFunc{id: filepath.ToSlash(path) + ":" + funcName(fn), pos: start.String(), lines: n})
			}
		}
		return nil
	})
	if err == nil && files < 100 {
		err = fs.ErrNotExist // walked the wrong tree: lockctl has hundreds of files
	}
	return out, err
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch r := t.(type) {
	case *ast.IndexExpr:
		t = r.X
	case *ast.IndexListExpr:
		t = r.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}

// maxRunELines bounds a command's RunE closure: it reads the arguments
// into the command's options struct, checks them, and calls the command's
// named run function (runLock, runForceRelease...), which does the work.
const maxRunELines = 30

func TestCommandsRunNamedFunctions(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("cmd/*.go")
	if err != nil || len(files) < 20 {
		t.Fatalf("cmd/*.go: %d files, %v", len(files), err)
	}
	closures := 0
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			kv, ok := n.(*ast.KeyValueExpr)
			if !ok {
				return true
			}
			if key, ok := kv.Key.(*ast.Ident); !ok || key.Name != "RunE" {
				return true
			}
			lit, ok := kv.Value.(*ast.FuncLit)
			if !ok {
				return true
			}
			closures++
			start, end := fset.Position(lit.Pos()), fset.Position(lit.End())
			if n := end.Line - start.Line + 1; n > maxRunELines {
				t.Errorf("%s: a RunE closure of %d lines (at most %d): move the work into a named run function taking the command's options", start, n, maxRunELines)
			}
			return true
		})
	}
	if closures < 10 {
		t.Fatalf("found %d RunE closures in cmd/: the walk is looking in the wrong place", closures)
	}
}
