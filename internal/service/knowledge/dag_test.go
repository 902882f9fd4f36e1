package knowledge

import (
	"errors"
	"testing"
)

func TestLCA(t *testing.T) {
	chain := map[int64][]int64{1: nil, 2: {1}, 3: {2}, 4: {3}}
	// 1 ─ 2 ─ 4 ─ 6
	//  \     /
	//   3 ─ 5
	diamond := map[int64][]int64{1: nil, 2: {1}, 3: {1}, 4: {2, 5}, 5: {3}, 6: {4}}
	// Criss-cross: 4 and 5 both merge 2 and 3, so 2 and 3 are both lowest
	// common ancestors of 4 and 5; the higher id wins.
	crissCross := map[int64][]int64{1: nil, 2: {1}, 3: {1}, 4: {2, 3}, 5: {3, 2}, 6: {4}, 7: {5}}
	twoRoots := map[int64][]int64{1: nil, 2: nil, 3: {1}, 4: {2}}
	dangling := map[int64][]int64{1: nil, 2: {1}, 3: {9}}
	cycle := map[int64][]int64{1: {2}, 2: {1}}

	tests := []struct {
		name    string
		parents map[int64][]int64
		a, b    int64
		want    int64
		err     error
	}{
		{"self", chain, 3, 3, 3, nil},
		{"ancestor", chain, 2, 4, 2, nil},
		{"descendant", chain, 4, 2, 2, nil},
		{"root", chain, 1, 1, 1, nil},
		{"branches", diamond, 2, 3, 1, nil},
		{"after merge", diamond, 6, 5, 5, nil},
		{"branch vs merge", diamond, 2, 5, 1, nil},
		{"criss-cross", crissCross, 4, 5, 3, nil},
		{"criss-cross deeper", crissCross, 7, 6, 3, nil},
		{"unknown a", chain, 9, 1, 0, ErrUnknownVersion},
		{"unknown b", chain, 1, 9, 0, ErrUnknownVersion},
		{"dangling parent", dangling, 3, 2, 0, ErrUnknownVersion},
		{"no common ancestor", twoRoots, 3, 4, 0, ErrNoCommonAncestor},
		{"cycle", cycle, 1, 2, 0, ErrCycle},
		{"empty dag", nil, 1, 1, 0, ErrUnknownVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, ab := range [][2]int64{{tt.a, tt.b}, {tt.b, tt.a}} {
				got, err := lca(tt.parents, ab[0], ab[1])
				if tt.err != nil {
					if !errors.Is(err, tt.err) {
						t.Fatalf("lca(%d, %d) = %d, %v; want error %v", ab[0], ab[1], got, err, tt.err)
					}
					continue
				}
				if err != nil || got != tt.want {
					t.Fatalf("lca(%d, %d) = %d, %v; want %d", ab[0], ab[1], got, err, tt.want)
				}
			}
		})
	}
}

func TestMergeBase(t *testing.T) {
	// 1 ─ 2 ─ 3 ─ 5
	//      \   \
	//       4   6
	parents := map[int64][]int64{1: nil, 2: {1}, 3: {2}, 4: {2}, 5: {3}, 6: {3}}
	for _, tt := range []struct {
		heads []int64
		want  int64
	}{
		{[]int64{5}, 5},
		{[]int64{5, 6}, 3},
		{[]int64{6, 5}, 3},
		{[]int64{4, 5, 6}, 2},
		{[]int64{6, 4, 5, 6}, 2},
		{[]int64{1, 6}, 1},
	} {
		if got, err := MergeBase(parents, tt.heads); err != nil || got != tt.want {
			t.Errorf("MergeBase(%v) = %d, %v; want %d", tt.heads, got, err, tt.want)
		}
	}
	if _, err := MergeBase(parents, nil); err == nil {
		t.Error("MergeBase of no heads: no error")
	}
	if _, err := MergeBase(parents, []int64{7}); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("MergeBase of unknown head: %v", err)
	}
	if _, err := MergeBase(parents, []int64{5, 7}); !errors.Is(err, ErrUnknownVersion) {
		t.Errorf("MergeBase with an unknown head: %v", err)
	}
}
