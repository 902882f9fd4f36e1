package cks_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// retiredPackages are packages the project had and removed: a comment or a
// doc naming one of their identifiers is out of date.
var retiredPackages = []string{"store"}

// qualified is a qualified identifier as comments and docs write one:
// pkg.Name (a method or field may follow: ledger.Service.GiveBack).
var qualified = regexp.MustCompile(`\b([a-z][a-z0-9]*)\.([A-Za-z_][A-Za-z0-9_]*)\b`)

// TestCommentsNameWhatExists (issue 40): every exported pkg.Name that a
// comment of the Go code (the benchmark module's under bench/ too;
// generated files aside), README.md or docs/*.md
// (but the SDKs' docs/sdk-*.md, whose cks is another language's package)
// (in code spans) writes, where pkg is one of the project's packages, names
// an identifier that package declares — top-level, or a method, a struct
// field or an interface method of one of its types; none names an
// identifier of a retired package. A comment that lies about
// where a rule lives is worse than none.
func TestCommentsNameWhatExists(t *testing.T) {
	fset := token.NewFileSet()
	decls := map[string]map[string]bool{} // package name -> its top-level names
	type text struct{ where, body string }
	var texts []text
	err := walkFiles(func(path string) error {
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return err
		}
		name := f.Name.Name
		if strings.HasSuffix(name, "_test") {
			name = strings.TrimSuffix(name, "_test")
		}
		if decls[name] == nil {
			decls[name] = map[string]bool{}
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				// A method counts too: comments write ledger.Claim for
				// (*ledger.Service).Claim.
				decls[name][d.Name.Name] = true
			case *ast.GenDecl:
				for _, s := range d.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						decls[name][s.Name.Name] = true
						// And a struct's fields and an interface's methods
						// (backend.Clock for backend.Backend.Clock).
						var fl *ast.FieldList
						switch ty := s.Type.(type) {
						case *ast.StructType:
							fl = ty.Fields
						case *ast.InterfaceType:
							fl = ty.Methods
						}
						if fl != nil {
							for _, f := range fl.List {
								for _, n := range f.Names {
									decls[name][n.Name] = true
								}
							}
						}
					case *ast.ValueSpec:
						for _, n := range s.Names {
							decls[name][n.Name] = true
						}
					}
				}
			}
		}
		if ast.IsGenerated(f) {
			return nil // its comments are the generator's (and the SQL's)
		}
		for _, g := range f.Comments {
			texts = append(texts, text{fset.Position(g.Pos()).String(), g.Text()})
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs, _ := filepath.Glob("docs/*.md")
	// The SDKs' docs name their own packages (Python's cks is not Go's).
	docs = slices.DeleteFunc(docs, func(p string) bool { return strings.HasPrefix(filepath.Base(p), "sdk-") })
	for _, p := range append(docs, "README.md") {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			// Only code spans: prose says "e.g." and "i.e.".
			parts := strings.Split(line, "`")
			for j := 1; j < len(parts); j += 2 {
				texts = append(texts, text{p + ":" + strconv.Itoa(i+1), parts[j]})
			}
		}
	}
	delete(decls, "main")
	for _, tx := range texts {
		for _, m := range qualified.FindAllStringSubmatch(tx.body, -1) {
			pkg, name := m[1], m[2]
			switch {
			case slices.Contains(retiredPackages, pkg):
				t.Errorf("%s: %s.%s names the retired package %s", tx.where, pkg, name, pkg)
			case decls[pkg] != nil && !decls[pkg][name] && ast.IsExported(name):
				// Lower case is a file (hub.url, schema.sql) or a host
				// (api.openai.com) as often as an identifier.
				t.Errorf("%s: %s.%s: package %s declares no %s", tx.where, pkg, name, pkg, name)
			}
		}
	}
}
