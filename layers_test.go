package cks_test

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// layers is the module's layering, lowest first (docs/architecture.md): a
// package imports only packages of lower layers — never one of its own
// layer (sideways) or of a higher one (upward). Its tests may import what
// it may, itself, and the layers named in testsAlso. A package of the
// module that is in no layer fails the test, so a new one is placed on
// purpose.
var layers = []struct {
	name      string
	pkgs      []string
	testsAlso []string // layers the package's tests may import besides
}{
	// The tests' waits on a condition (every layer's tests share them).
	{name: "test waits", pkgs: []string{"internal/waitfor"}},
	{name: "leaf", pkgs: []string{""}},
	// Every CKS_* setting: its name, default, bounds and parser, one
	// struct per component, which the commands hand down.
	{name: "configuration", pkgs: []string{"internal/config"}},
	{name: "primitives", pkgs: []string{"clock", "corpus", "events", "lifecycle", "datadir", "client", "groupcommit", "jsonlines", "studio/chart",
		"cmd/cks/internal/shutdown"}},
	{name: "driver", pkgs: []string{"driver"}},
	{name: "driver support", pkgs: []string{"driver/schema", "driver/internal/dberr", "driver/internal/nullable",
		"driver/internal/scratch"}},
	// The drivers' conformance suite and the test databases every test
	// shares (backend/backendtest builds on them).
	{name: "driver test support", pkgs: []string{"driver/drivertest"}},
	{name: "driver generator", pkgs: []string{"driver/internal/dbgen"}},
	{name: "dialect queries", pkgs: []string{"driver/postgres/internal/dbsqlc", "driver/sqlite/internal/dbsqlc"}},
	{name: "dialects", pkgs: []string{"driver/postgres", "driver/sqlite"}},
	{name: "services", pkgs: []string{"ledger", "knowledge", "liveness", "auth", "lease", "notifier", "llm", "leader"},
		testsAlso: testSupport},
	{name: "services over services", pkgs: []string{"sweeper", "pipeline", "worker"}, testsAlso: testSupport},
	// One database's services over the driver its URL names.
	{name: "backend", pkgs: []string{"backend"}, testsAlso: testSupport},
	// The test support: fresh databases of both backends, the services'
	// behaviour tables run on them, and the fixtures tests above share.
	{name: "test support: both backends", pkgs: []string{"backend/backendtest"}},
	{name: "programs over the services", pkgs: []string{"agents", "bench"}, testsAlso: testSupport},
	{name: "operations", pkgs: []string{"ops"}, testsAlso: testSupport},
	// A surface's end-to-end tests serve what a hub serves.
	{name: "surfaces", pkgs: []string{"api", "mcpserver", "studio"}, testsAlso: append([]string{"surfaces", "hub"}, testSupport...)},
	{name: "hub", pkgs: []string{"hub"}, testsAlso: testSupport},
	{name: "commands", pkgs: []string{"cmd/cks"}, testsAlso: testSupport},
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
	rank := map[string]int{}
	for i, l := range layers {
		for _, p := range l.pkgs {
			rank[p] = i
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
		if strings.HasPrefix(p, "tools") || strings.HasPrefix(p, "bench/peers") {
			continue // modules of their own
		}
		r, ok := rank[p]
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
				dr, known := rank[d]
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

// layerOf is the name of the layer of the package p ("cks" for the leaf).
func layerOf(p string) string {
	if p == "cks" {
		p = ""
	}
	for _, l := range layers {
		if slices.Contains(l.pkgs, p) {
			return l.name
		}
	}
	return "none"
}
