package knowledge

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"pgregory.net/rapid"
)

// Generators shared by the property tests.

// genDAG draws a version DAG with versions 1..n; version 1 is a root and
// every later version has one or two distinct parents among lower ids (or,
// when extraRoots, possibly none).
func genDAG(t *rapid.T, maxN int, extraRoots bool) map[int64][]int64 {
	n := rapid.IntRange(1, maxN).Draw(t, "n")
	parents := map[int64][]int64{1: nil}
	minParents := 1
	if extraRoots {
		minParents = 0
	}
	for i := int64(2); i <= int64(n); i++ {
		k := rapid.IntRange(minParents, 2).Draw(t, "k")
		var ps []int64
		for range k {
			p := rapid.Int64Range(1, i-1).Draw(t, "parent")
			if !slices.Contains(ps, p) {
				ps = append(ps, p)
			}
		}
		parents[i] = ps
	}
	return parents
}

// refLCA is the brute-force reference: sets of ancestors, common ancestors,
// those not a proper ancestor of another common ancestor, the highest id.
func refLCA(parents map[int64][]int64, a, b int64) (int64, bool) {
	memo := map[int64]map[int64]bool{}
	var anc func(v int64) map[int64]bool
	anc = func(v int64) map[int64]bool {
		if s, ok := memo[v]; ok {
			return s
		}
		s := map[int64]bool{v: true}
		for _, p := range parents[v] {
			for x := range anc(p) {
				s[x] = true
			}
		}
		memo[v] = s
		return s
	}
	var common []int64
	for x := range anc(a) {
		if anc(b)[x] {
			common = append(common, x)
		}
	}
	best, found := int64(0), false
	for _, c := range common {
		lowest := true
		for _, d := range common {
			if d != c && anc(d)[c] {
				lowest = false
				break
			}
		}
		if lowest && (!found || c > best) {
			best, found = c, true
		}
	}
	return best, found
}

var (
	genKey     = rapid.SampledFrom([]string{"a", "b", "c", "d", "e", "f.g", "<&>"})
	genString  = rapid.SampledFrom([]string{"", "x", "y", "z", "a.b", "é", "<b>&"})
	genNumber  = rapid.SampledFrom([]json.Number{"0", "1", "2", "10", "-1", "1.5", "2e3", "1.0"})
	genElement = rapid.SampledFrom([]any{"t1", "t2", "t3", "t4", "t5", json.Number("1"), json.Number("2"), json.Number("10")})
)

// genValue draws a decoded JSON value: scalars, string/number sets, other
// arrays and, above depth 0, objects.
func genValue(t *rapid.T, depth int) any {
	kinds := 8
	if depth > 0 {
		kinds = 10
	}
	switch rapid.IntRange(0, kinds-1).Draw(t, "kind") {
	case 0:
		return nil
	case 1:
		return rapid.Bool().Draw(t, "bool")
	case 2:
		return genNumber.Draw(t, "number")
	case 3, 4:
		return genString.Draw(t, "string")
	case 5, 6:
		return genSet(t)
	case 7:
		n := rapid.IntRange(1, 3).Draw(t, "len")
		a := make([]any, n)
		for i := range a {
			a[i] = rapid.SampledFrom([]any{true, false, nil, map[string]any{"k": "v"}, "s"}).Draw(t, "elem")
		}
		return a
	default:
		return genObject(t, depth-1)
	}
}

func genSet(t *rapid.T) []any {
	n := rapid.IntRange(0, 4).Draw(t, "setlen")
	s := make([]any, n)
	for i := range s {
		s[i] = genElement.Draw(t, "element")
	}
	return s
}

func genObject(t *rapid.T, depth int) map[string]any {
	n := rapid.IntRange(0, 5).Draw(t, "fields")
	m := make(map[string]any, n)
	for range n {
		m[genKey.Draw(t, "key")] = genValue(t, depth)
	}
	return m
}

// editObject draws an edit of obj: each field kept, deleted or edited, and
// a few fields added. With churn, every field is edited (so that both sides
// of a merge often change the same fields, sets included).
func editObject(t *rapid.T, obj map[string]any, depth int, churn bool) map[string]any {
	out := make(map[string]any, len(obj))
	minOp := 0
	if churn {
		minOp = 3
	}
	for _, k := range slices.Sorted(maps.Keys(obj)) {
		switch rapid.IntRange(minOp, 4).Draw(t, "op") {
		case 0, 1:
			out[k] = obj[k]
		case 2: // delete
		default:
			out[k] = editValue(t, obj[k], depth, churn)
		}
	}
	for range rapid.IntRange(0, 2).Draw(t, "adds") {
		out[genKey.Draw(t, "newkey")] = genValue(t, depth)
	}
	return out
}

func editValue(t *rapid.T, v any, depth int, churn bool) any {
	switch v := v.(type) {
	case map[string]any:
		if depth > 0 && rapid.Bool().Draw(t, "recurse") {
			return editObject(t, v, depth-1, churn)
		}
	case []any:
		if _, ok := asSet(v); ok && rapid.IntRange(0, 3).Draw(t, "editset") > 0 {
			var s []any
			for _, e := range v {
				if rapid.IntRange(0, 2).Draw(t, "keep") > 0 {
					s = append(s, e)
				}
			}
			for range rapid.IntRange(0, 2).Draw(t, "setadds") {
				s = append(s, genElement.Draw(t, "added"))
			}
			if s == nil {
				s = []any{}
			}
			return s
		}
	}
	return genValue(t, depth)
}

// marshal encodes v as JSON, sometimes indented and never canonical by
// accident of the test (HTML escaping on), so merge3 has to canonicalise.
func marshal(t *rapid.T, v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	if rapid.Bool().Draw(t, "indent") {
		var buf bytes.Buffer
		if err := json.Indent(&buf, b, "", "  "); err != nil {
			t.Fatalf("indent: %v", err)
		}
		b = buf.Bytes()
	}
	return b
}

// canon is the canonical JSON of raw, per the store.
func canon(tb interface{ Fatalf(string, ...any) }, raw []byte) string {
	c, err := canonicalJSON(raw)
	if err != nil {
		tb.Fatalf("canonical %s: %v", raw, err)
	}
	return string(c)
}
