package cks_test

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// entryPointFolders hold the services and the loops over them: each
// exported function or method of a package under one of them is there for
// a caller outside it — an operation, a sweeper, a command — and tests call
// what those callers call.
var entryPointFolders = []string{"internal/service", "internal/runtime"}

// testSupport packages are non-test files that only tests import: a use of
// theirs is a test's.
var testSupportPackages = []string{"internal/backend/backendtest", "internal/driver/drivertest", "internal/waitfor"}

// knownUnused are the exported functions and methods of the services that
// no non-test file outside their package uses yet, each to be unexported
// (or deleted) with its tests moved to the entry point the callers use; the
// test fails when one of them is used or gone, so the list only shrinks.
var knownUnused = []string{
	"internal/runtime/pipeline.Env.CorpusFor",
	"internal/runtime/pipeline.Orchestrator.RunSequential",
	"internal/runtime/sweeper.Controller.RecentPasses",
	"internal/runtime/sweeper.Controller.SetSweeperDesiredRunning",
	"internal/runtime/sweeper.Registry.Get",
	"internal/runtime/sweeper.Runner.Start",
	"internal/runtime/sweeper.Runner.Status",
	"internal/runtime/sweeper.Runner.Stop",
	// The resolver's calls of ADR 0020 (decisions, workspaces), which no
	// resolver of the product makes yet: to be used, or deleted.
	"internal/runtime/worker.Attempt.Decide",
	"internal/runtime/worker.Attempt.PreviousWorkspaces",
	"internal/runtime/worker.Attempt.ReuseWorkspace",
	"internal/runtime/worker.Attempt.SetWorkspace",
	"internal/service/auth.Allows",
	"internal/service/auth.AllowsWithin",
	"internal/service/auth.Covers",
	"internal/service/auth.HashToken",
	"internal/service/auth.NewToken",
	"internal/service/auth.ParseGrant",
	"internal/service/auth.Service.Check",
	"internal/service/auth.Service.CreatePrincipal",
	"internal/service/auth.Service.CreateSession",
	"internal/service/auth.Service.PrincipalByTokenHash",
	"internal/service/auth.Service.SessionBySecretHash",
	"internal/service/auth.ValidResource",
	"internal/service/knowledge.CanonicalContent",
	"internal/service/knowledge.NewObject.Validate",
	"internal/service/knowledge.ObjectTransition.Validate",
	"internal/service/liveness.AliveUntil",
	"internal/service/liveness.Exited",
	"internal/service/liveness.Reporter.Row",
	"internal/service/liveness.Service.LatestAgentLiveness",
	"internal/service/liveness.StatusAt",
}

// TestServicesExportOnlyWhatIsUsed (issue 40): every exported function, and
// every exported method of an exported type, of a package under
// entryPointFolders is used by a non-test file of another package of this
// repository's modules (the bench module and any other go.mod under it too) —
// called, taken as a value, or reached through an interface the caller
// uses that the type satisfies. One kept only for tests is a second way in
// that the operations do not take (a Stop beside StopTask); it is
// unexported, and its tests call the entry point.
//
// How: each module's packages are type-checked from their source (test
// files left out), their imports read from the compiler's export data that
// `go list -export` leaves in the build cache, so a call is resolved as the
// compiler resolves it (a Stop of the ledger is not a Stop of a sweeper).
func TestServicesExportOnlyWhatIsUsed(t *testing.T) {
	exported, used := scanEntryPoints(t)
	if len(exported) == 0 {
		t.Fatal("found no exported function or method under " + strings.Join(entryPointFolders, ", "))
	}
	perPackage := map[string]int{}
	for _, k := range slices.Sorted(maps.Keys(exported)) {
		perPackage[k[:strings.Index(k, ".")]]++
		if !used[k] && !slices.Contains(knownUnused, k) {
			t.Errorf("%s (%s): exported, but no non-test file outside its package uses it: unexport it (or delete it), and let its tests call the entry point the callers use", k, exported[k])
		}
	}
	for _, k := range knownUnused {
		if _, ok := exported[k]; !ok || used[k] {
			t.Errorf("%s is in knownUnused but is no longer an unused exported function or method: remove it from the list", k)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(perPackage)) {
		t.Logf("%s: %d exported functions and methods", p, perPackage[p])
	}
}

// listedPackage is what scanEntryPoints reads of `go list -json`.
type listedPackage struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	CgoFiles   []string
	Export     string
	Module     *struct{ Main bool }
}

