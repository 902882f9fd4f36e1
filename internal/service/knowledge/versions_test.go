package knowledge_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/driver"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// TestVersions: the version history of knowledge objects
// (knowledge.Service, issue 8): every content write records a version, a
// write from a stale base forks the object, MergeVersions joins the heads;
// on both backends.
func TestVersions(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"VersionCreateWritesFirst":   testVersionCreateWritesFirst,
		"VersionNumbersPerObject":    testVersionNumbersPerObject,
		"VersionWriteFromHead":       testVersionWriteFromHead,
		"VersionFork":                testVersionFork,
		"VersionMerge":               testVersionMerge,
		"VersionMergeStale":          testVersionMergeStale,
		"VersionMergeSingleHead":     testVersionMergeSingleHead,
		"VersionBadInput":            testVersionBadInput,
		"VersionTransition":          testVersionTransition,
		"VersionDAG":                 testVersionDAG,
		"VersionForkedObjectsPaging": testVersionForkedObjectsPaging,
		"VersionListEdgesPaging":     testVersionListEdgesPaging,
		"VersionConcurrentWrites":    testVersionConcurrentWrites,
		"VersionConcurrentMerges":    testVersionConcurrentMerges,
	})
}

// versionStore opens a handle on open's database whose clock is a fake at
// T0 and returns its knowledge and version stores.
func versionStore(t testing.TB, open backendtest.Opener) (*knowledge.Service, *knowledge.Service, *clock.Fake) {
	t.Helper()
	s, clk := backendtest.FakeStore(t, open)
	return s.Objects, s.Objects, clk
}

// versionNumbers returns the numbers of vs.
func versionNumbers(vs []cks.Version) []int64 {
	ns := make([]int64, len(vs))
	for i, v := range vs {
		ns[i] = v.Version
	}
	return ns
}

func sorted(ids ...int64) []int64 {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

// wantVersion fails the test unless v is a version of object with exactly
// parents (in this order), content (any encoding of its canonical form) and
// its hash, by author at at.
func wantVersion(t testing.TB, what string, v cks.Version, object int64, parents []int64, content, author string, at time.Time) {
	t.Helper()
	want, hash := canonical(t, content)
	got, err := cks.CanonicalJSON(v.Content)
	if v.Version <= 0 || v.ObjectID != object || fmt.Sprint(v.Parents) != fmt.Sprint(parents) || err != nil ||
		string(got) != want || v.ContentHash != hash || v.Author != author || !v.CreatedAt.Equal(at) {
		t.Fatalf("%s: version %s\nwant object %d, parents %v, content %s (hash %s), author %q, created at %v",
			what, backendtest.AsJSON(t, v), object, parents, want, hash, author, at)
	}
}

func mustWrite(t testing.TB, v *knowledge.Service, id, base int64, content, author string) cks.Version {
	t.Helper()
	w, err := v.WriteVersion(ctx(t), id, base, json.RawMessage(content), author)
	if err != nil {
		t.Fatalf("WriteVersion(%d, base %d, %s, %q): %v", id, base, content, author, err)
	}
	return w
}

func mustHeads(t testing.TB, v *knowledge.Service, id int64) []cks.Version {
	t.Helper()
	hs, err := v.Heads(ctx(t), id)
	if err != nil {
		t.Fatalf("Heads(%d): %v", id, err)
	}
	return hs
}

// wantHeads fails the test unless the heads of object id are exactly the
// versions numbered ids, ascending, each equal to the version of that number
// in ObjectVersions.
func wantHeads(t testing.TB, v *knowledge.Service, id int64, ids ...int64) {
	t.Helper()
	hs := mustHeads(t, v, id)
	if fmt.Sprint(versionNumbers(hs)) != fmt.Sprint(ids) {
		t.Fatalf("object %d: heads %v, want %v (ascending)", id, versionNumbers(hs), ids)
	}
	all := map[int64]string{}
	for _, x := range backendtest.MustVersions(t, v, id) {
		all[x.Version] = backendtest.VersionKey(t, x)
	}
	for _, h := range hs {
		if all[h.Version] != backendtest.VersionKey(t, h) {
			t.Fatalf("object %d: head %s\nObjectVersions has %s", id, backendtest.VersionKey(t, h), all[h.Version])
		}
	}
}

// wantObjectHead fails the test unless object id (read with GetObject and
// ListObjects) carries the content and hash of version head, HeadVersion
// head's number and Forked forked.
func wantObjectHead(t testing.TB, k *knowledge.Service, id int64, head cks.Version, forked bool) cks.Object {
	t.Helper()
	o := backendtest.MustGetObject(t, k, id)
	got, err := cks.CanonicalJSON(o.Content)
	want, _ := cks.CanonicalJSON(head.Content)
	if o.HeadVersion != head.Version || o.Forked != forked || err != nil || string(got) != string(want) || o.ContentHash != head.ContentHash {
		t.Fatalf("object %d: %s\nwant head_version %d, forked %v, content %s, hash %s", id, backendtest.AsJSON(t, o), head.Version, forked, want, head.ContentHash)
	}
	page, err := k.ListObjects(ctx(t), cks.ObjectFilter{After: id - 1, Limit: 1})
	if err != nil || len(page.Objects) != 1 || page.Objects[0].ID != id {
		t.Fatalf("ListObjects(after %d, limit 1) = %s, %v", id-1, backendtest.AsJSON(t, page), err)
	}
	bare := o
	bare.Log, bare.Edges = nil, nil
	if l := page.Objects[0]; backendtest.AsJSON(t, l) != backendtest.AsJSON(t, bare) {
		t.Fatalf("object %d listed %s\nread %s", id, backendtest.AsJSON(t, l), backendtest.AsJSON(t, bare))
	}
	return o
}

// versionsState is the state a refused call must leave as it was.
type versionsState struct {
	objects, versions map[int64]string
	forks             string
}

func takeSnapshot(t testing.TB, k *knowledge.Service, v *knowledge.Service) versionsState {
	t.Helper()
	return versionsState{backendtest.ObjectSnapshot(t, k), backendtest.VersionSnapshot(t, k, v), backendtest.AsJSON(t, backendtest.MustForks(t, v, 0, cks.MaxListLimit))}
}

// wantNothingWritten fails the test unless objects, logs, edges, versions
// and forks are those of before.
func wantNothingWritten(t testing.TB, what string, k *knowledge.Service, v *knowledge.Service, before versionsState) {
	t.Helper()
	wantUnchanged(t, what, k, before.objects)
	after := backendtest.VersionSnapshot(t, k, v)
	for id, b := range before.versions {
		if a := after[id]; a != b {
			t.Errorf("%s changed the versions of object %d:\n got: %s\nwant: %s", what, id, a, b)
		}
	}
	if f := backendtest.AsJSON(t, backendtest.MustForks(t, v, 0, cks.MaxListLimit)); f != before.forks {
		t.Errorf("%s changed the forks: %s, want %s", what, f, before.forks)
	}
}

// fork writes two versions of object o from its head (the second from a
// base that is no longer the head) and returns them.
func fork(t testing.TB, v *knowledge.Service, o cks.Object, tag string) (cks.Version, cks.Version) {
	t.Helper()
	a := mustWrite(t, v, o.ID, o.HeadVersion, fmt.Sprintf(`{"side":"a","tag":%q}`, tag), "alice")
	b := mustWrite(t, v, o.ID, o.HeadVersion, fmt.Sprintf(`{"side":"b","tag":%q}`, tag), "bob")
	return a, b
}

func resolvesReason(content string) *knowledge.Attachment {
	return &knowledge.Attachment{Object: knowledge.NewObject{Kind: "rationale", Content: json.RawMessage(content), CreatedBy: "fork_resolution"},
		BaseType: "depends_on", SemanticType: "resolves"}
}

// testVersionCreateWritesFirst: CreateObject records the object's first
// version (no parents, its content, by its creator), which is its only head.
// (That it is numbered 1 is testVersionNumbersPerObject's.)
func testVersionCreateWritesFirst(t *testing.T, open backendtest.Opener) {
	k, v, clk := versionStore(t, open)
	const content = `{ "b": 1, "a": [1, {"d": 2, "c": 1}] }`
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Title: "q", Content: json.RawMessage(content),
		Status: "awaiting_research", CreatedBy: "operator"})
	clk.Advance(time.Minute)
	r := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "critique", Content: json.RawMessage(`{"text":"weak"}`), CreatedBy: "critic"})
	if o.HeadVersion <= 0 || o.Forked || r.HeadVersion <= 0 || r.Forked {
		t.Fatalf("created objects %s\n%s: want a head version each, not forked", backendtest.AsJSON(t, o), backendtest.AsJSON(t, r))
	}
	for _, c := range []struct {
		o       cks.Object
		content string
		by      string
		at      time.Time
	}{
		{o, content, "operator", backendtest.T0},
		{r, `{"text":"weak"}`, "critic", backendtest.T0.Add(time.Minute)},
	} {
		hs := mustHeads(t, v, c.o.ID)
		if len(hs) != 1 {
			t.Fatalf("object %d: heads %s, want the first version alone", c.o.ID, backendtest.AsJSON(t, hs))
		}
		wantVersion(t, fmt.Sprintf("first version of object %d", c.o.ID), hs[0], c.o.ID, nil, c.content, c.by, c.at)
		if hs[0].Version != c.o.HeadVersion || hs[0].ContentHash != c.o.ContentHash {
			t.Fatalf("object %d: head_version %d hash %s, first version %s", c.o.ID, c.o.HeadVersion, c.o.ContentHash, backendtest.AsJSON(t, hs[0]))
		}
		if vs := backendtest.MustVersions(t, v, c.o.ID); len(vs) != 1 || backendtest.VersionKey(t, vs[0]) != backendtest.VersionKey(t, hs[0]) {
			t.Fatalf("object %d: versions %s, want the first version alone", c.o.ID, backendtest.AsJSON(t, vs))
		}
		wantObjectHead(t, k, c.o.ID, hs[0], false)
	}
	if fs := backendtest.MustForks(t, v, 0, cks.MaxListLimit); len(fs) != 0 {
		t.Fatalf("fresh objects listed as forked: %s", backendtest.AsJSON(t, fs))
	}
}

