package knowledge_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// TestBadText: the knowledge store's writes and reads refuse text Postgres
// cannot store or compare, alike on both backends.
func TestBadText(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"BadTextRefusedByKnowledgeWrites": testBadTextRefusedByKnowledgeWrites,
		"BadTextRefusedByKnowledgeReads":  testBadTextRefusedByKnowledgeReads,
	})
}

// knowledgeState is everything of the knowledge store a refused call must
// leave as it was: every object with its log, edges and versions, the forks
// and the edges.
func knowledgeState(t testing.TB, s *backend.Backend) map[string]string {
	t.Helper()
	out := map[string]string{}
	for id, o := range backendtest.ObjectSnapshot(t, s.Objects) {
		out[fmt.Sprint("object ", id)] = o
	}
	for id, v := range backendtest.VersionSnapshot(t, s.Objects, s.Objects) {
		out[fmt.Sprint("versions of ", id)] = v
	}
	out["forks"] = backendtest.AsJSON(t, backendtest.MustForks(t, s.Objects, 0, cks.MaxListLimit))
	edges, err := s.Objects.ListEdges(ctx(t), 0, cks.MaxListLimit)
	if err != nil {
		t.Fatalf("ListEdges: %v", err)
	}
	out["edges"] = backendtest.AsJSON(t, edges)
	return out
}

