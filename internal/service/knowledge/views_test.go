package knowledge_test

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// TestKnowledgeViews: the reads of many objects at once (GetObjects, View,
// ViewWithVersions) answer what the reads of one object at a time do, on
// both backends.
func TestKnowledgeViews(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"GetObjects": testGetObjects,
		"View":       testView,
	})
}

// graph creates a question q, two claims linked to it (one also by a
// self-loop, one twice), a note linked to the first claim only, and forks
// q; it returns q, the claims and the note.
func graph(t *testing.T, k *knowledge.Service) (q, c1, c2, note cks.Object) {
	t.Helper()
	mk := func(kind, status string) cks.Object {
		return backendtest.MustCreateObject(t, k, knowledge.NewObject{Kind: kind, Title: kind, Content: []byte(`{"n":1}`),
			Status: status, CreatedBy: "test"})
	}
	q, c1, c2, note = mk("question", "awaiting_research"), mk("claim", "proposed"), mk("claim", "accepted"), mk("note", "")
	edge := func(src, dst int64, sem string) knowledge.NewEdge {
		return knowledge.NewEdge{Src: src, Dst: dst, BaseType: "depends_on", SemanticType: sem}
	}
	if _, err := k.AddEdges(ctx(t), []knowledge.NewEdge{edge(c1.ID, q.ID, "answers"), edge(c2.ID, q.ID, "answers"),
		edge(q.ID, c2.ID, "asks"), edge(c1.ID, c1.ID, "restates"), edge(note.ID, c1.ID, "supports")}); err != nil {
		t.Fatal(err)
	}
	for _, content := range []string{`{"n":2}`, `{"n":3}`} {
		if _, err := k.WriteVersion(ctx(t), q.ID, 1, []byte(content), "editor"); err != nil {
			t.Fatal(err)
		}
	}
	return q, c1, c2, note
}

// testGetObjects: GetObjects reads each object as GetObject does — with its
// log and its edges, an edge between two of them under both and a
// self-loop once — each once, ascending by id; an unknown id is
// ErrNotFound naming it, and no ids read none.
func testGetObjects(t *testing.T, open backendtest.Opener) {
	k, _ := knowledgeStore(t, open)
	q, c1, c2, note := graph(t, k)
	got, err := k.GetObjects(ctx(t), []int64{note.ID, c1.ID, q.ID, c2.ID, c1.ID})
	if err != nil {
		t.Fatal(err)
	}
	var want []cks.Object
	for _, id := range []int64{q.ID, c1.ID, c2.ID, note.ID} {
		want = append(want, backendtest.MustGetObject(t, k, id))
	}
	if backendtest.AsJSON(t, got) != backendtest.AsJSON(t, want) {
		t.Fatalf("GetObjects:\n %s\nwant what GetObject reads:\n %s", backendtest.AsJSON(t, got), backendtest.AsJSON(t, want))
	}
	if len(want[1].Edges) != 3 || len(want[1].Log) != 1 || len(want[3].Log) != 0 {
		t.Fatalf("claim %d: %d edges, %d log entries; note: %d log entries", c1.ID, len(want[1].Edges), len(want[1].Log), len(want[3].Log))
	}
	if _, err := k.GetObjects(ctx(t), []int64{q.ID, 424242}); !errors.Is(err, cks.ErrNotFound) || !strings.Contains(err.Error(), "424242") {
		t.Fatalf("GetObjects with an unknown id: %v, want ErrNotFound naming it", err)
	}
	if none, err := k.GetObjects(ctx(t), nil); err != nil || len(none) != 0 {
		t.Fatalf("GetObjects(nil) = %v, %v", none, err)
	}
}

// testView: View is the object as GetObject reads it, forked as its heads
// say, its heads as Heads reads them, and every object linked to it (each
// once, ascending, not itself) as GetObject reads it; ViewWithVersions adds
// ObjectVersions' list; an unknown object is ErrNotFound.
func testView(t *testing.T, open backendtest.Opener) {
	k, _ := knowledgeStore(t, open)
	q, c1, c2, _ := graph(t, k)
	for _, id := range []int64{q.ID, c1.ID} {
		o := backendtest.MustGetObject(t, k, id)
		heads, err := k.Heads(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		want := cks.ObjectView{Object: o, Heads: heads, Forked: len(heads) > 1 || o.Forked, Reasoning: []cks.Object{}}
		want.Object.Forked = want.Forked
		seen := map[int64]bool{id: true}
		for _, e := range o.Edges {
			for _, end := range []int64{e.Src, e.Dst} {
				if !seen[end] {
					seen[end] = true
					want.Reasoning = append(want.Reasoning, backendtest.MustGetObject(t, k, end))
				}
			}
		}
		slices.SortFunc(want.Reasoning, func(a, b cks.Object) int { return cmp.Compare(a.ID, b.ID) })
		got, err := k.View(ctx(t), id)
		if err != nil || backendtest.AsJSON(t, got) != backendtest.AsJSON(t, want) {
			t.Fatalf("View(%d) = %v:\n %s\nwant\n %s", id, err, backendtest.AsJSON(t, got), backendtest.AsJSON(t, want))
		}
		all, err := k.ObjectVersions(ctx(t), id)
		if err != nil {
			t.Fatal(err)
		}
		gotV, versions, err := k.ViewWithVersions(ctx(t), id)
		if err != nil || backendtest.AsJSON(t, gotV) != backendtest.AsJSON(t, want) || backendtest.AsJSON(t, versions) != backendtest.AsJSON(t, all) {
			t.Fatalf("ViewWithVersions(%d) = %v:\n %s\n %s\nwant\n %s\n %s", id, err, backendtest.AsJSON(t, gotV),
				backendtest.AsJSON(t, versions), backendtest.AsJSON(t, want), backendtest.AsJSON(t, all))
		}
	}
	if v, err := k.View(ctx(t), q.ID); err != nil || !v.Forked || len(v.Heads) != 2 || len(v.Reasoning) != 2 || v.Reasoning[1].ID != c2.ID {
		t.Fatalf("the question's view: forked %v, %d heads, %d linked, %v", v.Forked, len(v.Heads), len(v.Reasoning), err)
	}
	if _, err := k.View(ctx(t), 424242); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("View of no object: %v", err)
	}
	if _, _, err := k.ViewWithVersions(ctx(t), 424242); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("ViewWithVersions of no object: %v", err)
	}
}