// testVersionNumbersPerObject: versions are numbered 1, 2, 3 … within each
// object whatever the writes to other objects in between; bases, parents,
// heads, forks and head_version speak those numbers.
func testVersionNumbersPerObject(t *testing.T, open backendtest.Opener) {
	k, v, _ := versionStore(t, open)
	a := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"a":1}`)})
	b := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"b":1}`)})
	if a.HeadVersion != 1 || b.HeadVersion != 1 {
		t.Fatalf("head versions %d and %d, want both objects at their version 1", a.HeadVersion, b.HeadVersion)
	}
	a2 := mustWrite(t, v, a.ID, 1, `{"a":2}`, "w")
	b2 := mustWrite(t, v, b.ID, 1, `{"b":2}`, "w")
	b3 := mustWrite(t, v, b.ID, 2, `{"b":3}`, "w")
	a3 := mustWrite(t, v, a.ID, 1, `{"a":"fork"}`, "w") // from a stale base: a is forked
	for _, c := range []struct {
		got            cks.Version
		object, number int64
		parents        []int64
	}{{a2, a.ID, 2, []int64{1}}, {b2, b.ID, 2, []int64{1}}, {b3, b.ID, 3, []int64{2}}, {a3, a.ID, 3, []int64{1}}} {
		if c.got.ObjectID != c.object || c.got.Version != c.number || fmt.Sprint(c.got.Parents) != fmt.Sprint(c.parents) {
			t.Fatalf("write %s, want version %d of object %d with parents %v", backendtest.AsJSON(t, c.got), c.number, c.object, c.parents)
		}
	}
	if fs := backendtest.MustForks(t, v, 0, cks.MaxListLimit); backendtest.AsJSON(t, fs) != backendtest.AsJSON(t, []cks.Fork{{ObjectID: a.ID, Heads: []int64{2, 3}}}) {
		t.Fatalf("ForkedObjects = %s, want object %d with heads 2 and 3", backendtest.AsJSON(t, fs), a.ID)
	}
	m, _, err := v.MergeVersions(ctx(t), a.ID, []int64{3, 2}, json.RawMessage(`{"a":"merged"}`), "fr", nil)
	if err != nil || m.Version != 4 || fmt.Sprint(m.Parents) != "[2 3]" {
		t.Fatalf("merge = %s, %v; want version 4 with parents [2 3]", backendtest.AsJSON(t, m), err)
	}
	if vs := backendtest.MustVersions(t, v, a.ID); fmt.Sprint(versionNumbers(vs)) != "[1 2 3 4]" {
		t.Fatalf("versions of %d: %v, want [1 2 3 4]", a.ID, versionNumbers(vs))
	}
	if vs := backendtest.MustVersions(t, v, b.ID); fmt.Sprint(versionNumbers(vs)) != "[1 2 3]" {
		t.Fatalf("versions of %d: %v, want [1 2 3]", b.ID, versionNumbers(vs))
	}
	wantObjectHead(t, k, a.ID, m, false)
	wantObjectHead(t, k, b.ID, b3, false)
	// b's number 3 is a version of a too; b has no version 4, a has.
	if _, err := v.WriteVersion(ctx(t), b.ID, 4, json.RawMessage(`{}`), "w"); !cks.IsFieldError(err, "base_version") {
		t.Fatalf("WriteVersion(b, base 4): err = %v, want a FieldError naming base_version (b has versions 1 to 3)", err)
	}
	if w := mustWrite(t, v, a.ID, 4, `{"a":5}`, "w"); w.Version != 5 {
		t.Fatalf("write from a's version 4 = %s, want version 5", backendtest.AsJSON(t, w))
	}
}

