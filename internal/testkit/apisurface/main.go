// Command apisurface counts the exported names of a package: top-level
// functions, types, variables and constants, plus the exported methods and
// struct fields of exported types. Usage: go run ./internal/testkit/apisurface DIR...
package main

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

func main() {
	verbose := len(os.Args) > 1 && os.Args[1] == "-v"
	dirs := os.Args[1:]
	if verbose {
		dirs = dirs[1:]
	}
	for _, dir := range dirs {
		names := surface(dir)
		m, f := 0, 0
		for _, n := range names {
			if methods[n] {
				m++
			} else if fields[n] {
				f++
			}
		}
		fmt.Printf("%s\t%d\t(%d top-level, %d methods, %d fields)\n", dir, len(names), len(names)-m-f, m, f)
		if verbose {
			for _, n := range names {
				fmt.Println("\t" + n)
			}
		}
	}
}

// methods and fields mark which of surface's dotted names are methods and
// which are struct fields.
var methods, fields = map[string]bool{}, map[string]bool{}

func surface(dir string) []string {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, 0)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		files = append(files, f)
	}
	var names []string
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv != nil {
					recv := recvName(d.Recv.List[0].Type)
					if !ast.IsExported(recv) {
						continue
					}
					names = append(names, recv+"."+d.Name.Name)
					methods[recv+"."+d.Name.Name] = true
					continue
				}
				names = append(names, d.Name.Name)
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						if !s.Name.IsExported() {
							continue
						}
						names = append(names, s.Name.Name)
						if st, ok := s.Type.(*ast.StructType); ok {
							for _, fl := range st.Fields.List {
								for _, n := range fl.Names {
									if n.IsExported() {
										names = append(names, s.Name.Name+"."+n.Name)
										fields[s.Name.Name+"."+n.Name] = true
									}
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							if n.IsExported() {
								names = append(names, n.Name)
							}
						}
					}
				}
			}
		}
	}
	sort.Strings(names)
	return names
}

func recvName(e ast.Expr) string {
	switch t := e.(type) {
	case *ast.StarExpr:
		return recvName(t.X)
	case *ast.IndexExpr:
		return recvName(t.X)
	case *ast.Ident:
		return t.Name
	}
	return ""
}