// testBadTextRefusedByKnowledgeWrites: every knowledge store write with a
// string or JSON argument refuses a value Postgres cannot store with a
// FieldError naming the argument as the API spells it, on both backends,
// and writes nothing.
func testBadTextRefusedByKnowledgeWrites(t *testing.T, open backendtest.Opener) {
	s, clk := backendtest.FakeStore(t, open)
	question := backendtest.MustCreateObject(t, s.Objects, knowledge.NewObject{Kind: "question", Title: "q", Status: "awaiting_bt", CreatedBy: "op"})
	backendtest.MustCreateObject(t, s.Objects, knowledge.NewObject{Kind: "question", Title: "c", Status: "claimed_bt", CreatedBy: "op"})
	held := mustClaimObjects(t, s.Objects, "claimed_bt", "w-objects", 1, 1)[0]
	versioned := backendtest.MustCreateObject(t, s.Objects, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"v":1}`), CreatedBy: "op"})
	forked := backendtest.MustCreateObject(t, s.Objects, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"f":0}`), CreatedBy: "op"})
	headA, headB := fork(t, s.Objects, forked, "bt")
	heads := []int64{headA.Version, headB.Version}
	clk.Advance(time.Minute) // any write now would change an updated_at

	c := func(op, field string, call func(v string) error) backendtest.BadInput {
		return backendtest.BadInput{Op: op, Field: field, Call: call}
	}
	j := func(op, field string, call func(v string) error) backendtest.BadInput {
		return backendtest.BadInput{Op: op, Field: field, JSON: true, Call: call}
	}
	transition := func(tr knowledge.ObjectTransition) error {
		_, _, err := s.Objects.TransitionObject(ctx(t), held.ID, held.ClaimToken, tr)
		return err
	}
	goodTransition := func() knowledge.ObjectTransition {
		return knowledge.ObjectTransition{From: "claimed_bt", To: "done_bt", Action: "completed", Agent: "bt-step", Reasoning: -1}
	}
	attach := func(o knowledge.NewObject) knowledge.ObjectTransition {
		tr := goodTransition()
		if o.Kind == "" {
			o.Kind = "critique"
		}
		tr.Attach = []knowledge.Attachment{{Object: o, BaseType: "depends_on", SemanticType: "critiques"}}
		return tr
	}
	merge := func(content, author string, reason *knowledge.Attachment) error {
		_, _, err := s.Objects.MergeVersions(ctx(t), forked.ID, heads, json.RawMessage(content), author, reason)
		return err
	}
	cases := []backendtest.BadInput{
		c("CreateObject", "kind", func(v string) error {
			_, err := s.Objects.CreateObject(ctx(t), knowledge.NewObject{Kind: v})
			return err
		}),
		c("CreateObject", "title", func(v string) error {
			_, err := s.Objects.CreateObject(ctx(t), knowledge.NewObject{Kind: "q", Title: v})
			return err
		}),
		c("CreateObject", "status", func(v string) error {
			_, err := s.Objects.CreateObject(ctx(t), knowledge.NewObject{Kind: "q", Status: v})
			return err
		}),
		c("CreateObject", "created_by", func(v string) error {
			_, err := s.Objects.CreateObject(ctx(t), knowledge.NewObject{Kind: "q", CreatedBy: v})
			return err
		}),
		j("CreateObject", "content", func(v string) error {
			_, err := s.Objects.CreateObject(ctx(t), knowledge.NewObject{Kind: "q", Content: json.RawMessage(v)})
			return err
		}),
		c("AddEdges", "edges[0].semantic_type", func(v string) error {
			_, err := s.Objects.AddEdges(ctx(t), []knowledge.NewEdge{{Src: question.ID, Dst: versioned.ID, BaseType: "depends_on", SemanticType: v}})
			return err
		}),
		c("ClaimObjects", "worker", func(v string) error { _, err := s.Objects.ClaimObjects(ctx(t), "awaiting_bt", v, 1); return err }),
		c("ClaimObject", "worker", func(v string) error {
			_, err := s.Objects.ClaimObject(ctx(t), question.ID, v, []string{"awaiting_bt"})
			return err
		}),
		c("TouchClaim", "claim_token", func(v string) error { return s.Objects.TouchClaim(ctx(t), held.ID, held.ClaimToken+v) }),
		c("ReleaseClaim", "claim_token", func(v string) error { return s.Objects.ReleaseClaim(ctx(t), held.ID, held.ClaimToken+v) }),
		c("TransitionObject", "claim_token", func(v string) error {
			_, _, err := s.Objects.TransitionObject(ctx(t), held.ID, held.ClaimToken+v, goodTransition())
			return err
		}),
		c("TransitionObject", "agent", func(v string) error { tr := goodTransition(); tr.Agent = v; return transition(tr) }),
		j("TransitionObject", "content", func(v string) error {
			tr := goodTransition()
			tr.Content = json.RawMessage(v)
			return transition(tr)
		}),
		c("TransitionObject", "attach[0].object.title", func(v string) error { return transition(attach(knowledge.NewObject{Title: v})) }),
		c("TransitionObject", "attach[0].object.created_by", func(v string) error {
			return transition(attach(knowledge.NewObject{CreatedBy: v}))
		}),
		j("TransitionObject", "attach[0].object.content", func(v string) error {
			return transition(attach(knowledge.NewObject{Content: json.RawMessage(v)}))
		}),
		j("WriteVersion", "content", func(v string) error {
			_, err := s.Objects.WriteVersion(ctx(t), versioned.ID, versioned.HeadVersion, json.RawMessage(v), "w")
			return err
		}),
		c("WriteVersion", "author", func(v string) error {
			_, err := s.Objects.WriteVersion(ctx(t), versioned.ID, versioned.HeadVersion, json.RawMessage(`{"v":2}`), v)
			return err
		}),
		j("MergeVersions", "content", func(v string) error { return merge(v, "fr", nil) }),
		c("MergeVersions", "author", func(v string) error { return merge(`{"m":1}`, v, nil) }),
		c("MergeVersions", "reason.object.title", func(v string) error {
			r := resolvesReason(`{"rule":"x"}`)
			r.Object.Title = v
			return merge(`{"m":1}`, "fr", r)
		}),
		j("MergeVersions", "reason.object.content", func(v string) error { return merge(`{"m":1}`, "fr", resolvesReason(v)) }),
	}
	backendtest.CheckBadWrites(t, cases, func() map[string]string { return knowledgeState(t, s) })
	// The refused calls left every fixture usable: the good calls succeed.
	if _, _, err := s.Objects.TransitionObject(ctx(t), held.ID, held.ClaimToken, goodTransition()); err != nil {
		t.Errorf("TransitionObject after the refused calls: %v", err)
	}
	if err := merge(`{"m":1}`, "fr", nil); err != nil {
		t.Errorf("MergeVersions after the refused calls: %v", err)
	}
}

// testBadTextRefusedByKnowledgeReads: a knowledge read whose string
// argument Postgres could not compare is refused alike on both backends,
// with a FieldError naming it.
func testBadTextRefusedByKnowledgeReads(t *testing.T, open backendtest.Opener) {
	s, _ := backendtest.FakeStore(t, open)
	backendtest.CheckBadReads(t, []backendtest.BadInput{
		{Op: "ListObjects", Field: "kind", Call: func(v string) error {
			_, err := s.Objects.ListObjects(ctx(t), cks.ObjectFilter{Kinds: []string{v}})
			return err
		}},
		{Op: "ListObjects", Field: "status", Call: func(v string) error {
			_, err := s.Objects.ListObjects(ctx(t), cks.ObjectFilter{Statuses: []string{"ok", v}})
			return err
		}},
		{Op: "ClaimObjects", Field: "status", Call: func(v string) error { _, err := s.Objects.ClaimObjects(ctx(t), v, "w", 1); return err }},
		{Op: "ClaimObject", Field: "statuses", Call: func(v string) error {
			_, err := s.Objects.ClaimObject(ctx(t), 1, "w", []string{v})
			return err
		}},
	})
}