// testVersionWriteFromHead: a write from the head replaces it as the only
// head, and the object follows it.
func testVersionWriteFromHead(t *testing.T, open backendtest.Opener) {
	k, v, clk := versionStore(t, open)
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"a":1}`), Status: "supported", CreatedBy: "op"})
	other := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"other":true}`)})
	otherBefore := backendtest.MustGetObject(t, k, other.ID)
	prev := o.HeadVersion
	var chain []int64
	chain = append(chain, prev)
	for i, content := range []string{`{ "x": 2, "a": 1 }`, `{"a":1,"x":3,"nested":{"z":1,"y":[2,1]}}`, `{}`} {
		clk.Advance(time.Minute)
		w := mustWrite(t, v, o.ID, prev, content, fmt.Sprintf("editor-%d", i))
		wantVersion(t, fmt.Sprintf("write %d", i), w, o.ID, []int64{prev}, content, fmt.Sprintf("editor-%d", i), clk.Now())
		if w.Version <= prev {
			t.Fatalf("write %d: version %d after %d, want ascending", i, w.Version, prev)
		}
		wantHeads(t, v, o.ID, w.Version)
		got := wantObjectHead(t, k, o.ID, w, false)
		if got.Status != "supported" || got.Round != 0 || !got.CreatedAt.Equal(backendtest.T0) || !got.UpdatedAt.Equal(clk.Now()) || got.CreatedBy != "op" {
			t.Fatalf("write %d: object %s, want status, round and creation kept, updated_at %v", i, backendtest.AsJSON(t, got), clk.Now())
		}
		wantUnclaimed(t, "written object", got)
		prev = w.Version
		chain = append(chain, w.Version)
	}
	if vs := backendtest.MustVersions(t, v, o.ID); fmt.Sprint(versionNumbers(vs)) != fmt.Sprint(chain) {
		t.Fatalf("versions %v, want %v", versionNumbers(vs), chain)
	}
	if got := backendtest.MustGetObject(t, k, other.ID); backendtest.AsJSON(t, got) != backendtest.AsJSON(t, otherBefore) {
		t.Fatalf("writes to object %d changed object %d: %s", o.ID, other.ID, backendtest.AsJSON(t, got))
	}
	if vs := backendtest.MustVersions(t, v, other.ID); len(vs) != 1 {
		t.Fatalf("object %d: versions %s, want its first alone", other.ID, backendtest.AsJSON(t, vs))
	}
	if fs := backendtest.MustForks(t, v, 0, cks.MaxListLimit); len(fs) != 0 {
		t.Fatalf("linear writes listed as forks: %s", backendtest.AsJSON(t, fs))
	}
}

// testVersionFork: a write from a base that is no longer the head adds a
// second head instead of overwriting.
func testVersionFork(t *testing.T, open backendtest.Opener) {
	k, v, clk := versionStore(t, open)
	plain := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim"})
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"text":"base"}`), CreatedBy: "op"})
	linear := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim"})
	mustWrite(t, v, linear.ID, linear.HeadVersion, `{"n":1}`, "w")
	base := mustHeads(t, v, o.ID)[0]
	clk.Advance(time.Minute)
	a := mustWrite(t, v, o.ID, base.Version, `{"text":"alice"}`, "alice")
	clk.Advance(time.Minute)
	b := mustWrite(t, v, o.ID, base.Version, `{"text":"bob"}`, "bob")
	wantVersion(t, "second write from the base", b, o.ID, []int64{base.Version}, `{"text":"bob"}`, "bob", clk.Now())
	wantHeads(t, v, o.ID, sorted(a.Version, b.Version)...)
	wantObjectHead(t, k, o.ID, b, true) // the latest write
	if vs := backendtest.MustVersions(t, v, o.ID); fmt.Sprint(versionNumbers(vs)) != fmt.Sprint([]int64{base.Version, a.Version, b.Version}) {
		t.Fatalf("versions %v, want all kept: %v", versionNumbers(vs), []int64{base.Version, a.Version, b.Version})
	}
	want := backendtest.AsJSON(t, []cks.Fork{{ObjectID: o.ID, Heads: sorted(a.Version, b.Version)}})
	if fs := backendtest.MustForks(t, v, 0, cks.MaxListLimit); backendtest.AsJSON(t, fs) != want {
		t.Fatalf("ForkedObjects = %s, want %s", backendtest.AsJSON(t, fs), want)
	}
	// A write from one head replaces that head; the object stays forked.
	clk.Advance(time.Minute)
	c := mustWrite(t, v, o.ID, a.Version, `{"text":"carol"}`, "carol")
	wantVersion(t, "write from one head", c, o.ID, []int64{a.Version}, `{"text":"carol"}`, "carol", clk.Now())
	wantHeads(t, v, o.ID, sorted(b.Version, c.Version)...)
	wantObjectHead(t, k, o.ID, c, true)
	want = backendtest.AsJSON(t, []cks.Fork{{ObjectID: o.ID, Heads: sorted(b.Version, c.Version)}})
	if fs := backendtest.MustForks(t, v, 0, cks.MaxListLimit); backendtest.AsJSON(t, fs) != want {
		t.Fatalf("ForkedObjects after a write from one head = %s, want %s", backendtest.AsJSON(t, fs), want)
	}
	// And from the other, the older head: the object follows the latest write.
	clk.Advance(time.Minute)
	d := mustWrite(t, v, o.ID, b.Version, `{"text":"dave"}`, "dave")
	wantHeads(t, v, o.ID, sorted(c.Version, d.Version)...)
	wantObjectHead(t, k, o.ID, d, true)
	if vs := backendtest.MustVersions(t, v, o.ID); len(vs) != 5 {
		t.Fatalf("versions %v, want 5", versionNumbers(vs))
	}
	for _, id := range []int64{plain.ID, linear.ID} {
		if got := backendtest.MustGetObject(t, k, id); got.Forked {
			t.Fatalf("object %d forked: %s", id, backendtest.AsJSON(t, got))
		}
	}
}

// testVersionMerge: merging exactly the heads makes one head with all of
// them as parents, and writes the reason node linked to the object.
func testVersionMerge(t *testing.T, open backendtest.Opener) {
	k, v, clk := versionStore(t, open)
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"text":"base"}`), Status: "supported", CreatedBy: "op"})
	cited := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim"})
	a, b := fork(t, v, o, "1")
	before := backendtest.MustGetObject(t, k, o.ID)
	why := resolvesReason(`{"rule":"latest wins", "heads": 2}`)
	why.Links = []knowledge.LinkFrom{{Dst: cited.ID, BaseType: "depends_on", SemanticType: "cites"}}
	clk.Advance(time.Minute)
	now := clk.Now()
	const merged = `{ "text": "merged", "sides": ["a", "b"] }`
	m, reason, err := v.MergeVersions(ctx(t), o.ID, []int64{max(a.Version, b.Version), min(a.Version, b.Version)}, json.RawMessage(merged),
		"fork_resolution", why)
	if err != nil {
		t.Fatalf("MergeVersions: %v", err)
	}
	wantVersion(t, "merge version", m, o.ID, sorted(a.Version, b.Version), merged, "fork_resolution", now)
	if m.Version <= max(a.Version, b.Version) {
		t.Fatalf("merge version %d, want after the heads %d, %d", m.Version, a.Version, b.Version)
	}
	wantHeads(t, v, o.ID, m.Version)
	got := wantObjectHead(t, k, o.ID, m, false)
	if got.Status != before.Status || got.Round != before.Round || !got.UpdatedAt.Equal(now) {
		t.Fatalf("merged object %s, want status and round kept, updated_at %v", backendtest.AsJSON(t, got), now)
	}
	if fs := backendtest.MustForks(t, v, 0, cks.MaxListLimit); len(fs) != 0 {
		t.Fatalf("merged object still listed as forked: %s", backendtest.AsJSON(t, fs))
	}
	if vs := backendtest.MustVersions(t, v, o.ID); fmt.Sprint(versionNumbers(vs)) != fmt.Sprint([]int64{o.HeadVersion, a.Version, b.Version, m.Version}) {
		t.Fatalf("versions %v, want %v", versionNumbers(vs), []int64{o.HeadVersion, a.Version, b.Version, m.Version})
	}
	// The reason node: created in the merge, linked reason → object.
	if reason == nil || reason.ID <= cited.ID || reason.Kind != "rationale" || reason.CreatedBy != "fork_resolution" ||
		!reason.CreatedAt.Equal(now) || reason.HeadVersion <= 0 {
		t.Fatalf("reason object %s", backendtest.AsJSON(t, reason))
	}
	wantContent(t, "reason object", *reason, `{"heads":2,"rule":"latest wins"}`)
	rr := backendtest.MustGetObject(t, k, reason.ID)
	rr.Log, rr.Edges = nil, nil
	if backendtest.AsJSON(t, rr) != backendtest.AsJSON(t, *reason) {
		t.Fatalf("reason returned %s\nreads %s", backendtest.AsJSON(t, *reason), backendtest.AsJSON(t, rr))
	}
	wantEdges(t, backendtest.MustGetObject(t, k, o.ID), now, edgeKey(reason.ID, o.ID, "depends_on", "resolves", nil))
	wantEdges(t, backendtest.MustGetObject(t, k, reason.ID), now, edgeKey(reason.ID, o.ID, "depends_on", "resolves", nil),
		edgeKey(reason.ID, cited.ID, "depends_on", "cites", nil))
	rv := backendtest.MustVersions(t, v, reason.ID)
	if len(rv) != 1 || rv[0].Version != reason.HeadVersion {
		t.Fatalf("reason object versions %s, want its first alone (head %d)", backendtest.AsJSON(t, rv), reason.HeadVersion)
	}
	wantVersion(t, "reason's first version", rv[0], reason.ID, nil, `{"heads":2,"rule":"latest wins"}`, "fork_resolution", now)
	// The merge is an ordinary head to write from.
	clk.Advance(time.Minute)
	w := mustWrite(t, v, o.ID, m.Version, `{"text":"after"}`, "editor")
	wantHeads(t, v, o.ID, w.Version)
	wantObjectHead(t, k, o.ID, w, false)

	// A merge without a reason creates no object and no edge.
	o2 := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim"})
	a2, b2 := fork(t, v, o2, "2")
	objects := len(backendtest.AllObjects(t, k))
	m2, r2, err := v.MergeVersions(ctx(t), o2.ID, []int64{a2.Version, b2.Version}, json.RawMessage(`{"m":2}`), "fork_resolution", nil)
	if err != nil || r2 != nil {
		t.Fatalf("MergeVersions without a reason = %s, %s, %v", backendtest.AsJSON(t, m2), backendtest.AsJSON(t, r2), err)
	}
	wantVersion(t, "merge without a reason", m2, o2.ID, sorted(a2.Version, b2.Version), `{"m":2}`, "fork_resolution", clk.Now())
	wantHeads(t, v, o2.ID, m2.Version)
	wantObjectHead(t, k, o2.ID, m2, false)
	if n := len(backendtest.AllObjects(t, k)); n != objects {
		t.Fatalf("merge without a reason: %d objects, want %d", n, objects)
	}
	if got := backendtest.MustGetObject(t, k, o2.ID); len(got.Edges) != 0 {
		t.Fatalf("merge without a reason wrote edges %s", backendtest.AsJSON(t, got.Edges))
	}
}

