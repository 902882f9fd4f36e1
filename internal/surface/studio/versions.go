package studio

// An object's versions: the DAG drawn as SVG on the server, and the fork
// diff — the heads of a forked object side by side against their merge
// base (knowledge.MergeBase, the rule the Fork Resolution agent merges by),
// field by field, or, once a merge resolved the fork, its parents and the
// merge against the same base, with the merge's rationale.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// The DAG's geometry, in SVG user units.
const (
	dagStepX  = 64 // between generations
	dagStepY  = 44 // between versions of one generation
	dagMargin = 24
	dagRadius = 13
)

// versionDAG draws vl's versions as an SVG graph: one column per
// generation (a version one to the right of its newest parent), the
// versions of a generation one above the other in number order, an edge
// from each parent; heads are filled, a merge (several parents) ringed.
// Each node names its version, author and time in a tooltip and links to
// nothing: the fork diff lays the contents side by side.
func versionDAG(vl cks.VersionList) template.HTML {
	if len(vl.Versions) == 0 {
		return ""
	}
	gen := map[int64]int{}
	lane := map[int64]int{}
	perGen := map[int]int{}
	maxGen, maxLane := 0, 0
	for _, v := range vl.Versions { // ascending: parents come first
		g := 0
		for _, p := range v.Parents {
			if pg, ok := gen[p]; ok && pg+1 > g {
				g = pg + 1
			}
		}
		gen[v.Version] = g
		lane[v.Version] = perGen[g]
		perGen[g]++
		maxGen, maxLane = max(maxGen, g), max(maxLane, lane[v.Version])
	}
	x := func(v int64) int { return dagMargin + gen[v]*dagStepX }
	y := func(v int64) int { return dagMargin + lane[v]*dagStepY }
	width, height := 2*dagMargin+maxGen*dagStepX, 2*dagMargin+maxLane*dagStepY
	var b strings.Builder
	label := fmt.Sprintf("Version graph of object %d: %d versions, heads %s", vl.ObjectID, len(vl.Versions), joinInts(vl.Heads, ", "))
	fmt.Fprintf(&b, `<svg class="dag" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 %d %d" width="%d" height="%d" role="img" aria-label="%s">`,
		width, height, width, height, template.HTMLEscapeString(label))
	for _, v := range vl.Versions {
		for _, p := range v.Parents {
			if _, ok := gen[p]; !ok {
				continue
			}
			x1, y1, x2, y2 := x(p), y(p), x(v.Version), y(v.Version)
			mid := (x1 + x2) / 2
			fmt.Fprintf(&b, `<path class="dag__edge" d="M%d %d C%d %d %d %d %d %d"/>`, x1, y1, mid, y1, mid, y2, x2, y2)
		}
	}
	for _, v := range vl.Versions {
		cls := "dag__node"
		if slices.Contains(vl.Heads, v.Version) {
			cls += " dag__node--head"
		}
		if len(v.Parents) > 1 {
			cls += " dag__node--merge"
		}
		tip := fmt.Sprintf("version %d by %s, %s", v.Version, v.Author, v.CreatedAt.UTC().Format(time.RFC3339))
		if len(v.Parents) > 0 {
			tip += "; from " + joinInts(v.Parents, " and ")
		}
		fmt.Fprintf(&b, `<g class="%s" data-version="%d"><title>%s</title>`, cls, v.Version, template.HTMLEscapeString(tip))
		if len(v.Parents) > 1 {
			fmt.Fprintf(&b, `<circle class="dag__ring" cx="%d" cy="%d" r="%d"/>`, x(v.Version), y(v.Version), dagRadius+4)
		}
		fmt.Fprintf(&b, `<circle cx="%d" cy="%d" r="%d"/><text x="%d" y="%d">%d</text></g>`,
			x(v.Version), y(v.Version), dagRadius, x(v.Version), y(v.Version)+4, v.Version)
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String()) //nolint:gosec // built of numbers and escaped text
}

func joinInts(ns []int64, sep string) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.FormatInt(n, 10)
	}
	return strings.Join(s, sep)
}

// lastMerge is vl's newest merge version (several parents), or nil.
func lastMerge(vl cks.VersionList) *cks.Version {
	for i := len(vl.Versions) - 1; i >= 0; i-- {
		if len(vl.Versions[i].Parents) > 1 {
			return &vl.Versions[i]
		}
	}
	return nil
}

// forksView is the data of the fork diff page.
type forksView struct {
	ID    int64
	Title string
	// Forked: the object has several heads now (Columns are the base and
	// the heads); else Merge is the merge that resolved its last fork
	// (Columns are the base, the merged heads and the merge). Neither: the
	// object never forked.
	Forked bool
	Heads  int
	Merge  *cks.Version
	Base   int64
	// Columns head the table; Rows are its fields.
	Columns []diffColumn
	Rows    []diffRow
	// Rationale is the merge's reasoning node, when one is linked.
	Rationale *nodeView
	DAG       template.HTML
	Error     string
}

// diffColumn is one version of the diff.
type diffColumn struct {
	Version int64
	Role    string // "merge base", "head", "merged head", "merge"
	Author  string
	At      string
}

// diffRow is one top-level field across the columns.
type diffRow struct {
	Field string
	Cells []diffCell
	// Differs: some column's value is not the base's.
	Differs bool
}

