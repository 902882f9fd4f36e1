package knowledge

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// ErrNotObject is returned (wrapped) when content given to merge3 or
// MergeHeads is not a single JSON object: invalid JSON, another kind of JSON
// value, trailing data, or empty input.
var ErrNotObject = errors.New("content is not a JSON object")

// Resolver decides a true conflict of a three-way merge (see merge3). It is
// called with the path of the conflicting field and the canonical JSON of
// the field's value in base, ours and theirs, where nil means the field is
// absent on that side: base is nil when both sides added the field, ours or
// theirs is nil when that side deleted it (a JSON null is the 4 bytes
// "null", never nil). It returns the value to keep, which must be one JSON
// value (it is canonicalised), or nil (or empty) to leave the field out of
// the merge. A non-nil error aborts the merge and is returned by merge3,
// wrapped with the path.
//
// The Fork Resolution agent asks the model through a Resolver;
// DeterministicResolver is the offline default.
type Resolver func(path string, base, ours, theirs json.RawMessage) (json.RawMessage, error)

// Conflict records one true conflict of a merge and how it was decided, for
// the reasoning node that explains the merge. Base, Ours and Theirs are the
// canonical JSON of the field on each side and Chosen the value the
// Resolver kept; nil (omitted from JSON) means absent: not in base, deleted
// by that side, or removed from the merge.
type Conflict struct {
	// Path names the field: object keys from the top down, joined with
	// "."; a "." or "\" inside a key is escaped with a "\" ("a.b" is field
	// b of object a, "a\.b" the top-level field named "a.b").
	Path   string          `json:"path"`
	Base   json.RawMessage `json:"base,omitempty"`
	Ours   json.RawMessage `json:"ours,omitempty"`
	Theirs json.RawMessage `json:"theirs,omitempty"`
	Chosen json.RawMessage `json:"chosen,omitempty"`
}

// DeterministicResolver is the offline rule for true conflicts: keep the
// side whose canonical JSON sorts greater, comparing bytes (bytes.Compare),
// where an absent side (nil or empty: a deletion) sorts below every value, so a
// modification wins over a deletion. The choice depends only on the two
// values, not on which head is called ours, which makes merge3(b, x, y) and
// merge3(b, y, x) equal byte for byte. path and base are not consulted. It
// returns the chosen value canonicalised, and an error only when ours or
// theirs is not valid JSON.
func DeterministicResolver(path string, base, ours, theirs json.RawMessage) (json.RawMessage, error) {
	o, err := canonicalRaw(ours)
	if err != nil {
		return nil, fmt.Errorf("knowledge: %s: ours: %w", path, err)
	}
	t, err := canonicalRaw(theirs)
	if err != nil {
		return nil, fmt.Errorf("knowledge: %s: theirs: %w", path, err)
	}
	switch {
	case o == nil:
		return t, nil
	case t == nil:
		return o, nil
	case bytes.Compare(t, o) > 0:
		return t, nil
	default:
		return o, nil
	}
}