// testVersionMergeStale: a merge of anything but exactly the current heads
// is ErrConflict naming them, and writes nothing.
func testVersionMergeStale(t *testing.T, open backendtest.Opener) {
	k, v, clk := versionStore(t, open)
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"text":"base"}`), CreatedBy: "op"})
	other := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim"})
	a, b := fork(t, v, o, "1")
	clk.Advance(time.Minute)
	c := mustWrite(t, v, o.ID, b.Version, `{"text":"c"}`, "carol") // a writer came first: heads a, c
	wantHeads(t, v, o.ID, sorted(a.Version, c.Version)...)
	clk.Advance(time.Minute)
	before := takeSnapshot(t, k, v)
	for _, heads := range [][]int64{
		{a.Version, b.Version},                // the heads before the write
		{b.Version, a.Version},                // in another order
		{a.Version},                           // a subset
		{c.Version},                           // the other subset
		{a.Version, c.Version, b.Version},     // plus a former head
		{a.Version, c.Version, o.HeadVersion}, // plus the root
		{a.Version, c.Version, 424242},        // plus an unknown version
		{a.Version, other.HeadVersion},        // another object's version
	} {
		what := fmt.Sprintf("MergeVersions(heads %v) with heads %v", heads, sorted(a.Version, c.Version))
		m, r, err := v.MergeVersions(ctx(t), o.ID, heads, json.RawMessage(`{"text":"merged"}`), "fork_resolution",
			resolvesReason(`{"rule":"x"}`))
		if !errors.Is(err, cks.ErrConflict) {
			t.Errorf("%s: err = %v (version %s, reason %s), want ErrConflict", what, err, backendtest.AsJSON(t, m), backendtest.AsJSON(t, r))
		} else if msg := err.Error(); !strings.Contains(msg, fmt.Sprint(a.Version)) || !strings.Contains(msg, fmt.Sprint(c.Version)) {
			t.Errorf("%s: err = %v, want it to name the current heads %d and %d", what, err, a.Version, c.Version)
		}
		wantNothingWritten(t, what, k, v, before)
	}
	m, _, err := v.MergeVersions(ctx(t), o.ID, []int64{c.Version, a.Version}, json.RawMessage(`{"text":"merged"}`), "fork_resolution", nil)
	if err != nil {
		t.Fatalf("merge of the current heads after the refused ones: %v", err)
	}
	wantVersion(t, "merge", m, o.ID, sorted(a.Version, c.Version), `{"text":"merged"}`, "fork_resolution", clk.Now())
	// The fork was already resolved: a second merge of the same heads is
	// refused and changes nothing.
	clk.Advance(time.Minute)
	before = takeSnapshot(t, k, v)
	_, r, err := v.MergeVersions(ctx(t), o.ID, []int64{a.Version, c.Version}, json.RawMessage(`{"text":"again"}`), "fork_resolution",
		resolvesReason(`{"rule":"y"}`))
	if !errors.Is(err, cks.ErrConflict) || r != nil {
		t.Errorf("merge of an already merged fork: err = %v, reason %s; want ErrConflict", err, backendtest.AsJSON(t, r))
	}
	wantNothingWritten(t, "merge of an already merged fork", k, v, before)
}

// testVersionMergeSingleHead: "merging" the one head of an object that is
// not forked names exactly its heads; the doc allows it (a version with the
// head as its parent). A backend that refuses it must refuse with
// ErrConflict and write nothing.
func testVersionMergeSingleHead(t *testing.T, open backendtest.Opener) {
	k, v, clk := versionStore(t, open)
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"text":"base"}`), CreatedBy: "op"})
	clk.Advance(time.Minute)
	before := takeSnapshot(t, k, v)
	m, r, err := v.MergeVersions(ctx(t), o.ID, []int64{o.HeadVersion}, json.RawMessage(`{"text":"same"}`), "fork_resolution", nil)
	switch {
	case err == nil:
		t.Logf("MergeVersions of the single head is allowed (a version with one parent)")
		if r != nil {
			t.Fatalf("merge without a reason returned reason %s", backendtest.AsJSON(t, r))
		}
		wantVersion(t, "single-head merge", m, o.ID, []int64{o.HeadVersion}, `{"text":"same"}`, "fork_resolution", clk.Now())
		wantHeads(t, v, o.ID, m.Version)
		wantObjectHead(t, k, o.ID, m, false)
	case errors.Is(err, cks.ErrConflict):
		t.Logf("MergeVersions of the single head is refused: %v", err)
		wantNothingWritten(t, "refused single-head merge", k, v, before)
	default:
		t.Fatalf("MergeVersions of the single head: err = %v, want success or ErrConflict", err)
	}
}