// scanEntryPoints returns the exported functions and methods of the
// packages under entryPointFolders, as "pkg.Func" or "pkg.Type.Method"
// (pkg the path in the module) mapped to where each is declared, and the set
// of those a non-test file of another package (but the testSupportPackages)
// uses.
func scanEntryPoints(t *testing.T) (exported map[string]string, used map[string]bool) {
	t.Helper()
	exported, used = map[string]string{}, map[string]bool{}
	var roots []string
	err := walkFiles(func(path string) error {
		if filepath.Base(path) == "go.mod" {
			roots = append(roots, filepath.Dir(path))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	inScope := func(path string) (string, bool) {
		p, ok := strings.CutPrefix(path, module+"/")
		if !ok {
			return "", false
		}
		for _, f := range entryPointFolders {
			if strings.HasPrefix(p, f+"/") {
				return p, true
			}
		}
		return "", false
	}
	for _, root := range roots {
		cmd := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,CgoFiles,Export,Module", "./...")
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			var stderr []byte
			if ee, ok := err.(*exec.ExitError); ok {
				stderr = ee.Stderr
			}
			t.Fatalf("go list -export in %s: %v\n%s", root, err, stderr)
		}
		var pkgs []listedPackage
		exports := map[string]string{}
		dec := json.NewDecoder(strings.NewReader(string(out)))
		for dec.More() {
			var p listedPackage
			if err := dec.Decode(&p); err != nil {
				t.Fatal(err)
			}
			exports[p.ImportPath] = p.Export
			if p.Module != nil && p.Module.Main {
				pkgs = append(pkgs, p)
			}
		}
		// One universe per module: the module's own packages from source,
		// in go list's order (a package after its imports), the rest from
		// export data.
		fset := token.NewFileSet()
		checked := map[string]*types.Package{}
		gc := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
			f, ok := exports[path]
			if !ok || f == "" {
				return nil, fmt.Errorf("no export data for %s", path)
			}
			return os.Open(f)
		})
		imp := importerFunc(func(path string) (*types.Package, error) {
			if pkg, ok := checked[path]; ok {
				return pkg, nil
			}
			return gc.Import(path)
		})
		// calledOn are the interfaces whose methods a non-test file calls.
		var calledOn []*types.Interface
		for _, p := range pkgs {
			var files []*ast.File
			for _, name := range append(p.GoFiles, p.CgoFiles...) {
				f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution)
				if err != nil {
					t.Fatal(err)
				}
				files = append(files, f)
			}
			info := &types.Info{Uses: map[*ast.Ident]types.Object{}}
			conf := types.Config{Importer: imp, FakeImportC: true}
			pkg, err := conf.Check(p.ImportPath, fset, files, info)
			if err != nil {
				t.Fatalf("type-checking %s: %v", p.ImportPath, err)
			}
			checked[p.ImportPath] = pkg
			// The declared: in the main module only (a nested module
			// sees the same source through its replace).
			if short, ok := inScope(p.ImportPath); ok && root == "." {
				for _, name := range pkg.Scope().Names() {
					switch obj := pkg.Scope().Lookup(name).(type) {
					case *types.Func:
						if obj.Exported() {
							exported[short+"."+name] = fset.Position(obj.Pos()).String()
						}
					case *types.TypeName:
						named, ok := obj.Type().(*types.Named)
						if !ok || !obj.Exported() {
							continue
						}
						for m := range named.Methods() {
							if m.Exported() {
								exported[short+"."+name+"."+m.Name()] = fset.Position(m.Pos()).String()
							}
						}
					}
				}
			}
			if slices.ContainsFunc(testSupportPackages, func(s string) bool { return p.ImportPath == module+"/"+s }) {
				continue
			}
			for _, obj := range info.Uses {
				fn, ok := obj.(*types.Func)
				if !ok || fn.Pkg() == nil {
					continue
				}
				recv := fn.Signature().Recv()
				if recv != nil && namedOf(recv.Type()) == nil {
					if iface, ok := recv.Type().Underlying().(*types.Interface); ok {
						calledOn = append(calledOn, iface)
					}
					continue
				}
				// A function or method of a package in scope but this
				// one that an identifier of this one names.
				short, ok := inScope(fn.Pkg().Path())
				if !ok || fn.Pkg().Path() == p.ImportPath {
					continue
				}
				key := short + "." + fn.Name()
				if recv != nil {
					key = short + "." + namedOf(recv.Type()).Obj().Name() + "." + fn.Name()
				}
				used[key] = true
			}
		}
		// A method of a type in scope is used too when the type satisfies
		// an interface whose method of that name a non-test file calls (a
		// sweeper's SweepOnce through the Sweeper the runner calls), or
		// one the standard library calls (Error, String, Unwrap …).
		for path := range exports {
			short, ok := inScope(path)
			if !ok {
				continue
			}
			pkg, err := imp(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, name := range pkg.Scope().Names() {
				tn, ok := pkg.Scope().Lookup(name).(*types.TypeName)
				if !ok || !tn.Exported() {
					continue
				}
				named, ok := tn.Type().(*types.Named)
				if !ok {
					continue
				}
				ptr := types.NewPointer(named)
				for m := range named.Methods() {
					key := short + "." + name + "." + m.Name()
					if used[key] || !m.Exported() {
						continue
					}
					if sig, ok := calledByTheStandardLibrary[m.Name()]; ok && types.TypeString(m.Signature(), nil) == sig {
						used[key] = true
						continue
					}
					for _, iface := range calledOn {
						if has, _, _ := types.LookupFieldOrMethod(iface, false, nil, m.Name()); has != nil && types.Implements(ptr, iface) {
							used[key] = true
							break
						}
					}
				}
			}
		}
	}
	return exported, used
}

// calledByTheStandardLibrary are the methods, by name and signature, that
// the standard library calls through an interface of its own (error,
// fmt.Stringer, errors.Unwrap's, json.Marshaler …): a type has them for it.
var calledByTheStandardLibrary = map[string]string{
	"Error":         "func() string",
	"String":        "func() string",
	"Unwrap":        "func() error",
	"Is":            "func(error) bool",
	"MarshalJSON":   "func() ([]byte, error)",
	"UnmarshalJSON": "func([]byte) error",
	"MarshalText":   "func() ([]byte, error)",
	"UnmarshalText": "func([]byte) error",
	"LogValue":      "func() log/slog.Value",
}

type importerFunc func(path string) (*types.Package, error)

func (f importerFunc) Import(path string) (*types.Package, error) { return f(path) }

// namedOf is the named type of a method's receiver (T or *T), or nil for an
// interface's method.
func namedOf(t types.Type) *types.Named {
	if p, ok := t.(*types.Pointer); ok {
		t = p.Elem()
	}
	n, ok := t.(*types.Named)
	if !ok {
		return nil
	}
	if _, iface := n.Underlying().(*types.Interface); iface {
		return nil
	}
	return n.Origin()
}
