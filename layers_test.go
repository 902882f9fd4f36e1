package cks_test

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// layers is the module's layering, lowest first (docs/architecture.md), as
// folders: a package is in the layer of the longest folder of the table that
// is its directory or holds it (internal/driver/postgres/internal/dbsqlc is
// in "dialect queries", internal/driver/postgres/x would be in "dialects"),
// so the folder a package sits in says its layer, and a new package under
// internal/service is a service without an edit here. The root package is
// the leaf alone. A package imports only packages of lower layers — never
// one of its own layer (sideways) or of a higher one (upward). Its tests may
// import what it may, itself, and the layers named in testsAlso. A package
// in no folder of the table fails the test, so a new folder is placed on
// purpose; a folder of the table that does not exist fails it too.
var layers = []struct {
	name      string
	dirs      []string
	testsAlso []string // layers the package's tests may import besides
}{
	// The tests' waits on a condition (every layer's tests share them).
	{name: "test waits", dirs: []string{"internal/waitfor"}},
	{name: "leaf", dirs: []string{""}},
	// Every CKS_* setting: its name, default, bounds and parser, one
	// struct per component, which the commands hand down.
	{name: "configuration", dirs: []string{"internal/config"}},
	{name: "primitives", dirs: []string{"internal/base", "client", "cmd/cks/internal/shutdown"}},
	{name: "driver", dirs: []string{"internal/driver"}},
	{name: "driver support", dirs: []string{"internal/driver/schema", "internal/driver/internal"}},
	// The drivers' conformance suite and the test databases every test
	// shares (internal/backend/backendtest builds on them).
	{name: "driver test support", dirs: []string{"internal/driver/drivertest"}},
	{name: "driver generator", dirs: []string{"internal/driver/internal/dbgen"}},
	{name: "dialect queries", dirs: []string{"internal/driver/postgres/internal/dbsqlc", "internal/driver/sqlite/internal/dbsqlc"}},
	{name: "dialects", dirs: []string{"internal/driver/postgres", "internal/driver/sqlite"}},
	{name: "services", dirs: []string{"internal/service"}, testsAlso: testSupport},
	// The loops that run over the services: the sweepers, the research
	// pipeline, the worker of a task.
	{name: "services over services", dirs: []string{"internal/runtime"}, testsAlso: testSupport},
	// One database's services over the driver its URL names.
	{name: "backend", dirs: []string{"internal/backend"}, testsAlso: testSupport},
	// The test support: fresh databases of both backends, the services'
	// behaviour tables run on them, and the fixtures tests above share.
	{name: "test support: both backends", dirs: []string{"internal/backend/backendtest"}},
	{name: "programs over the services", dirs: []string{"internal/agents"}, testsAlso: testSupport},
	{name: "operations", dirs: []string{"internal/ops"}, testsAlso: testSupport},
	// A surface's end-to-end tests serve what a hub serves.
	{name: "surfaces", dirs: []string{"internal/surface"}, testsAlso: append([]string{"surfaces", "hub"}, testSupport...)},
	{name: "hub", dirs: []string{"internal/hub"}, testsAlso: testSupport},
	{name: "commands", dirs: []string{"cmd/cks"}, testsAlso: testSupport},
}

// testSupport are the layers of the stores and fixtures tests share.
var testSupport = []string{"backend", "test support: both backends"}

// knownViolations are the imports that break the layering, each to be
// removed; the test fails when one is no longer made, so the list only
// shrinks. "pkg -> dep" is an import of the package, "pkg [test] -> dep"
// one of its tests only. None is left (issue 23).
var knownViolations []string

const module = "github.com/cks-dev/cks"

// TestLayers: every import inside the module, of a package or of its
// tests, runs downward through layers (or is one of knownViolations).
func TestLayers(t *testing.T) {
	out, err := exec.Command("go", "list", "-json=ImportPath,Imports,TestImports,XTestImports", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, l := range layers {
		for _, d := range l.dirs {
			if fi, err := os.Stat(filepath.Join(".", d)); err != nil || !fi.IsDir() {
				t.Errorf("layer %q names folder %q, which is no directory: remove or fix it", l.name, d)
			}
		}
	}
	short := func(path string) (string, bool) {
		if path == module {
			return "", true
		}
		p, ok := strings.CutPrefix(path, module+"/")
		return p, ok
	}
	name := func(p string) string {
		if p == "" {
			return "cks"
		}
		return p
	}
	var found []string
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for dec.More() {
		var pkg struct {
			ImportPath                         string
			Imports, TestImports, XTestImports []string
		}
		if err := dec.Decode(&pkg); err != nil {
			t.Fatal(err)
		}
		p, _ := short(pkg.ImportPath)
		if strings.HasPrefix(p, "tools") || strings.HasPrefix(p, "bench") {
			continue // modules of their own (bench/: the benchmark harness)
		}
		r, ok := layerIndex(p)
		if !ok {
			t.Errorf("package %s is in no layer of layers_test.go: place it", name(p))
			continue
		}
		check := func(imports []string, test bool) {
			for _, imp := range imports {
				d, ok := short(imp)
				if !ok || (test && d == p) {
					continue
				}
				dr, known := layerIndex(d)
				if !known {
					continue // reported as its own package
				}
				if dr < r || (test && slices.Contains(layers[r].testsAlso, layers[dr].name)) {
					continue
				}
				tag := ""
				if test {
					tag = " [test]"
				}
				v := fmt.Sprintf("%s%s -> %s", name(p), tag, name(d))
				if !slices.Contains(found, v) {
					found = append(found, v)
				}
			}
		}
		check(pkg.Imports, false)
		check(append(pkg.TestImports, pkg.XTestImports...), true)
	}
	for _, v := range found {
		if !slices.Contains(knownViolations, v) {
			from, to, _ := strings.Cut(v, " -> ")
			from, _, _ = strings.Cut(from, " ")
			t.Errorf("%s: %s (layer %q) may not import %s (layer %q): layers run downward", v,
				from, layerOf(from), to, layerOf(to))
		}
	}
	for _, v := range knownViolations {
		if !slices.Contains(found, v) {
			t.Errorf("%q is no longer made: remove it from knownViolations", v)
		}
	}
}

// layerIndex is the index in layers of the layer of the package p (its path
// in the module, "" for the leaf): the layer of the longest folder that is p
// or holds it.
func layerIndex(p string) (int, bool) {
	at, best := -1, -1
	for i, l := range layers {
		for _, d := range l.dirs {
			holds := d == p || (d != "" && strings.HasPrefix(p, d+"/"))
			if holds && len(d) > best {
				at, best = i, len(d)
			}
		}
	}
	return at, at >= 0
}

// layerOf is the name of the layer of the package p ("cks" for the leaf).
func layerOf(p string) string {
	if p == "cks" {
		p = ""
	}
	if i, ok := layerIndex(p); ok {
		return layers[i].name
	}
	return "none"
}
