package knowledge

import (
	"bytes"
	"encoding/json"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/cks-dev/cks"
)

// canonicalJSON is the store's canonical form, which merge3's output must
// match byte for byte (content hashes are computed over it).
var canonicalJSON = cks.CanonicalJSON

// (a) lca agrees with the brute-force reference on random DAGs and is
// symmetric.
func TestPropLCAMatchesReference(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		extraRoots := rapid.Bool().Draw(t, "extraRoots")
		parents := genDAG(t, 40, extraRoots)
		n := int64(len(parents))
		a := rapid.Int64Range(1, n).Draw(t, "a")
		b := rapid.Int64Range(1, n).Draw(t, "b")
		got, err := lca(parents, a, b)
		want, ok := refLCA(parents, a, b)
		switch {
		case !ok:
			if !errors.Is(err, ErrNoCommonAncestor) {
				t.Fatalf("lca(%d,%d) = %d, %v; want ErrNoCommonAncestor (dag %v)", a, b, got, err, parents)
			}
		case err != nil || got != want:
			t.Fatalf("lca(%d,%d) = %d, %v; want %d (dag %v)", a, b, got, err, want, parents)
		}
		rev, rerr := lca(parents, b, a)
		if rev != got || (rerr == nil) != (err == nil) {
			t.Fatalf("lca not symmetric: lca(%d,%d)=%d,%v lca(%d,%d)=%d,%v", a, b, got, err, b, a, rev, rerr)
		}
	})
}

// MergeBase is a common ancestor of every head and ignores head order.
func TestPropMergeBaseOrderIndependent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parents := genDAG(t, 40, false)
		n := int64(len(parents))
		heads := rapid.SliceOfN(rapid.Int64Range(1, n), 1, 5).Draw(t, "heads")
		base, err := MergeBase(parents, heads)
		if err != nil {
			t.Fatalf("MergeBase(%v): %v", heads, err)
		}
		for _, h := range heads {
			if l, _ := lca(parents, base, h); l != base {
				t.Fatalf("merge base %d is not an ancestor of head %d", base, h)
			}
		}
		perm := rapid.Permutation(heads).Draw(t, "perm")
		if b2, err := MergeBase(parents, perm); err != nil || b2 != base {
			t.Fatalf("MergeBase(%v) = %d, %v; MergeBase(%v) = %d", perm, b2, err, heads, base)
		}
	})
}

// drawMerge draws base, ours and theirs: ours and theirs are random edits
// of base.
func drawMerge(t *rapid.T) (b, o, th json.RawMessage) {
	base := genObject(t, 2)
	churn := rapid.Bool().Draw(t, "churn")
	return marshal(t, base), marshal(t, editObject(t, base, 2, churn)), marshal(t, editObject(t, base, 2, churn))
}

// (b) merge3 with DeterministicResolver does not depend on which head is
// ours; its output is canonical; the conflict lists mirror each other.
func TestPropMerge3HeadOrderIndependent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, o, th := drawMerge(t)
		m1, c1, err := merge3(b, o, th, DeterministicResolver)
		if err != nil {
			t.Fatalf("merge3: %v", err)
		}
		m2, c2, err := merge3(b, th, o, DeterministicResolver)
		if err != nil {
			t.Fatalf("merge3 swapped: %v", err)
		}
		if !bytes.Equal(m1, m2) {
			t.Fatalf("merge3 depends on head order:\nbase   %s\nours   %s\ntheirs %s\n=> %s\nswapped => %s", b, o, th, m1, m2)
		}
		if c := canon(t, m1); c != string(m1) {
			t.Fatalf("output not canonical: %s (canonical %s)", m1, c)
		}
		if len(c1) != len(c2) {
			t.Fatalf("conflicts %v vs %v", c1, c2)
		}
		for i := range c1 {
			x, y := c1[i], c2[i]
			if x.Path != y.Path || !bytes.Equal(x.Base, y.Base) || !bytes.Equal(x.Ours, y.Theirs) ||
				!bytes.Equal(x.Theirs, y.Ours) || !bytes.Equal(x.Chosen, y.Chosen) {
				t.Fatalf("conflict %d: %+v vs swapped %+v", i, x, y)
			}
		}
	})
}

