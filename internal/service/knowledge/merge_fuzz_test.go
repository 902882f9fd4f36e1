package knowledge

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// isObjectText reports whether raw is exactly one JSON object, as merge3
// reads its inputs.
func isObjectText(raw []byte) bool {
	v, err := parseValue(raw)
	_, ok := v.(map[string]any)
	return err == nil && ok
}

// swapped is c with ours and theirs exchanged.
func swapped(cs []Conflict) []Conflict {
	var out []Conflict
	for _, c := range cs {
		c.Ours, c.Theirs = c.Theirs, c.Ours
		out = append(out, c)
	}
	return out
}

// FuzzMerge3 merges arbitrary inputs with the offline resolver: inputs that
// are not JSON objects are ErrNotObject; otherwise the merge succeeds, is
// canonical JSON, is deterministic, does not depend on which head is ours,
// keeps a head merged with itself or with the base whole, and decides every
// conflict by the greater side.
func FuzzMerge3(f *testing.F) {
	for _, s := range [][3]string{
		{`{"a":1}`, `{"a":2}`, `{"a":3}`},
		{`{"t":["x"]}`, `{"t":["x","y"]}`, `{"t":[]}`},
		{`{"o":{"k":1}}`, `{"o":{"k":2,"l":1}}`, `{"o":{"m":3}}`},
		{`{}`, `{"a":null}`, `{"a":false}`},
		{`{"a":1}`, `{}`, `{"a":1.0}`},
		{`{"a":1,"a":2}`, `{"a":"\u0000"}`, `{"a":"\ud800"}`},
		{`{"n":1e400}`, `{"n":-0}`, `{"n":0}`},
		{`null`, `{}`, `{}`},
		{`{}`, `[]`, `{}`},
		{`{} {}`, `{}`, `{}`},
		{``, `{}`, `{}`},
		{`{"a.b":{"c\\d":1}}`, `{"a.b":{"c\\d":2}}`, `{"a.b":{"c\\d":3}}`},
		{`{"d":` + strings.Repeat(`[`, 10001) + strings.Repeat(`]`, 10001) + `}`, `{}`, `{}`},
	} {
		f.Add([]byte(s[0]), []byte(s[1]), []byte(s[2]))
	}
	f.Fuzz(func(t *testing.T, base, ours, theirs []byte) {
		m, cs, err := merge3(base, ours, theirs, nil)
		if !isObjectText(base) || !isObjectText(ours) || !isObjectText(theirs) {
			if !errors.Is(err, ErrNotObject) {
				t.Fatalf("merge3(%q, %q, %q): %v, want ErrNotObject", base, ours, theirs, err)
			}
			return
		}
		if err != nil {
			t.Fatalf("merge3(%q, %q, %q): %v", base, ours, theirs, err)
		}
		if c, err := canonicalJSON(m); err != nil || !bytes.Equal(c, m) || !isObjectText(m) {
			t.Fatalf("merge3(%q, %q, %q) = %s: not a canonical JSON object (%s, %v)", base, ours, theirs, m, c, err)
		}
		m2, cs2, err := merge3(base, ours, theirs, nil)
		if err != nil || !bytes.Equal(m2, m) || !reflect.DeepEqual(cs2, cs) {
			t.Fatalf("merge3(%q, %q, %q) is not deterministic: %s %v then %s %v (%v)", base, ours, theirs, m, cs, m2, cs2, err)
		}
		ms, css, err := merge3(base, theirs, ours, nil)
		if err != nil || !bytes.Equal(ms, m) || !reflect.DeepEqual(css, swapped(cs)) {
			t.Fatalf("merge3 depends on which head is ours: %s %v, swapped %s %v (%v)", m, cs, ms, css, err)
		}
		for _, side := range [][]byte{ours, theirs} {
			want, _ := canonicalJSON(side)
			for _, pair := range [][2][]byte{{side, side}, {base, side}, {side, base}} {
				got, cs, err := merge3(base, pair[0], pair[1], nil)
				if err != nil || !bytes.Equal(got, want) || len(cs) != 0 {
					t.Fatalf("merge3(b, %q, %q) = %s %v (%v), want %s and no conflicts", pair[0], pair[1], got, cs, err, want)
				}
			}
		}
		for _, c := range cs {
			if want, _ := DeterministicResolver(c.Path, c.Base, c.Ours, c.Theirs); !bytes.Equal(c.Chosen, want) {
				t.Fatalf("conflict %+v: chose %s, want %s", c, c.Chosen, want)
			}
		}
		// A resolver that drops every conflict leaves those fields out.
		dropped, dcs, err := merge3(base, ours, theirs, func(string, json.RawMessage, json.RawMessage, json.RawMessage) (json.RawMessage, error) {
			return nil, nil
		})
		if err != nil || len(dcs) != len(cs) || !isObjectText(dropped) {
			t.Fatalf("merge3 with a dropping resolver: %s %v (%v)", dropped, dcs, err)
		}
	})
}

// FuzzMergeHeads merges three heads of a small DAG over a base: the result
// depends only on the set of heads, not on their order or repetition, and one
// head gives its own content, canonicalised.
func FuzzMergeHeads(f *testing.F) {
	f.Add([]byte(`{"a":1,"t":["x"]}`), []byte(`{"a":2}`), []byte(`{"a":3,"t":["y"]}`), []byte(`{"t":["x","z"]}`), false)
	f.Add([]byte(`{}`), []byte(`{"o":{"k":1}}`), []byte(`{"o":{"k":2}}`), []byte(`{"o":[1]}`), true)
	f.Add([]byte(`{}`), []byte(`{}`), []byte(`null`), []byte(`{}`), false)
	f.Fuzz(func(t *testing.T, base, a, b, c []byte, chain bool) {
		// 1 is the root; 2 and 3 branch from it; 4 branches from 2 (chain)
		// or from 1.
		parents := map[int64][]int64{1: nil, 2: {1}, 3: {1}, 4: {1}}
		if chain {
			parents[4] = []int64{2}
		}
		contents := map[int64]json.RawMessage{1: base, 2: a, 3: b, 4: c}
		heads := []int64{3, 4}
		if !chain {
			heads = []int64{2, 3, 4}
		}
		m, cs, err := MergeHeads(parents, contents, heads, nil)
		rev := slices.Clone(heads)
		slices.Reverse(rev)
		for _, order := range [][]int64{rev, append(rev, heads...)} {
			m2, cs2, err2 := MergeHeads(parents, contents, order, nil)
			if (err == nil) != (err2 == nil) || !bytes.Equal(m, m2) || !reflect.DeepEqual(cs, cs2) {
				t.Fatalf("MergeHeads %v = %s %v %v; %v = %s %v %v", heads, m, cs, err, order, m2, cs2, err2)
			}
		}
		if err == nil && !isObjectText(m) {
			t.Fatalf("MergeHeads = %s, not a JSON object", m)
		}
		one, cs1, err := MergeHeads(parents, contents, []int64{3}, nil)
		if want, werr := canonicalJSON(b); isObjectText(b) && (err != nil || werr != nil || !bytes.Equal(one, want) || len(cs1) != 0) {
			t.Fatalf("MergeHeads of one head %q = %s %v (%v), want %s", b, one, cs1, err, want)
		}
	})
}