// testVersionBadInput: refused writes and merges write nothing.
func testVersionBadInput(t *testing.T, open backendtest.Opener) {
	k, v, clk := versionStore(t, open)
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"text":"base"}`), Status: "supported", CreatedBy: "op"})
	other := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"other":1}`)})
	// Versions are numbered per object: other's 4 and 5 are no versions of
	// o, which has 1 to 3.
	otherNext := other.HeadVersion
	for i := range 4 {
		otherNext = mustWrite(t, v, other.ID, otherNext, fmt.Sprintf(`{"other":%d}`, i+2), "w").Version
	}
	a, b := fork(t, v, o, "1") // forked, so merges have real heads to name
	clk.Advance(time.Minute)
	before := takeSnapshot(t, k, v)
	const missing = 424242
	big := `{"a":"` + strings.Repeat("x", cks.MaxJSONBytes) + `"}`
	writes := []struct {
		name         string
		id, base     int64
		content, by  string
		field        string // the FieldError's field, unless wantNotFound
		wantNotFound bool
	}{
		{"base of another object", o.ID, otherNext - 1, `{"x":1}`, "w", "base_version", false},
		{"base of another object (its head)", o.ID, otherNext, `{"x":1}`, "w", "base_version", false},
		{"the next number", o.ID, max(a.Version, b.Version) + 1, `{"x":1}`, "w", "base_version", false},
		{"unknown base", o.ID, missing, `{"x":1}`, "w", "base_version", false},
		{"base 0", o.ID, 0, `{"x":1}`, "w", "base_version", false},
		{"negative base", o.ID, -1, `{"x":1}`, "w", "base_version", false},
		{"array content", o.ID, a.Version, `[1]`, "w", "content", false},
		{"string content", o.ID, a.Version, `"x"`, "w", "content", false},
		{"null content", o.ID, a.Version, `null`, "w", "content", false},
		{"broken content", o.ID, a.Version, `{"a":`, "w", "content", false},
		{"two values", o.ID, a.Version, `{"a":1} {"b":2}`, "w", "content", false},
		{"content too large", o.ID, a.Version, big, "w", "content", false},
		{"empty author", o.ID, a.Version, `{"x":1}`, "", "author", false},
		{"unknown object", missing, a.Version, `{"x":1}`, "w", "", true},
	}
	for _, c := range writes {
		w, err := v.WriteVersion(ctx(t), c.id, c.base, json.RawMessage(c.content), c.by)
		what := "WriteVersion with " + c.name
		if c.wantNotFound {
			if !errors.Is(err, cks.ErrNotFound) || !strings.Contains(err.Error(), fmt.Sprint(c.id)) {
				t.Errorf("%s: err = %v, want ErrNotFound naming %d", what, err, c.id)
			}
		} else {
			wantFieldError(t, what, err, c.field)
		}
		if err == nil {
			t.Errorf("%s wrote %s", what, backendtest.AsJSON(t, w))
		}
		wantNothingWritten(t, what, k, v, before)
	}
	heads := []int64{a.Version, b.Version}
	badReason := resolvesReason(`{"rule":"x"}`)
	badReason.Object.Kind = ""
	badLink := resolvesReason(`{"rule":"x"}`)
	badLink.Links = []knowledge.LinkFrom{{Dst: missing, BaseType: "depends_on"}}
	merges := []struct {
		name    string
		id      int64
		heads   []int64
		content string
		by      string
		reason  *knowledge.Attachment
		check   func(error) bool
		want    string
	}{
		{"nil heads", o.ID, nil, `{"m":1}`, "fr", nil, func(err error) bool { return cks.IsFieldError(err, "heads") }, "a FieldError naming heads"},
		{"empty heads", o.ID, []int64{}, `{"m":1}`, "fr", nil, func(err error) bool { return cks.IsFieldError(err, "heads") }, "a FieldError naming heads"},
		{"array content", o.ID, heads, `[1]`, "fr", nil, func(err error) bool { return cks.IsFieldError(err, "content") }, "a FieldError naming content"},
		{"null content", o.ID, heads, `null`, "fr", nil, func(err error) bool { return cks.IsFieldError(err, "content") }, "a FieldError naming content"},
		{"empty author", o.ID, heads, `{"m":1}`, "", nil, func(err error) bool { return cks.IsFieldError(err, "author") }, "a FieldError naming author"},
		{"reason without a kind", o.ID, heads, `{"m":1}`, "fr", badReason,
			func(err error) bool { return cks.IsFieldError(err, "reason.object.kind") }, "a FieldError naming reason.object.kind"},
		{"reason linked to a missing object", o.ID, heads, `{"m":1}`, "fr", badLink,
			func(err error) bool { return cks.IsFieldError(err, "reason.links[0].dst") }, "a FieldError naming reason.links[0].dst"},
		{"unknown object", missing, heads, `{"m":1}`, "fr", nil, func(err error) bool {
			return errors.Is(err, cks.ErrNotFound) && strings.Contains(err.Error(), fmt.Sprint(missing))
		}, fmt.Sprintf("ErrNotFound naming %d", missing)},
	}
	for _, c := range merges {
		for _, reason := range []*knowledge.Attachment{c.reason, resolvesReason(`{"rule":"y"}`)} {
			what := "MergeVersions with " + c.name
			m, r, err := v.MergeVersions(ctx(t), c.id, c.heads, json.RawMessage(c.content), c.by, reason)
			if !c.check(err) {
				t.Errorf("%s: err = %v, want %s", what, err, c.want)
			}
			if err == nil || r != nil {
				t.Errorf("%s: returned %s, reason %s", what, backendtest.AsJSON(t, m), backendtest.AsJSON(t, r))
			}
			wantNothingWritten(t, what, k, v, before)
			if c.reason != nil {
				break
			}
		}
	}
	if _, err := v.Heads(ctx(t), missing); !errors.Is(err, cks.ErrNotFound) {
		t.Errorf("Heads(%d): err = %v, want ErrNotFound", missing, err)
	}
	if vs, err := v.ObjectVersions(ctx(t), missing); !errors.Is(err, cks.ErrNotFound) && (err != nil || len(vs) != 0) {
		t.Errorf("ObjectVersions(%d) = %s, %v; want ErrNotFound (or nothing)", missing, backendtest.AsJSON(t, vs), err)
	}
	// Every refused write left the fork as it was, ready to merge.
	if _, _, err := v.MergeVersions(ctx(t), o.ID, heads, json.RawMessage(`{"m":1}`), "fr", nil); err != nil {
		t.Fatalf("merge after the refused calls: %v", err)
	}
}

