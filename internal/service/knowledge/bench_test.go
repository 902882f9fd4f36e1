package knowledge

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
)

// merge1k builds a 1,000-field base (strings, numbers, nested objects and
// tag sets), ours changing every field i%10 == 0 and theirs every field
// i%10 == 1 (10% each), and both changing fields 5, 255, 505, 755 (scalars,
// differently: true conflicts) and 8, 508 (sets: add-wins, no conflict).
func merge1k(tb testing.TB) (base, ours, theirs json.RawMessage) {
	b, o, t := map[string]any{}, map[string]any{}, map[string]any{}
	for i := range 1000 {
		k := fmt.Sprintf("f%04d", i)
		var v any
		switch i % 4 {
		case 0:
			v = fmt.Sprintf("value %d", i)
		case 1:
			v = i
		case 2:
			v = map[string]any{"x": i, "y": "nested", "z": []any{1, "two"}}
		case 3:
			v = []any{"tag-a", "tag-b", fmt.Sprintf("tag-%d", i)}
		}
		b[k], o[k], t[k] = v, v, v
		switch {
		case i%10 == 0:
			o[k] = fmt.Sprintf("ours %d", i)
		case i%10 == 1:
			t[k] = fmt.Sprintf("theirs %d", i)
		}
	}
	for _, i := range []int{5, 255, 505, 755} {
		k := fmt.Sprintf("f%04d", i)
		o[k], t[k] = "ours", "theirs"
	}
	for _, i := range []int{8, 508} { // string fields turned into sets
		k := fmt.Sprintf("f%04d", i)
		b[k] = []any{"a", "b"}
		o[k] = []any{"a", "b", "c"}
		t[k] = []any{"b", "d"}
	}
	enc := func(m map[string]any) json.RawMessage {
		r, err := json.Marshal(m)
		if err != nil {
			tb.Fatal(err)
		}
		return r
	}
	return enc(b), enc(o), enc(t)
}

func BenchmarkMerge3_1kFields(b *testing.B) {
	base, ours, theirs := merge1k(b)
	_, cs, err := merge3(base, ours, theirs, DeterministicResolver)
	if err != nil || len(cs) != 4 {
		b.Fatalf("setup: %d conflicts, %v", len(cs), err)
	}
	b.SetBytes(int64(len(base) + len(ours) + len(theirs)))
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := merge3(base, ours, theirs, DeterministicResolver); err != nil {
			b.Fatal(err)
		}
	}
}

// history1k builds a 1,000-version DAG with branches and merges: versions
// extend a random live head; about 10% fork a new head off an existing one
// and about 8% merge two heads. It returns the DAG and the live heads.
func history1k() (map[int64][]int64, []int64) {
	rng := rand.New(rand.NewPCG(8, 1000))
	parents := map[int64][]int64{1: nil}
	heads := []int64{1}
	for v := int64(2); v <= 1000; v++ {
		i := rng.IntN(len(heads))
		switch r := rng.IntN(100); {
		case r < 10 || len(heads) < 2: // fork: a new head beside the old
			parents[v] = []int64{heads[i]}
			heads = append(heads, v)
		case r < 18: // merge two heads
			j := (i + 1 + rng.IntN(len(heads)-1)) % len(heads)
			parents[v] = []int64{heads[i], heads[j]}
			heads[i] = v
			heads = append(heads[:j], heads[j+1:]...)
		default: // a write on a head
			parents[v] = []int64{heads[i]}
			heads[i] = v
		}
	}
	return parents, heads
}

func BenchmarkLCA_1kVersions(b *testing.B) {
	parents, heads := history1k()
	if len(heads) < 2 {
		b.Fatalf("setup: %d heads", len(heads))
	}
	x, y := heads[len(heads)-2], heads[len(heads)-1]
	l, err := lca(parents, x, y)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(heads)), "heads")
	b.Logf("lca(%d, %d) = %d among %d heads", x, y, l, len(heads))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := lca(parents, x, y); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMergeHeads_1kVersions merges all the heads of the 1,000-version
// history, each with 1,000-field content, as the Fork Resolution agent does.
func BenchmarkMergeHeads_1kVersions(b *testing.B) {
	parents, heads := history1k()
	base, ours, theirs := merge1k(b)
	contents := map[int64]json.RawMessage{}
	sides := []json.RawMessage{base, ours, theirs}
	for v := range parents {
		contents[v] = sides[v%3]
	}
	if _, _, err := MergeHeads(parents, contents, heads, nil); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(len(heads)), "heads")
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := MergeHeads(parents, contents, heads, nil); err != nil {
			b.Fatal(err)
		}
	}
}
