package knowledge

import (
	"errors"
	"fmt"
	"slices"
)

// ErrUnknownVersion is returned (wrapped) when a version id is not in the
// version DAG: it is not a key of the parents map, either because it was
// named directly or because a version in the DAG lists it as a parent.
var ErrUnknownVersion = errors.New("unknown version")

// ErrNoCommonAncestor is returned (wrapped) when versions share no ancestor,
// i.e. their histories start from different roots.
var ErrNoCommonAncestor = errors.New("no common ancestor")

// ErrCycle is returned (wrapped) when the parents map is not acyclic and the
// cycle leaves no lowest common ancestor.
var ErrCycle = errors.New("version graph has a cycle")

// ancestors returns the set of ancestors of v in parents, v included (every
// version is its own ancestor). It fails with ErrUnknownVersion when v, or a
// parent reached from it, is not a key of parents. Each version is visited
// once, so a cycle cannot make it loop.
func ancestors(parents map[int64][]int64, v int64) (map[int64]struct{}, error) {
	if _, ok := parents[v]; !ok {
		return nil, fmt.Errorf("knowledge: version %d: %w", v, ErrUnknownVersion)
	}
	seen := map[int64]struct{}{v: {}}
	stack := []int64{v}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range parents[x] {
			if _, ok := seen[p]; ok {
				continue
			}
			if _, ok := parents[p]; !ok {
				return nil, fmt.Errorf("knowledge: version %d (a parent of %d): %w", p, x, ErrUnknownVersion)
			}
			seen[p] = struct{}{}
			stack = append(stack, p)
		}
	}
	return seen, nil
}

// lca returns the lowest common ancestor of versions a and b in a version
// DAG given as child → parents (parents[v] lists the versions v was written
// from; a root maps to no parents; every version of the DAG is a key).
//
// A common ancestor is a version that is an ancestor of both a and b, where
// every version counts as its own ancestor (so lca(a, a) == a, and
// lca(a, b) == a when a is an ancestor of b). A lowest common ancestor is a
// common ancestor none of whose descendants is also a common ancestor. After
// criss-cross merges there can be several; lca then returns the one with the
// highest id (ids grow with time, so this is the most recent one). The
// result is therefore a function of the set {a, b}: lca(a, b) == lca(b, a).
//
// Errors: ErrUnknownVersion when a or b, or a parent reached from them, is
// not a key of parents; ErrNoCommonAncestor when a and b share no ancestor;
// ErrCycle when a cycle in parents leaves no lowest candidate. All are
// wrapped; test them with errors.Is.
//
// Cost: O(V + E) over the ancestors of a and b.
func lca(parents map[int64][]int64, a, b int64) (int64, error) {
	ancA, err := ancestors(parents, a)
	if err != nil {
		return 0, err
	}
	ancB, err := ancestors(parents, b)
	if err != nil {
		return 0, err
	}
	if len(ancB) < len(ancA) {
		ancA, ancB = ancB, ancA
	}
	common := make(map[int64]struct{}, len(ancA))
	for v := range ancA {
		if _, ok := ancB[v]; ok {
			common[v] = struct{}{}
		}
	}
	if len(common) == 0 {
		return 0, fmt.Errorf("knowledge: versions %d and %d: %w", a, b, ErrNoCommonAncestor)
	}
	// Every proper ancestor of a common ancestor is itself a common
	// ancestor, and not a lowest one. Mark them all in one walk upwards
	// from the parents of the common ancestors; what is left unmarked is
	// the set of lowest common ancestors.
	dominated := make(map[int64]struct{}, len(common))
	var stack []int64
	for v := range common {
		for _, p := range parents[v] {
			if _, ok := dominated[p]; !ok {
				dominated[p] = struct{}{}
				stack = append(stack, p)
			}
		}
	}
	for len(stack) > 0 {
		x := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, p := range parents[x] {
			if _, ok := dominated[p]; !ok {
				dominated[p] = struct{}{}
				stack = append(stack, p)
			}
		}
	}
	best, found := int64(0), false
	for v := range common {
		if _, ok := dominated[v]; ok {
			continue
		}
		if !found || v > best {
			best, found = v, true
		}
	}
	if !found {
		return 0, fmt.Errorf("knowledge: versions %d and %d: %w", a, b, ErrCycle)
	}
	return best, nil
}

// MergeBase returns the merge base of any number of heads: the heads are
// deduplicated and sorted ascending, and lca is folded over them pairwise,
// base = lca(lca(lca(h1, h2), h3), ...). The result is a common ancestor of
// every head; it depends only on the set of heads, not on their order. One
// head is its own merge base.
//
// Errors: no heads; and those of lca (ErrUnknownVersion,
// ErrNoCommonAncestor, ErrCycle), wrapped.
func MergeBase(parents map[int64][]int64, heads []int64) (int64, error) {
	hs := sortedUnique(heads)
	if len(hs) == 0 {
		return 0, errors.New("knowledge: merge base of no heads")
	}
	base := hs[0]
	if _, ok := parents[base]; !ok {
		return 0, fmt.Errorf("knowledge: version %d: %w", base, ErrUnknownVersion)
	}
	for _, h := range hs[1:] {
		var err error
		if base, err = lca(parents, base, h); err != nil {
			return 0, err
		}
	}
	return base, nil
}

// sortedUnique returns a sorted copy of ids without duplicates.
func sortedUnique(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}
