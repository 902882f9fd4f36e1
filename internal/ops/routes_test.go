package ops_test

import (
	"reflect"
	"slices"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// TestRoutesAreTheLeafs: the table is declared on the routes of package cks,
// which a client reads without linking the server: every request/response
// operation of the table is the cks endpoint of its name (the same route and
// input type), in table order, and cks declares no endpoint the table lacks;
// every stream is one of cks's stream routes.
func TestRoutesAreTheLeafs(t *testing.T) {
	var table []string
	for _, op := range ops.All() {
		sp := op.Spec()
		if sp.Stream {
			if r := op.Route(); !slices.Contains([]cks.Route{cks.StreamMetrics, cks.StreamEvents, cks.StreamOpenAPI}, r) {
				t.Errorf("stream %s: route %+v is none of cks's", sp.Name, r)
			}
			continue
		}
		if sp.Surfaces&ops.HTTP == 0 {
			continue
		}
		table = append(table, sp.Name)
		leaf, ok := cks.LookupOperation(sp.Name)
		if !ok {
			t.Errorf("%s: no cks endpoint", sp.Name)
			continue
		}
		if leaf.Route() != op.Route() || op.Route() != (cks.Route{Name: sp.Name, Method: sp.Method, Path: sp.Path}) {
			t.Errorf("%s: cks route %+v, table route %+v (spec %s %s)", sp.Name, leaf.Route(), op.Route(), sp.Method, sp.Path)
		}
		if got, want := reflect.TypeOf(leaf.NewInput()), reflect.TypeOf(op.NewInput()); got != want {
			t.Errorf("%s: cks input %v, table input %v", sp.Name, got, want)
		}
	}
	var leaf []string
	for _, op := range cks.Operations() {
		leaf = append(leaf, op.Route().Name)
	}
	if !slices.Equal(leaf, table) {
		t.Errorf("cks endpoints %v,\ntable's HTTP operations %v", leaf, table)
	}
}