// merge3 merges two versions of a JSON object, ours and theirs, against
// their common ancestor base, field by field, and returns the canonical
// JSON of the result (keys sorted, no white space, numbers as written: the
// form of cks.CanonicalJSON) and the true conflicts it decided.
//
// For each field (the union of the keys of the three objects), where a
// value may be absent and values are compared by their canonical JSON:
//
//  1. ours == theirs (both unchanged, both changed the same way, or both
//     deleted): that value.
//  2. ours == base: theirs (a change on their side only, including a
//     deletion or an addition); symmetrically, theirs == base: ours.
//  3. Both changed differently, and both are objects: merged recursively,
//     field by field, with the base's value as base when it is an object
//     and {} otherwise (absent, or another kind of value).
//  4. Both changed differently, and both are sets: arrays whose elements
//     are all strings or numbers (the empty array included), such as tags
//     or citations. They merge with add-wins semantics against the base's
//     set B (the base value when it is such an array, else empty), with O
//     and T ours' and theirs': an element is in the result iff it is in O
//     or T and either was not in B (an addition by either side is kept) or
//     is in both O and T (an element of B stays only if neither side
//     removed it). That is, result = (B ∩ O ∩ T) ∪ (O − B) ∪ (T − B).
//     Elements are identified by their canonical JSON (so 1 and 1.0, or 1
//     and "1", are different elements); the result has no duplicates and is
//     sorted: numbers first, by value (ties by their text), then strings,
//     by bytes. The result is thus independent of which side is ours.
//  5. Anything else (scalars, other arrays, or values of different kinds
//     changed differently on both sides, or one side changed and the other
//     deleted) is a true conflict: resolve decides the value (see
//     Resolver) and the decision is appended to conflicts.
//
// Rules 1 and 2 keep a value exactly as that side has it (only
// canonicalised): a set changed on one side only is not re-sorted. So
// merge3(b, x, x) and merge3(b, b, x) are canonical(x), with no conflicts.
//
// Conflicts are listed depth first in the order of sorted keys. A nil
// resolve means DeterministicResolver, with which merge3(b, x, y) and
// merge3(b, y, x) give the same bytes (their conflict lists differ only in
// Ours and Theirs being swapped).
//
// Errors: ErrNotObject (wrapped, naming base, ours or theirs) when an input
// is not a JSON object; an error of resolve, wrapped with the path; an
// invalid value returned by resolve.
func merge3(base, ours, theirs json.RawMessage, resolve Resolver) (json.RawMessage, []Conflict, error) {
	b, err := parseObject("base", base)
	if err != nil {
		return nil, nil, err
	}
	o, err := parseObject("ours", ours)
	if err != nil {
		return nil, nil, err
	}
	t, err := parseObject("theirs", theirs)
	if err != nil {
		return nil, nil, err
	}
	m := merger{resolve: resolve}
	if m.resolve == nil {
		m.resolve = DeterministicResolver
	}
	merged, err := m.object("", b, o, t)
	if err != nil {
		return nil, nil, err
	}
	out, err := encode(merged)
	if err != nil {
		return nil, nil, err
	}
	return out, m.conflicts, nil
}

// MergeHeads merges the contents of any number of heads of a version DAG
// (parents as for lca) into one: the heads are deduplicated and sorted
// ascending, their merge base is MergeBase(parents, heads), and the merge
// folds merge3 pairwise in ascending head id order against that one base:
// m = merge3(base, c(h1), c(h2)), then m = merge3(base, m, c(h3)), and so
// on, where c(v) is contents[v]. The result depends only on the set of heads
// (and the DAG, contents and resolve), not on the order they are given in.
// One head gives its own content, canonicalised. The conflicts of all the
// pairwise merges are returned in fold order. A nil resolve means
// DeterministicResolver.
//
// Errors: no heads; those of MergeBase; ErrUnknownVersion (wrapped) when the
// content of the merge base or of a head is missing from contents; those of
// merge3.
func MergeHeads(parents map[int64][]int64, contents map[int64]json.RawMessage, heads []int64, resolve Resolver) (json.RawMessage, []Conflict, error) {
	hs := sortedUnique(heads)
	base, err := MergeBase(parents, hs)
	if err != nil {
		return nil, nil, err
	}
	content := func(v int64) (map[string]any, error) {
		c, ok := contents[v]
		if !ok {
			return nil, fmt.Errorf("knowledge: no content for version %d: %w", v, ErrUnknownVersion)
		}
		return parseObject(fmt.Sprintf("version %d", v), c)
	}
	b, err := content(base)
	if err != nil {
		return nil, nil, err
	}
	acc, err := content(hs[0])
	if err != nil {
		return nil, nil, err
	}
	m := merger{resolve: resolve}
	if m.resolve == nil {
		m.resolve = DeterministicResolver
	}
	for _, h := range hs[1:] {
		c, err := content(h)
		if err != nil {
			return nil, nil, err
		}
		if acc, err = m.object("", b, acc, c); err != nil {
			return nil, nil, err
		}
	}
	out, err := encode(acc)
	if err != nil {
		return nil, nil, err
	}
	return out, m.conflicts, nil
}

