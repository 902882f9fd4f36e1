package knowledge

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func raw(s string) json.RawMessage {
	if s == "" {
		return nil
	}
	return json.RawMessage(s)
}

func TestMerge3(t *testing.T) {
	tests := []struct {
		name               string
		base, ours, theirs string
		want               string
		conflicts          []Conflict // nil: none
	}{
		{"nothing changed", `{"a":1}`, `{"a":1}`, `{"a":1}`, `{"a":1}`, nil},
		{"canonicalised", `{ "b" : 2, "a" : 1 }`, `{"b":2,"a":1}`, `{"a":1,  "b":2}`, `{"a":1,"b":2}`, nil},
		{"change ours only", `{"a":1,"b":2}`, `{"a":5,"b":2}`, `{"a":1,"b":2}`, `{"a":5,"b":2}`, nil},
		{"change theirs only", `{"a":1,"b":2}`, `{"a":1,"b":2}`, `{"a":1,"b":7}`, `{"a":1,"b":7}`, nil},
		{"disjoint changes", `{"a":1,"b":2}`, `{"a":5,"b":2}`, `{"a":1,"b":7}`, `{"a":5,"b":7}`, nil},
		{"add on each side", `{}`, `{"a":1}`, `{"b":2}`, `{"a":1,"b":2}`, nil},
		{"delete ours only", `{"a":1,"b":2}`, `{"b":2}`, `{"a":1,"b":2}`, `{"b":2}`, nil},
		{"delete theirs, change ours elsewhere", `{"a":1,"b":2}`, `{"a":1,"b":3}`, `{"b":2}`, `{"b":3}`, nil},
		{"deleted on both sides", `{"a":1,"b":2}`, `{"b":2}`, `{"b":2}`, `{"b":2}`, nil},
		{"same change on both sides", `{"a":1}`, `{"a":"x"}`, `{"a":"x"}`, `{"a":"x"}`, nil},
		{"same addition on both sides", `{}`, `{"a":[1,{"k":2}]}`, `{"a":[1,{"k":2}]}`, `{"a":[1,{"k":2}]}`, nil},
		{"null is a value", `{"a":null}`, `{"a":null}`, `{}`, `{}`, nil},
		{"one-sided set change kept as is", `{"tags":["a","b"]}`, `{"tags":["c","a","b"]}`, `{"tags":["a","b"]}`,
			`{"tags":["c","a","b"]}`, nil},
		{"sets: additions on both sides", `{"tags":["a"]}`, `{"tags":["a","c"]}`, `{"tags":["b","a"]}`,
			`{"tags":["a","b","c"]}`, nil},
		{"sets: removal by one side, addition by the other", `{"tags":["a","b"]}`, `{"tags":["b"]}`, `{"tags":["a","b","c"]}`,
			`{"tags":["b","c"]}`, nil},
		{"sets: both add the same and remove different", `{"tags":["a","b","c"]}`, `{"tags":["a","x"]}`, `{"tags":["c","x","x"]}`,
			`{"tags":["x"]}`, nil},
		{"sets: removed everything vs added", `{"tags":["a"]}`, `{"tags":[]}`, `{"tags":["a","b"]}`, `{"tags":["b"]}`, nil},
		{"sets: numbers by value before strings", `{"c":[]}`, `{"c":[10,"b",2]}`, `{"c":[1,"a",1.0]}`,
			`{"c":[1,1.0,2,10,"a","b"]}`, nil},
		{"sets: added by both sides, no base", `{}`, `{"tags":["z","a"]}`, `{"tags":["m"]}`, `{"tags":["a","m","z"]}`, nil},
		{"sets: base not a set", `{"tags":"a"}`, `{"tags":["a","b"]}`, `{"tags":["c"]}`, `{"tags":["a","b","c"]}`, nil},
		{"nested one-sided changes", `{"a":{"b":1,"c":1}}`, `{"a":{"b":2,"c":1}}`, `{"a":{"b":1,"c":3}}`,
			`{"a":{"b":2,"c":3}}`, nil},
		{"nested objects added on both sides", `{}`, `{"a":{"x":1}}`, `{"a":{"y":2}}`, `{"a":{"x":1,"y":2}}`, nil},
		{"scalar conflict", `{"a":1}`, `{"a":2}`, `{"a":3}`, `{"a":3}`,
			[]Conflict{{Path: "a", Base: raw(`1`), Ours: raw(`2`), Theirs: raw(`3`), Chosen: raw(`3`)}}},
		{"nested conflict path", `{"a":{"b":"x","c":1}}`, `{"a":{"b":"y","c":1}}`, `{"a":{"b":"z","c":2}}`,
			`{"a":{"b":"z","c":2}}`,
			[]Conflict{{Path: "a.b", Base: raw(`"x"`), Ours: raw(`"y"`), Theirs: raw(`"z"`), Chosen: raw(`"z"`)}}},
		{"conflict in both-added field has no base", `{}`, `{"a":"p"}`, `{"a":"q"}`, `{"a":"q"}`,
			[]Conflict{{Path: "a", Ours: raw(`"p"`), Theirs: raw(`"q"`), Chosen: raw(`"q"`)}}},
		{"modify beats delete", `{"a":1,"b":1}`, `{"b":1}`, `{"a":2,"b":1}`, `{"a":2,"b":1}`,
			[]Conflict{{Path: "a", Base: raw(`1`), Theirs: raw(`2`), Chosen: raw(`2`)}}},
		{"non-set arrays conflict", `{"a":[{"x":1}]}`, `{"a":[{"x":2}]}`, `{"a":[{"x":3}]}`, `{"a":[{"x":3}]}`,
			[]Conflict{{Path: "a", Base: raw(`[{"x":1}]`), Ours: raw(`[{"x":2}]`), Theirs: raw(`[{"x":3}]`), Chosen: raw(`[{"x":3}]`)}}},
		{"set vs scalar conflict", `{"a":["t"]}`, `{"a":["t","u"]}`, `{"a":"t"}`, `{"a":["t","u"]}`,
			[]Conflict{{Path: "a", Base: raw(`["t"]`), Ours: raw(`["t","u"]`), Theirs: raw(`"t"`), Chosen: raw(`["t","u"]`)}}},
		{"object vs scalar conflict", `{"a":{"k":1}}`, `{"a":{"k":2}}`, `{"a":5}`, `{"a":{"k":2}}`,
			[]Conflict{{Path: "a", Base: raw(`{"k":1}`), Ours: raw(`{"k":2}`), Theirs: raw(`5`), Chosen: raw(`{"k":2}`)}}},
		{"escaped path, conflicts in key order", `{"x.y":{"a\\b":0},"b":0}`, `{"x.y":{"a\\b":1},"b":1}`, `{"x.y":{"a\\b":2},"b":2}`,
			`{"b":2,"x.y":{"a\\b":2}}`,
			[]Conflict{
				{Path: "b", Base: raw(`0`), Ours: raw(`1`), Theirs: raw(`2`), Chosen: raw(`2`)},
				{Path: `x\.y.a\\b`, Base: raw(`0`), Ours: raw(`1`), Theirs: raw(`2`), Chosen: raw(`2`)},
			}},
		{"html not escaped", `{"a":"<"}`, `{"a":"<&>"}`, `{"a":"<"}`, `{"a":"<&>"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, cs, err := merge3(raw(tt.base), raw(tt.ours), raw(tt.theirs), DeterministicResolver)
			if err != nil {
				t.Fatalf("merge3: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("merged = %s, want %s", got, tt.want)
			}
			if !reflect.DeepEqual(cs, tt.conflicts) {
				t.Errorf("conflicts = %s, want %s", js(cs), js(tt.conflicts))
			}
			// Head order does not matter, and nil resolve is the default.
			got2, _, err := merge3(raw(tt.base), raw(tt.theirs), raw(tt.ours), nil)
			if err != nil || string(got2) != tt.want {
				t.Errorf("swapped = %s, %v; want %s", got2, err, tt.want)
			}
		})
	}
}

func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestMerge3NotObjects(t *testing.T) {
	ok := `{"a":1}`
	for _, bad := range []string{``, `   `, `[1]`, `"s"`, `1`, `null`, `{"a":`, `{} {}`, `{}x`, `nope`} {
		for i, in := range [][3]string{{bad, ok, ok}, {ok, bad, ok}, {ok, ok, bad}} {
			_, _, err := merge3(raw(in[0]), raw(in[1]), raw(in[2]), nil)
			if !errors.Is(err, ErrNotObject) {
				t.Errorf("input %d = %q: err %v, want ErrNotObject", i, bad, err)
			}
			if err != nil && !strings.Contains(err.Error(), []string{"base", "ours", "theirs"}[i]) {
				t.Errorf("input %d = %q: error %q does not name the input", i, bad, err)
			}
		}
	}
}

func TestMerge3Resolver(t *testing.T) {
	base, ours, theirs := raw(`{"a":{"b":1},"c":1,"d":1}`), raw(`{"a":{"b":2},"c":2}`), raw(`{"a":{"b":3},"c":3,"d":4}`)
	var calls []string
	// Keeps ours for a.b, drops c, and passes d (ours deleted it) through
	// with base shown.
	res := func(path string, b, o, th json.RawMessage) (json.RawMessage, error) {
		calls = append(calls, path+" "+string(b)+" "+string(o)+" "+string(th))
		switch path {
		case "a.b":
			return json.RawMessage(` 20 `), nil
		case "c":
			return nil, nil
		}
		return o, nil // d: nil, the deletion
	}
	got, cs, err := merge3(base, ours, theirs, res)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != `{"a":{"b":20}}` {
		t.Errorf("merged = %s", got)
	}
	wantCalls := []string{"a.b 1 2 3", "c 1 2 3", "d 1  4"}
	if !reflect.DeepEqual(calls, wantCalls) {
		t.Errorf("calls = %q, want %q", calls, wantCalls)
	}
	wantCs := []Conflict{
		{Path: "a.b", Base: raw(`1`), Ours: raw(`2`), Theirs: raw(`3`), Chosen: raw(`20`)},
		{Path: "c", Base: raw(`1`), Ours: raw(`2`), Theirs: raw(`3`)},
		{Path: "d", Base: raw(`1`), Theirs: raw(`4`)},
	}
	if !reflect.DeepEqual(cs, wantCs) {
		t.Errorf("conflicts = %s, want %s", js(cs), js(wantCs))
	}

	boom := errors.New("model down")
	_, _, err = merge3(base, ours, theirs, func(string, json.RawMessage, json.RawMessage, json.RawMessage) (json.RawMessage, error) {
		return nil, boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), `"a.b"`) {
		t.Errorf("resolver error: %v", err)
	}
	_, _, err = merge3(base, ours, theirs, func(string, json.RawMessage, json.RawMessage, json.RawMessage) (json.RawMessage, error) {
		return json.RawMessage(`{"x":`), nil
	})
	if err == nil {
		t.Error("invalid resolver value: no error")
	}
}

func TestDeterministicResolver(t *testing.T) {
	for _, tt := range []struct{ ours, theirs, want string }{
		{`1`, `2`, `2`},
		{`"b"`, `"a"`, `"b"`},
		{`"a"`, `1`, `1`}, // '1' > '"' bytewise
		{``, `0`, `0`},    // a value beats a deletion
		{`null`, ``, `null`},
		{`{"b":1, "a":2}`, `{"a":1}`, `{"a":2,"b":1}`},
	} {
		for _, sides := range [][2]string{{tt.ours, tt.theirs}, {tt.theirs, tt.ours}} {
			got, err := DeterministicResolver("p", nil, raw(sides[0]), raw(sides[1]))
			if err != nil || string(got) != tt.want {
				t.Errorf("DeterministicResolver(%s, %s) = %s, %v; want %s", sides[0], sides[1], got, err, tt.want)
			}
		}
	}
	if _, err := DeterministicResolver("p", nil, raw(`{`), raw(`1`)); err == nil {
		t.Error("invalid JSON: no error")
	}
}

func TestMergeHeads(t *testing.T) {
	// 1 ─ 2 ─ 3
	//  \
	//   4 ─ 5
	//    \
	//     6
	parents := map[int64][]int64{1: nil, 2: {1}, 3: {2}, 4: {1}, 5: {4}, 6: {4}}
	contents := map[int64]json.RawMessage{
		1: raw(`{"title":"t","tags":["x"],"n":0}`),
		2: raw(`{"title":"t2","tags":["x"],"n":0}`),
		3: raw(`{"title":"t2","tags":["x","a"],"n":0}`),
		4: raw(`{"title":"t","tags":["x","b"],"n":1}`),
		5: raw(`{"title":"t","tags":["b"],"n":2}`),
		6: raw(`{"title":"t","tags":["x","b","c"],"n":1,"extra":true}`),
	}
	// Base 1. Fold 3 with 5: title from 3; tags {a} ∪ {b}, x removed by 5;
	// n from 5. Then with 6: extra added; tags gain c, x stays removed (the
	// accumulator dropped it and base had it); n conflicts (acc 2, 6 has 1,
	// base 0) and the greater, 2, is kept.
	want := `{"extra":true,"n":2,"tags":["a","b","c"],"title":"t2"}`
	wantCs := []Conflict{{Path: "n", Base: raw(`0`), Ours: raw(`2`), Theirs: raw(`1`), Chosen: raw(`2`)}}
	for _, heads := range [][]int64{{3, 5, 6}, {6, 5, 3}, {5, 3, 6, 3}} {
		got, cs, err := MergeHeads(parents, contents, heads, nil)
		if err != nil || string(got) != want || !reflect.DeepEqual(cs, wantCs) {
			t.Errorf("MergeHeads(%v) = %s, %s, %v; want %s, %s", heads, got, js(cs), err, want, js(wantCs))
		}
	}
	got, _, err := MergeHeads(parents, contents, []int64{5}, nil)
	if err != nil || string(got) != `{"n":2,"tags":["b"],"title":"t"}` {
		t.Errorf("one head = %s, %v", got, err)
	}
	// Base 4: n changed by 5 only, tags merged as sets.
	got, cs, err := MergeHeads(parents, contents, []int64{6, 5}, nil)
	if want := `{"extra":true,"n":2,"tags":["b","c"],"title":"t"}`; err != nil || string(got) != want || len(cs) != 0 {
		t.Errorf("MergeHeads(6, 5) = %s, %s, %v; want %s", got, js(cs), err, want)
	}
	// Both heads deleted title and tags (no conflict) and set n differently.
	c2 := map[int64]json.RawMessage{1: contents[1], 2: raw(`{"n":5}`), 4: raw(`{"n":7}`)}
	p2 := map[int64][]int64{1: nil, 2: {1}, 4: {1}}
	got, cs, err = MergeHeads(p2, c2, []int64{4, 2}, nil)
	wantCs = []Conflict{{Path: "n", Base: raw(`0`), Ours: raw(`5`), Theirs: raw(`7`), Chosen: raw(`7`)}}
	if err != nil || string(got) != `{"n":7}` || !reflect.DeepEqual(cs, wantCs) {
		t.Errorf("conflicting heads = %s, %s, %v", got, js(cs), err)
	}

	if _, _, err := MergeHeads(parents, contents, nil, nil); err == nil {
		t.Error("no heads: no error")
	}
	if _, _, err := MergeHeads(parents, contents, []int64{3, 9}, nil); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("unknown head: %v", err)
	}
	missing := map[int64]json.RawMessage{3: contents[3], 5: contents[5]}
	if _, _, err := MergeHeads(parents, missing, []int64{3, 5}, nil); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("missing base content: %v", err)
	}
	bad := map[int64]json.RawMessage{1: contents[1], 3: raw(`[1]`), 5: contents[5]}
	if _, _, err := MergeHeads(parents, bad, []int64{3, 5}, nil); !errors.Is(err, ErrNotObject) {
		t.Errorf("non-object head: %v", err)
	}
	noBase := map[int64][]int64{1: nil, 2: nil}
	if _, _, err := MergeHeads(noBase, map[int64]json.RawMessage{1: raw(`{}`), 2: raw(`{}`)}, []int64{1, 2}, nil); !errors.Is(err, ErrNoCommonAncestor) {
		t.Errorf("no common ancestor: %v", err)
	}
}