// (c) Merging a head with itself gives the head, canonicalised.
func TestPropMerge3WithItself(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, x, _ := drawMerge(t)
		m, cs, err := merge3(b, x, x, DeterministicResolver)
		if err != nil {
			t.Fatalf("merge3: %v", err)
		}
		if want := canon(t, x); string(m) != want || len(cs) != 0 {
			t.Fatalf("merge3(b, x, x) = %s, %v; want %s, no conflicts", m, cs, want)
		}
	})
}

// (d) A change on one side only is kept whole, on either side.
func TestPropMerge3OneSided(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, x, _ := drawMerge(t)
		want := canon(t, x)
		for _, sides := range [][2]json.RawMessage{{b, x}, {x, b}} {
			m, cs, err := merge3(b, sides[0], sides[1], DeterministicResolver)
			if err != nil {
				t.Fatalf("merge3: %v", err)
			}
			if string(m) != want || len(cs) != 0 {
				t.Fatalf("one-sided merge = %s, %v; want %s", m, cs, want)
			}
		}
	})
}

// Set semantics hold on random sets: the add-wins formula, sorted, with no
// duplicates.
func TestPropSetAddWins(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b, o, th := genSet(t), genSet(t), genSet(t)
		doc := func(s []any) json.RawMessage {
			r, _ := json.Marshal(map[string]any{"tags": s})
			return r
		}
		m, cs, err := merge3(doc(b), doc(o), doc(th), DeterministicResolver)
		if err != nil || len(cs) != 0 {
			t.Fatalf("merge3: %v %v", err, cs)
		}
		var got struct{ Tags []any }
		dec := json.NewDecoder(bytes.NewReader(m))
		dec.UseNumber()
		if err := dec.Decode(&got); err != nil {
			t.Fatal(err)
		}
		in := func(s []any, e any) bool {
			return slices.ContainsFunc(s, func(x any) bool { return setKey(x) == setKey(e) })
		}
		eqB, eqO := equal(b, o), equal(o, th) // rules 1 and 2 keep a side as is
		if eqB || eqO || equal(b, th) {
			return
		}
		for _, e := range append(slices.Clone(o), th...) {
			want := !in(b, e) || (in(o, e) && in(th, e))
			if in(got.Tags, e) != want {
				t.Fatalf("element %v: in result %v, want %v (b %v o %v t %v => %s)", e, !want, want, b, o, th, m)
			}
		}
		for _, e := range got.Tags {
			if !in(o, e) && !in(th, e) {
				t.Fatalf("element %v from nowhere: %s", e, m)
			}
		}
		if !slices.IsSortedFunc(got.Tags, setCompare) {
			t.Fatalf("not sorted: %s", m)
		}
		for i := 1; i < len(got.Tags); i++ {
			if setKey(got.Tags[i-1]) == setKey(got.Tags[i]) {
				t.Fatalf("duplicate: %s", m)
			}
		}
	})
}

// (e) MergeHeads does not depend on the order (or repetition) of heads.
func TestPropMergeHeadsOrderIndependent(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		parents := genDAG(t, 25, false)
		n := int64(len(parents))
		contents := map[int64]json.RawMessage{}
		objs := map[int64]map[string]any{1: genObject(t, 2)}
		contents[1] = marshal(t, objs[1])
		for v := int64(2); v <= n; v++ {
			objs[v] = editObject(t, objs[parents[v][0]], 2, rapid.Bool().Draw(t, "churn"))
			contents[v] = marshal(t, objs[v])
		}
		heads := rapid.SliceOfN(rapid.Int64Range(1, n), 1, 4).Draw(t, "heads")
		m1, c1, err := MergeHeads(parents, contents, heads, DeterministicResolver)
		if err != nil {
			t.Fatalf("MergeHeads(%v): %v", heads, err)
		}
		perm := rapid.Permutation(append(heads, heads[0])).Draw(t, "perm")
		m2, c2, err := MergeHeads(parents, contents, perm, DeterministicResolver)
		if err != nil {
			t.Fatalf("MergeHeads(%v): %v", perm, err)
		}
		if !bytes.Equal(m1, m2) || len(c1) != len(c2) {
			t.Fatalf("MergeHeads(%v) = %s (%d conflicts); MergeHeads(%v) = %s (%d)", heads, m1, len(c1), perm, m2, len(c2))
		}
		if c := canon(t, m1); c != string(m1) {
			t.Fatalf("output not canonical: %s", m1)
		}
	})
}