// testVersionTransition: a transition with content writes a version based
// on the object's latest version; its attachments get a first version.
func testVersionTransition(t *testing.T, open backendtest.Opener) {
	k, v, clk := versionStore(t, open)
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "question", Content: json.RawMessage(`{"q":1}`), Status: "a", CreatedBy: "op"})
	first := o.HeadVersion
	claim := mustClaimObjects(t, k, "a", "critic-1", 1, 1)[0]
	clk.Advance(time.Minute)
	got, atts, err := k.TransitionObject(ctx(t), o.ID, claim.ClaimToken, knowledge.ObjectTransition{
		From: "a", To: "b", Action: "completed", Agent: "critic", Content: json.RawMessage(`{ "q": 2, "v": [1] }`),
		Attach: []knowledge.Attachment{
			{Object: knowledge.NewObject{Kind: "critique", Content: json.RawMessage(`{"t":1}`), CreatedBy: "critic"}, BaseType: "depends_on", SemanticType: "critiques"},
			{Object: knowledge.NewObject{Kind: "claim", Status: "proposed", CreatedBy: "critic"}, BaseType: "depends_on", SemanticType: "supports"},
		},
		Reasoning: 0,
	})
	if err != nil {
		t.Fatalf("TransitionObject: %v", err)
	}
	hs := mustHeads(t, v, o.ID)
	if len(hs) != 1 || got.HeadVersion != hs[0].Version || got.Forked {
		t.Fatalf("transitioned object %s, heads %s: want one new head", backendtest.AsJSON(t, got), backendtest.AsJSON(t, hs))
	}
	tv := hs[0]
	if tv.Author == "" {
		t.Errorf("transition version has no author: %s", backendtest.AsJSON(t, tv))
	}
	wantVersion(t, "transition version", tv, o.ID, []int64{first}, `{"q":2,"v":[1]}`, tv.Author, clk.Now())
	wantObjectHead(t, k, o.ID, tv, false)
	if len(atts) != 2 {
		t.Fatalf("attachments %s", backendtest.AsJSON(t, atts))
	}
	for i, want := range []string{`{"t":1}`, `{}`} {
		a := atts[i]
		vs := backendtest.MustVersions(t, v, a.ID)
		if len(vs) != 1 || a.HeadVersion != vs[0].Version || a.Forked {
			t.Fatalf("attachment %d: %s, versions %s; want its first version as head", i, backendtest.AsJSON(t, a), backendtest.AsJSON(t, vs))
		}
		wantVersion(t, fmt.Sprintf("attachment %d first version", i), vs[0], a.ID, nil, want, "critic", clk.Now())
		wantObjectHead(t, k, a.ID, vs[0], false)
	}
	// A transition without content writes no version.
	claim = mustClaimObjects(t, k, "b", "critic-1", 1, 1)[0]
	clk.Advance(time.Minute)
	got, _, err = k.TransitionObject(ctx(t), o.ID, claim.ClaimToken, knowledge.ObjectTransition{From: "b", To: "c", Action: "completed", Agent: "critic", Reasoning: -1})
	if err != nil {
		t.Fatal(err)
	}
	if vs := backendtest.MustVersions(t, v, o.ID); len(vs) != 2 || got.HeadVersion != tv.Version {
		t.Fatalf("transition without content: versions %v, head_version %d; want %v and %d", versionNumbers(vs), got.HeadVersion, []int64{first, tv.Version}, tv.Version)
	}
	// On a forked object, the transition writes from the latest version
	// (the object's head_version) and leaves the other head.
	clk.Advance(time.Minute)
	side := mustWrite(t, v, o.ID, first, `{"q":"side"}`, "editor") // from a stale base: forked
	wantHeads(t, v, o.ID, sorted(tv.Version, side.Version)...)
	wantObjectHead(t, k, o.ID, side, true)
	claim = mustClaimObjects(t, k, "c", "critic-1", 1, 1)[0]
	clk.Advance(time.Minute)
	got, _, err = k.TransitionObject(ctx(t), o.ID, claim.ClaimToken, knowledge.ObjectTransition{From: "c", To: "d", Action: "completed",
		Agent: "critic", Content: json.RawMessage(`{"q":3}`), Reasoning: -1})
	if err != nil {
		t.Fatal(err)
	}
	hs = mustHeads(t, v, o.ID)
	if len(hs) != 2 || hs[0].Version != tv.Version || got.HeadVersion != hs[1].Version || !got.Forked {
		t.Fatalf("transition of a forked object: %s, heads %s; want heads %d and a new one based on %d", backendtest.AsJSON(t, got), backendtest.AsJSON(t, hs), tv.Version, side.Version)
	}
	wantVersion(t, "transition of a forked object", hs[1], o.ID, []int64{side.Version}, `{"q":3}`, hs[1].Author, clk.Now())
	wantObjectHead(t, k, o.ID, hs[1], true)
}

