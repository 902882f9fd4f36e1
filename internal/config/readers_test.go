package config_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// moduleRoot is the module's directory, from this package's.
const moduleRoot = "../.."

// notSettings are the CKS_ variables read outside this package, each in
// the one file named, and why it is no setting of cks.
var notSettings = map[string]string{
	// The test databases every package's tests share (test support, in no
	// product binary).
	"internal/driver/drivertest/databases.go CKS_TEST_DATABASE_URL": "the tests' Postgres",
	"internal/driver/drivertest/databases.go CKS_TEST_POOLER_URL":   "the tests' connection pooler",
	// A marker the exec agent sets for its own binary, started again as
	// the guard of a command; read before main, configures nothing.
	"internal/agents/exec_linux.go CKS_EXEC_GUARD": "the exec guard's marker",
	// The exec guard reads the marker the agent set for the command (its
	// reports pipe, handed on as fd 3): a protocol name, configures nothing.
	"internal/agents/exec_linux.go CKS_REPORT_FD": "the exec command's reports pipe",
	// The OTLP receiver .ci/run builds for the traces' tests (test support,
	// in no product binary).
	"internal/backend/backendtest/otlp.go CKS_OTELCOL": "the tests' OTLP receiver",
	// Read in the init of a package that may import nothing but the
	// standard library (it catches signals before any other package is
	// initialised); a process-level test's marker.
	"cmd/cks/internal/shutdown/shutdown.go CKS_TEST_SIGNALS_READY": "the early-signal test's marker",
}

// TestNoOtherPackageReadsSettings (issue 40): no Go file of the module
// outside this package reads a CKS_ variable — a call of a function named
// Getenv, getenv, LookupEnv or lookupEnv whose argument is a CKS_ name
// written out, a constant holding one, or a name built from one, or that
// is not a constant at all — but for notSettings. The packages receive
// their settings from their callers, parsed here.
func TestNoOtherPackageReadsSettings(t *testing.T) {
	fset := token.NewFileSet()
	files := map[string]*ast.File{}
	consts := map[string]string{} // a string constant's name → its value, module-wide
	err := filepath.WalkDir(moduleRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(moduleRoot, path)
		rel = filepath.ToSlash(rel)
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			if strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules" || rel == "internal/config" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own
			}
			return nil
		}
		if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		files[rel] = f
		for _, decl := range f.Decls {
			g, ok := decl.(*ast.GenDecl)
			if !ok || g.Tok != token.CONST {
				continue
			}
			for _, spec := range g.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							consts[name.Name], _ = strconv.Unquote(lit.Value)
						}
					}
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 100 {
		t.Fatalf("found only %d Go files: the walk missed the module", len(files))
	}
	// name is the variable an argument names: its text when it is one
	// written out, a constant or a sum starting with one; ok false when it
	// is not a constant (a variable, a call).
	var name func(e ast.Expr) (string, bool)
	name = func(e ast.Expr) (string, bool) {
		switch e := e.(type) {
		case *ast.BasicLit:
			s, err := strconv.Unquote(e.Value)
			return s, err == nil
		case *ast.Ident:
			s, ok := consts[e.Name]
			return s, ok
		case *ast.SelectorExpr:
			s, ok := consts[e.Sel.Name]
			return s, ok
		case *ast.BinaryExpr:
			return name(e.X)
		case *ast.ParenExpr:
			return name(e.X)
		}
		return "", false
	}
	used := map[string]bool{}
	for _, rel := range slices.Sorted(maps.Keys(files)) {
		ast.Inspect(files[rel], func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			var fn string
			switch f := call.Fun.(type) {
			case *ast.Ident:
				fn = f.Name
			case *ast.SelectorExpr:
				fn = f.Sel.Name
			}
			switch strings.ToLower(fn) {
			case "getenv", "lookupenv":
			default:
				return true
			}
			v, ok := name(call.Args[0])
			at := fset.Position(call.Pos())
			switch {
			case !ok:
				t.Errorf("%s:%d reads a variable whose name is not a constant: read settings through internal/config", rel, at.Line)
			case strings.HasPrefix(v, "CKS_") && notSettings[rel+" "+v] == "":
				t.Errorf("%s:%d reads %s: parse it in internal/config and hand the component its settings", rel, at.Line, v)
			case strings.HasPrefix(v, "CKS_"):
				used[rel+" "+v] = true
			}
			return true
		})
	}
	for k := range notSettings {
		if !used[k] {
			t.Errorf("notSettings has %q, which is no longer read there: remove it", k)
		}
	}
}