// merger carries the resolver and the conflicts decided so far.
type merger struct {
	resolve   Resolver
	conflicts []Conflict
}

// slot is a field's value on one side; ok is false when the field is absent.
type slot struct {
	v  any
	ok bool
}

func field(m map[string]any, k string) slot {
	v, ok := m[k]
	return slot{v, ok}
}

func (s slot) equal(t slot) bool {
	if s.ok != t.ok {
		return false
	}
	return !s.ok || equal(s.v, t.v)
}

// object merges three decoded objects (rules 1–5 of merge3 per field).
func (m *merger) object(path string, b, o, t map[string]any) (map[string]any, error) {
	keys := make([]string, 0, len(o)+len(t))
	for k := range b {
		keys = append(keys, k)
	}
	for k := range o {
		if _, ok := b[k]; !ok {
			keys = append(keys, k)
		}
	}
	for k := range t {
		_, inB := b[k]
		_, inO := o[k]
		if !inB && !inO {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	out := make(map[string]any, len(keys))
	for _, k := range keys {
		s, err := m.value(joinPath(path, k), field(b, k), field(o, k), field(t, k))
		if err != nil {
			return nil, err
		}
		if s.ok {
			out[k] = s.v
		}
	}
	return out, nil
}

// value merges one field.
func (m *merger) value(path string, b, o, t slot) (slot, error) {
	switch {
	case o.equal(t), t.equal(b):
		return o, nil
	case o.equal(b):
		return t, nil
	}
	if o.ok && t.ok {
		if oo, ok := o.v.(map[string]any); ok {
			if to, ok := t.v.(map[string]any); ok {
				bo, _ := b.v.(map[string]any) // nil (empty) unless an object
				v, err := m.object(path, bo, oo, to)
				return slot{v, true}, err
			}
		}
		if os, ok := asSet(o.v); ok {
			if ts, ok := asSet(t.v); ok {
				bs, _ := asSet(b.v) // nil (empty) unless a set
				return slot{mergeSets(bs, os, ts), true}, nil
			}
		}
	}
	return m.conflict(path, b, o, t)
}

// conflict asks the resolver to decide a true conflict and records it.
func (m *merger) conflict(path string, b, o, t slot) (slot, error) {
	c := Conflict{Path: path}
	var err error
	if c.Base, err = encodeSlot(b); err != nil {
		return slot{}, err
	}
	if c.Ours, err = encodeSlot(o); err != nil {
		return slot{}, err
	}
	if c.Theirs, err = encodeSlot(t); err != nil {
		return slot{}, err
	}
	chosen, err := m.resolve(path, c.Base, c.Ours, c.Theirs)
	if err != nil {
		return slot{}, fmt.Errorf("knowledge: resolving conflict at %q: %w", path, err)
	}
	if len(bytes.TrimSpace(chosen)) == 0 {
		m.conflicts = append(m.conflicts, c)
		return slot{}, nil
	}
	v, err := parseValue(chosen)
	if err != nil {
		return slot{}, fmt.Errorf("knowledge: resolver's value for %q: %w", path, err)
	}
	if c.Chosen, err = encode(v); err != nil {
		return slot{}, err
	}
	m.conflicts = append(m.conflicts, c)
	return slot{v, true}, nil
}

// asSet reports whether v is a set: an array whose elements are all strings
// or numbers (the empty array included).
func asSet(v any) ([]any, bool) {
	a, ok := v.([]any)
	if !ok {
		return nil, false
	}
	for _, e := range a {
		switch e.(type) {
		case string, json.Number:
		default:
			return nil, false
		}
	}
	return a, true
}

// setKey identifies a set element by kind and text, like its canonical JSON.
func setKey(e any) string {
	if n, ok := e.(json.Number); ok {
		return "n" + string(n)
	}
	return "s" + e.(string)
}

// mergeSets is the add-wins merge of rule 4: (B ∩ O ∩ T) ∪ (O − B) ∪ (T − B),
// without duplicates, sorted by setLess.
func mergeSets(b, o, t []any) []any {
	keys := func(a []any) map[string]struct{} {
		s := make(map[string]struct{}, len(a))
		for _, e := range a {
			s[setKey(e)] = struct{}{}
		}
		return s
	}
	bk, ok, tk := keys(b), keys(o), keys(t)
	seen := make(map[string]struct{}, len(o)+len(t))
	out := make([]any, 0, len(o)+len(t))
	for _, side := range [][]any{o, t} {
		for _, e := range side {
			k := setKey(e)
			if _, dup := seen[k]; dup {
				continue
			}
			seen[k] = struct{}{}
			_, inB := bk[k]
			_, inO := ok[k]
			_, inT := tk[k]
			if !inB || (inO && inT) {
				out = append(out, e)
			}
		}
	}
	slices.SortFunc(out, setCompare)
	return out
}

// setCompare orders set elements: numbers before strings; numbers by value
// (as float64), ties by their text; strings by bytes.
func setCompare(x, y any) int {
	xn, xNum := x.(json.Number)
	yn, yNum := y.(json.Number)
	switch {
	case xNum && yNum:
		xf, _ := strconv.ParseFloat(string(xn), 64) // ±Inf on overflow: still ordered
		yf, _ := strconv.ParseFloat(string(yn), 64)
		if c := cmp.Compare(xf, yf); c != 0 {
			return c
		}
		return strings.Compare(string(xn), string(yn))
	case xNum:
		return -1
	case yNum:
		return 1
	default:
		return strings.Compare(x.(string), y.(string))
	}
}

// equal reports whether two decoded JSON values have the same canonical JSON.
func equal(x, y any) bool {
	switch x := x.(type) {
	case nil:
		return y == nil
	case bool:
		y, ok := y.(bool)
		return ok && x == y
	case string:
		y, ok := y.(string)
		return ok && x == y
	case json.Number:
		y, ok := y.(json.Number)
		return ok && x == y
	case []any:
		y, ok := y.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := y.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equal(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

// joinPath appends key to a conflict path, escaping "\" and ".".
func joinPath(path, key string) string {
	if strings.ContainsAny(key, `.\`) {
		key = strings.NewReplacer(`\`, `\\`, `.`, `\.`).Replace(key)
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

// parseValue decodes exactly one JSON value, keeping numbers as written.
func parseValue(raw []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("data after the JSON value")
	}
	return v, nil
}

// parseObject decodes raw, which must be one JSON object.
func parseObject(name string, raw []byte) (map[string]any, error) {
	v, err := parseValue(raw)
	if err != nil {
		return nil, fmt.Errorf("knowledge: %s: %w: %v", name, ErrNotObject, err)
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("knowledge: %s: %w", name, ErrNotObject)
	}
	return obj, nil
}

// encode returns the canonical JSON of a decoded value, exactly as
// cks.CanonicalJSON would: sorted keys, no white space, no HTML escaping,
// numbers as written.
func encode(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// encodeSlot is encode, with nil for an absent value.
func encodeSlot(s slot) (json.RawMessage, error) {
	if !s.ok {
		return nil, nil
	}
	return encode(s.v)
}

// canonicalRaw canonicalises raw JSON; nil or empty (absent) gives nil.
func canonicalRaw(raw json.RawMessage) (json.RawMessage, error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil, nil
	}
	v, err := parseValue(raw)
	if err != nil {
		return nil, err
	}
	return encode(v)
}