// testVersionDAG: ObjectVersions returns the whole DAG ascending, every
// version with its parents; Heads and fork heads are ascending.
func testVersionDAG(t *testing.T, open backendtest.Opener) {
	k, v, clk := versionStore(t, open)
	o := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"n":0}`), CreatedBy: "op"})
	noise := backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim"})
	type step struct {
		name    string
		parents []int64
		v       cks.Version
	}
	var steps []step
	add := func(name string, w cks.Version, parents ...int64) cks.Version {
		steps = append(steps, step{name, parents, w})
		return w
	}
	root := add("root", mustHeads(t, v, o.ID)[0])
	write := func(name string, base cks.Version) cks.Version {
		t.Helper()
		clk.Advance(time.Second)
		mustWrite(t, v, noise.ID, mustHeads(t, v, noise.ID)[0].Version, fmt.Sprintf(`{"noise":%q}`, name), "noise") // interleaved ids
		return add(name, mustWrite(t, v, o.ID, base.Version, fmt.Sprintf(`{"n":%q}`, name), "w-"+name), base.Version)
	}
	a := write("a", root)
	b := write("b", root)
	c := write("c", a)
	d := write("d", root)
	wantHeads(t, v, o.ID, sorted(b.Version, c.Version, d.Version)...)
	want := backendtest.AsJSON(t, []cks.Fork{{ObjectID: o.ID, Heads: sorted(b.Version, c.Version, d.Version)}})
	if fs := backendtest.MustForks(t, v, 0, cks.MaxListLimit); backendtest.AsJSON(t, fs) != want {
		t.Fatalf("ForkedObjects = %s, want %s", backendtest.AsJSON(t, fs), want)
	}
	clk.Advance(time.Second)
	m, _, err := v.MergeVersions(ctx(t), o.ID, []int64{d.Version, b.Version, c.Version}, json.RawMessage(`{"n":"m"}`), "fr", nil)
	if err != nil {
		t.Fatalf("three-way MergeVersions: %v", err)
	}
	add("m", m, sorted(b.Version, c.Version, d.Version)...)
	e := write("e", m)
	vs := backendtest.MustVersions(t, v, o.ID)
	if len(vs) != len(steps) {
		t.Fatalf("versions %v, want %d", versionNumbers(vs), len(steps))
	}
	for i, s := range steps {
		if i > 0 && vs[i].Version <= vs[i-1].Version {
			t.Fatalf("versions not ascending: %v", versionNumbers(vs))
		}
		if backendtest.VersionKey(t, vs[i]) != backendtest.VersionKey(t, s.v) || fmt.Sprint(vs[i].Parents) != fmt.Sprint(s.parents) {
			t.Fatalf("version %d (%s): %s\nwritten as %s, parents %v", i, s.name, backendtest.VersionKey(t, vs[i]), backendtest.VersionKey(t, s.v), s.parents)
		}
	}
	wantHeads(t, v, o.ID, e.Version)
	wantObjectHead(t, k, o.ID, e, false)
}

// testVersionForkedObjectsPaging: ForkedObjects pages by object id.
func testVersionForkedObjectsPaging(t *testing.T, open backendtest.Opener) {
	k, v, _ := versionStore(t, open)
	var os []cks.Object
	for i := range 7 {
		os = append(os, backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Title: fmt.Sprint(i)}))
	}
	want := map[int64][]int64{}
	for _, i := range []int{0, 2, 3, 6} {
		a, b := fork(t, v, os[i], fmt.Sprint(i))
		want[os[i].ID] = sorted(a.Version, b.Version)
	}
	// Three heads on one of them.
	x := mustWrite(t, v, os[3].ID, os[3].HeadVersion, `{"third":true}`, "w")
	want[os[3].ID] = sorted(append(want[os[3].ID], x.Version)...)
	// Forked then merged; written linearly: not forked.
	a, b := fork(t, v, os[4], "4")
	if _, _, err := v.MergeVersions(ctx(t), os[4].ID, []int64{a.Version, b.Version}, json.RawMessage(`{}`), "fr", nil); err != nil {
		t.Fatal(err)
	}
	mustWrite(t, v, os[1].ID, os[1].HeadVersion, `{"linear":true}`, "w")
	forked := []int64{os[0].ID, os[2].ID, os[3].ID, os[6].ID}
	wantForks := func(ids ...int64) string {
		fs := []cks.Fork{}
		for _, id := range ids {
			fs = append(fs, cks.Fork{ObjectID: id, Heads: want[id]})
		}
		return backendtest.AsJSON(t, fs)
	}
	show := func(fs []cks.Fork) string {
		if fs == nil {
			fs = []cks.Fork{}
		}
		return backendtest.AsJSON(t, fs)
	}
	cases := []struct {
		after int64
		limit int
		want  string
	}{
		{0, cks.MaxListLimit, wantForks(forked...)},
		{0, 1, wantForks(forked[0])},
		{0, 2, wantForks(forked[:2]...)},
		{forked[1], 2, wantForks(forked[2:]...)},
		{forked[1] - 1, 2, wantForks(forked[1:3]...)},
		{os[4].ID, 10, wantForks(forked[3])},
		{forked[3], 10, wantForks()},
		{forked[3] + 1000, 1, wantForks()},
	}
	for _, c := range cases {
		if got := show(backendtest.MustForks(t, v, c.after, c.limit)); got != c.want {
			t.Errorf("ForkedObjects(after %d, limit %d) = %s, want %s", c.after, c.limit, got, c.want)
		}
	}
	// Following the cursor one page at a time visits every fork once.
	var got []cks.Fork
	for after, pages := int64(0), 0; ; pages++ {
		fs := backendtest.MustForks(t, v, after, 3)
		if len(fs) > 3 || pages > 5 {
			t.Fatalf("page after %d: %s", after, show(fs))
		}
		got = append(got, fs...)
		if len(fs) < 3 {
			break
		}
		after = fs[len(fs)-1].ObjectID
	}
	if show(got) != wantForks(forked...) {
		t.Fatalf("paged forks %s, want %s", show(got), wantForks(forked...))
	}
	for _, limit := range []int{0, -1, cks.MaxListLimit + 1} {
		fs, err := v.ForkedObjects(ctx(t), 0, limit)
		wantFieldError(t, fmt.Sprintf("ForkedObjects(0, %d) = %s", limit, show(fs)), err, "limit")
	}
}

// testVersionListEdgesPaging: ListEdges pages through every edge by id.
func testVersionListEdgesPaging(t *testing.T, open backendtest.Opener) {
	k, v, clk := versionStore(t, open)
	if es, err := v.ListEdges(ctx(t), 0, cks.MaxListLimit); err != nil || len(es) != 0 {
		t.Fatalf("ListEdges of an empty store = %s, %v", backendtest.AsJSON(t, es), err)
	}
	var os []cks.Object
	for i := range 4 {
		os = append(os, backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: "claim", Title: fmt.Sprint(i)}))
	}
	w := func(f float64) *float64 { return &f }
	var in []knowledge.NewEdge
	for i := range 7 {
		in = append(in, knowledge.NewEdge{Src: os[i%4].ID, Dst: os[(i+1)%4].ID, BaseType: "depends_on", SemanticType: []string{"supports", "refutes", ""}[i%3]})
		if i%2 == 0 {
			in[i].Weight = w(float64(i) / 10)
		}
	}
	clk.Advance(time.Minute)
	edges, err := k.AddEdges(ctx(t), in[:4])
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	more, err := k.AddEdges(ctx(t), in[4:])
	if err != nil {
		t.Fatal(err)
	}
	edges = append(edges, more...)
	// A merge's reason edge is an edge too.
	a, b := fork(t, v, os[0], "x")
	clk.Advance(time.Minute)
	_, r, err := v.MergeVersions(ctx(t), os[0].ID, []int64{a.Version, b.Version}, json.RawMessage(`{}`), "fr", resolvesReason(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	got := backendtest.MustGetObject(t, k, os[0].ID)
	for _, e := range got.Edges {
		if e.Src == r.ID {
			edges = append(edges, e)
		}
	}
	if len(edges) != 8 {
		t.Fatalf("edges %s, want 7 added and the reason edge", backendtest.AsJSON(t, edges))
	}
	slices.SortFunc(edges, func(x, y cks.Edge) int { return int(x.ID - y.ID) })
	show := func(es []cks.Edge) string {
		if es == nil {
			es = []cks.Edge{}
		}
		return backendtest.AsJSON(t, es)
	}
	list := func(after int64, limit int) []cks.Edge {
		t.Helper()
		es, err := v.ListEdges(ctx(t), after, limit)
		if err != nil {
			t.Fatalf("ListEdges(%d, %d): %v", after, limit, err)
		}
		return es
	}
	cases := []struct {
		after int64
		limit int
		want  []cks.Edge
	}{
		{0, cks.MaxListLimit, edges},
		{0, 3, edges[:3]},
		{edges[2].ID, 3, edges[3:6]},
		{edges[5].ID, 3, edges[6:]},
		{edges[3].ID - 1, 1, edges[3:4]},
		{edges[7].ID, 10, nil},
	}
	for _, c := range cases {
		if got := show(list(c.after, c.limit)); got != show(c.want) {
			t.Errorf("ListEdges(after %d, limit %d) =\n %s\nwant %s", c.after, c.limit, got, show(c.want))
		}
	}
	for _, limit := range []int{0, -1, cks.MaxListLimit + 1} {
		es, err := v.ListEdges(ctx(t), 0, limit)
		wantFieldError(t, fmt.Sprintf("ListEdges(0, %d) = %s", limit, show(es)), err, "limit")
	}
}

// versionHandles opens n handles on open's database sharing one fake clock.
func versionHandles(t testing.TB, open backendtest.Opener, n int) ([]*knowledge.Service, []*knowledge.Service) {
	t.Helper()
	clk := clock.NewFake(backendtest.T0)
	var ks []*knowledge.Service
	var vs []*knowledge.Service
	for range n {
		s := open(t, driver.WithClock(clk))
		ks, vs = append(ks, s.Objects), append(vs, s.Objects)
	}
	return ks, vs
}

// testVersionConcurrentWrites: two handles writing from one base at once
// always fork the object; neither write is lost.
func testVersionConcurrentWrites(t *testing.T, open backendtest.Opener) {
	const rounds = 20
	ks, vs := versionHandles(t, open, 2)
	c := ctx(t)
	var forked []int64
	for round := range rounds {
		o := backendtest.MustCreateObject(t, ks[0], knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"base":true}`), Title: fmt.Sprint(round)})
		var (
			wg   sync.WaitGroup
			got  [2]cks.Version
			errs [2]error
		)
		start := make(chan struct{})
		for i, v := range vs {
			wg.Go(func() {
				<-start
				got[i], errs[i] = v.WriteVersion(c, o.ID, o.HeadVersion, json.RawMessage(fmt.Sprintf(`{"writer":%d,"round":%d}`, i, round)), fmt.Sprintf("w%d", i))
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: writer %d: %v", round, i, err)
			}
			if fmt.Sprint(got[i].Parents) != fmt.Sprint([]int64{o.HeadVersion}) || got[i].Author != fmt.Sprintf("w%d", i) {
				t.Fatalf("round %d: writer %d wrote %s, want parents [%d]", round, i, backendtest.AsJSON(t, got[i]), o.HeadVersion)
			}
		}
		wantHeads(t, vs[1], o.ID, sorted(got[0].Version, got[1].Version)...)
		if all := backendtest.MustVersions(t, vs[0], o.ID); fmt.Sprint(versionNumbers(all)) != fmt.Sprint(sorted(o.HeadVersion, got[0].Version, got[1].Version)) {
			t.Fatalf("round %d: versions %v, want the base and both writes", round, versionNumbers(all))
		}
		r := backendtest.MustGetObject(t, ks[1], o.ID)
		if !r.Forked || (r.HeadVersion != got[0].Version && r.HeadVersion != got[1].Version) {
			t.Fatalf("round %d: object %s, want forked at one of the writes %d, %d", round, backendtest.AsJSON(t, r), got[0].Version, got[1].Version)
		}
		w := got[0]
		if r.HeadVersion == got[1].Version {
			w = got[1]
		}
		wantObjectHead(t, ks[0], o.ID, w, true)
		forked = append(forked, o.ID)
	}
	var listed []int64
	for _, f := range backendtest.MustForks(t, vs[0], 0, cks.MaxListLimit) {
		listed = append(listed, f.ObjectID)
	}
	if fmt.Sprint(listed) != fmt.Sprint(forked) {
		t.Fatalf("ForkedObjects lists %v, want %v", listed, forked)
	}
}