// diffCell is a field's value in one version, and how it stands against
// the base: same, changed, added, removed (absent where the base has it)
// or absent (in neither).
type diffCell struct {
	Value string
	State string
	// Label names the cell's column ("v2 head"): a narrow screen stacks
	// the cells of a row and labels each.
	Label string
}

func (s *server) forksPage(w http.ResponseWriter, r *http.Request) {
	v, vl, ok := s.objectAt(w, r)
	if !ok {
		return
	}
	id := v.ID
	fv := forksView{ID: id, Title: objectTitle(v.Object), Forked: vl.Forked, DAG: versionDAG(vl)}
	var shown []int64
	roles := map[int64]string{}
	switch {
	case vl.Forked:
		shown = slices.Clone(vl.Heads)
		fv.Heads = len(shown)
		for _, h := range shown {
			roles[h] = "head"
		}
	default:
		fv.Merge = lastMerge(vl)
		if fv.Merge != nil {
			shown = slices.Clone(fv.Merge.Parents)
			for _, h := range shown {
				roles[h] = "merged head"
			}
			shown = append(shown, fv.Merge.Version)
			roles[fv.Merge.Version] = "merge"
			fv.Rationale = mergeRationale(v, fv.Merge)
		}
	}
	if len(shown) > 0 {
		parents := map[int64][]int64{}
		for _, ver := range vl.Versions {
			parents[ver.Version] = append([]int64{}, ver.Parents...)
		}
		heads := shown
		if fv.Merge != nil {
			heads = fv.Merge.Parents
		}
		base, err := knowledge.MergeBase(parents, heads)
		if err != nil {
			fv.Error = fmt.Sprintf("The merge base of versions %s could not be found: %v.", joinInts(heads, " and "), err)
		} else {
			fv.Base = base
			roles[base] = "merge base"
			fv.Columns, fv.Rows = diffTable(vl, append([]int64{base}, shown...), roles)
		}
	}
	title := fmt.Sprintf("Forks of %s %d", v.Kind, id)
	s.render(w, r, http.StatusOK, pages["forks"], "layout", s.page(title, "objects", false, fv))
}

// mergeRationale is the reasoning node linked to v with resolves that a
// merge of m wrote (the newest such node), or nil.
func mergeRationale(v cks.ObjectView, m *cks.Version) *nodeView {
	byID := reasoningByID(v)
	var found *cks.Object
	for _, e := range v.Edges {
		if e.Dst != v.ID || e.SemanticType != cks.SemResolves {
			continue
		}
		if o, ok := byID[e.Src]; ok && o.Kind == cks.KindRationale && !o.CreatedAt.Before(m.CreatedAt.Add(-time.Second)) {
			found = &o
		}
	}
	if found == nil {
		return nil
	}
	return nodeOf(*found, byID)
}

// diffTable lays the top-level fields of versions cols (the base first)
// side by side, each cell marked against the base's value.
func diffTable(vl cks.VersionList, cols []int64, roles map[int64]string) ([]diffColumn, []diffRow) {
	byNum := map[int64]cks.Version{}
	for _, v := range vl.Versions {
		byNum[v.Version] = v
	}
	fields := make([]map[string]json.RawMessage, len(cols))
	var keys []string
	var columns []diffColumn
	for i, c := range cols {
		v := byNum[c]
		columns = append(columns, diffColumn{Version: c, Role: roles[c], Author: v.Author, At: v.CreatedAt.UTC().Format(time.RFC3339)})
		m := map[string]json.RawMessage{}
		_ = json.Unmarshal(v.Content, &m) // a version's content is a JSON object
		fields[i] = m
		for k := range m {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	var rows []diffRow
	for _, k := range keys {
		row := diffRow{Field: k}
		base, inBase := fields[0][k]
		for i := range cols {
			val, ok := fields[i][k]
			cell := diffCell{Value: displayJSON(val), Label: fmt.Sprintf("v%d %s", cols[i], roles[cols[i]])}
			switch {
			case i == 0 && ok:
				cell.State = "base"
			case i == 0:
				cell.State, cell.Value = "absent", "(absent)"
			case ok && inBase && jsonEqual(val, base):
				cell.State = "same"
			case ok && inBase:
				cell.State = "changed"
			case ok:
				cell.State = "added"
			case inBase:
				cell.State, cell.Value = "removed", "(removed)"
			default:
				cell.State, cell.Value = "absent", "(absent)"
			}
			if i > 0 && (cell.State == "changed" || cell.State == "added" || cell.State == "removed") {
				row.Differs = true
			}
			row.Cells = append(row.Cells, cell)
		}
		rows = append(rows, row)
	}
	return columns, rows
}

// displayJSON shows a field's value: a string as its text, anything else
// as indented JSON.
func displayJSON(b json.RawMessage) string {
	if b == nil {
		return ""
	}
	var s string
	if json.Unmarshal(b, &s) == nil {
		return s
	}
	return indentJSON(b)
}

// jsonEqual compares two JSON values by their canonical form.
func jsonEqual(a, b json.RawMessage) bool {
	ca, err1 := cks.CanonicalJSON(a)
	cb, err2 := cks.CanonicalJSON(b)
	if err1 != nil || err2 != nil {
		return bytes.Equal(a, b)
	}
	return bytes.Equal(ca, cb)
}