// testVersionConcurrentMerges: two handles merging one fork at once: one
// merge wins, the other is ErrConflict, and the object has one head.
func testVersionConcurrentMerges(t *testing.T, open backendtest.Opener) {
	const rounds = 20
	ks, vs := versionHandles(t, open, 2)
	c := ctx(t)
	for round := range rounds {
		o := backendtest.MustCreateObject(t, ks[0], knowledge.NewObject{Kind: "claim", Title: fmt.Sprint(round)})
		a, b := fork(t, vs[round%2], o, fmt.Sprint(round))
		objects := len(backendtest.AllObjects(t, ks[0]))
		var (
			wg      sync.WaitGroup
			got     [2]cks.Version
			reasons [2]*cks.Object
			errs    [2]error
		)
		start := make(chan struct{})
		for i, v := range vs {
			heads := []int64{a.Version, b.Version}
			if i == 1 {
				heads = []int64{b.Version, a.Version}
			}
			wg.Go(func() {
				<-start
				got[i], reasons[i], errs[i] = v.MergeVersions(c, o.ID, heads, json.RawMessage(fmt.Sprintf(`{"merger":%d}`, i)),
					fmt.Sprintf("fr%d", i), resolvesReason(fmt.Sprintf(`{"merger":%d}`, i)))
			})
		}
		close(start)
		wg.Wait()
		var won []int
		for i, err := range errs {
			switch {
			case err == nil:
				won = append(won, i)
			case !errors.Is(err, cks.ErrConflict):
				t.Fatalf("round %d: merger %d: err = %v, want success or ErrConflict", round, i, err)
			}
		}
		if len(won) != 1 {
			t.Fatalf("round %d: %d merges succeeded (errors %v), want exactly one", round, len(won), errs)
		}
		w := won[0]
		if reasons[1-w] != nil {
			t.Fatalf("round %d: the refused merge returned reason %s", round, backendtest.AsJSON(t, reasons[1-w]))
		}
		if fmt.Sprint(got[w].Parents) != fmt.Sprint(sorted(a.Version, b.Version)) || got[w].Author != fmt.Sprintf("fr%d", w) {
			t.Fatalf("round %d: merge %s, want parents %v", round, backendtest.AsJSON(t, got[w]), sorted(a.Version, b.Version))
		}
		wantHeads(t, vs[1-w], o.ID, got[w].Version)
		wantObjectHead(t, ks[0], o.ID, got[w], false)
		if all := backendtest.MustVersions(t, vs[0], o.ID); len(all) != 4 {
			t.Fatalf("round %d: versions %v, want base, two sides and one merge", round, versionNumbers(all))
		}
		if n := len(backendtest.AllObjects(t, ks[1])); n != objects+1 || reasons[w] == nil {
			t.Fatalf("round %d: %d objects after the merges, %d before; reason %s: want exactly one reason node", round, n, objects, backendtest.AsJSON(t, reasons[w]))
		}
		if e := backendtest.MustGetObject(t, ks[0], o.ID).Edges; len(e) != 1 || e[0].Src != reasons[w].ID {
			t.Fatalf("round %d: edges %s, want the winner's reason edge alone", round, backendtest.AsJSON(t, e))
		}
	}
	if fs := backendtest.MustForks(t, vs[0], 0, cks.MaxListLimit); len(fs) != 0 {
		t.Fatalf("forks left after the merges: %s", backendtest.AsJSON(t, fs))
	}
}
