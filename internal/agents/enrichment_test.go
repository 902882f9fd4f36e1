package agents_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// TestRederive: an inference whose premise changed gets a new version,
// based on its head, with the premise's new hash and a derivation naming
// the premise versions; its statement is kept. A current inference is a
// no-op; a missing premise is recorded as "missing"; bad input fails
// permanently.
func TestRederive(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		vs := st
		enrich := agents.Enrichment(st.Objects)
		p1 := backendtest.MustCreateObject(t, st.Objects, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"text":"all men are mortal"}`)})
		p2 := backendtest.MustCreateObject(t, st.Objects, knowledge.NewObject{Kind: "claim", Content: json.RawMessage(`{"text":"Socrates is a man"}`)})
		inf := backendtest.MustCreateObject(t, st.Objects, knowledge.NewObject{Kind: "inference", Content: json.RawMessage(fmt.Sprintf(
			`{"statement":"Socrates is mortal","premises":{"%d":%q,"%d":%q},"note":"kept"}`, p1.ID, p1.ContentHash, p2.ID, p2.ContentHash))})

		outcome(t, runTask(t, st, cks.TaskTypeRederive, map[string]any{"object_id": inf.ID}, enrich), "noop", nil)

		p1v := mustWrite(t, vs.Objects, p1.ID, p1.HeadVersion, `{"text":"all humans are mortal"}`)
		var done agents.Rederived
		outcome(t, runTask(t, st, cks.TaskTypeRederive, map[string]any{"object_id": inf.ID}, enrich), "rederived", &done)
		if !slices.Equal(done.Premises, []int64{p1.ID}) {
			t.Fatalf("result %+v: want premise %d changed", done, p1.ID)
		}
		ids, hs := headIDs(t, vs.Objects, inf.ID)
		if len(ids) != 1 || ids[0] != done.Version || !slices.Equal(hs[0].Parents, []int64{inf.HeadVersion}) || hs[0].Author != "enrichment" {
			t.Fatalf("inference heads %v (%+v), want one new version %d based on %d", ids, hs, done.Version, inf.HeadVersion)
		}
		var c struct {
			Statement  string            `json:"statement"`
			Note       string            `json:"note"`
			Premises   map[string]string `json:"premises"`
			Derivation agents.Derivation `json:"derivation"`
		}
		if err := json.Unmarshal(hs[0].Content, &c); err != nil {
			t.Fatal(err)
		}
		k1, k2 := fmt.Sprint(p1.ID), fmt.Sprint(p2.ID)
		if c.Statement != "Socrates is mortal" || c.Note != "kept" || c.Premises[k1] != p1v.ContentHash || c.Premises[k2] != p2.ContentHash ||
			c.Derivation.PremiseVersions[k1] != p1v.Version || c.Derivation.PremiseVersions[k2] != p2.HeadVersion ||
			c.Derivation.Replaced[k1] != p1.ContentHash || c.Derivation.BasedOn != inf.HeadVersion || c.Derivation.Rule != agents.RederiveRule {
			t.Fatalf("re-derived content %s", hs[0].Content)
		}
		outcome(t, runTask(t, st, cks.TaskTypeRederive, map[string]any{"object_id": inf.ID}, enrich), "noop", nil)

		// A premise that does not exist is recorded as missing.
		gone := backendtest.MustCreateObject(t, st.Objects, knowledge.NewObject{Kind: "inference", Content: json.RawMessage(
			`{"statement":"s","premises":{"999999":"abc"}}`)})
		outcome(t, runTask(t, st, cks.TaskTypeRederive, map[string]any{"object_id": gone.ID}, enrich), "rederived", nil)
		if got := backendtest.MustGetObject(t, st.Objects, gone.ID); !json.Valid(got.Content) || !strings.Contains(string(got.Content), `"999999":"missing"`) {
			t.Fatalf("missing premise: content %s", got.Content)
		}
		outcome(t, runTask(t, st, cks.TaskTypeRederive, map[string]any{"object_id": gone.ID}, enrich), "noop", nil)

		bad := backendtest.MustCreateObject(t, st.Objects, knowledge.NewObject{Kind: "inference", Content: json.RawMessage(`{"statement":"s","premises":["1"]}`)})
		for _, p := range []any{map[string]any{"object_id": bad.ID}, map[string]any{"object_id": 999999}, map[string]any{"id": 1}} {
			rep := runTask(t, st, cks.TaskTypeRederive, p, enrich)
			if rep.Outcome != worker.Failed || !errors.Is(rep.Err, worker.ErrPermanent) {
				t.Fatalf("payload %v: %s %v, want a permanent failure", p, rep.Outcome, rep.Err)
			}
		}
		if rep := runTask(t, st, "frobnicate", map[string]any{"object_id": inf.ID}, enrich); rep.Outcome != worker.Failed || !errors.Is(rep.Err, worker.ErrPermanent) {
			t.Fatalf("unknown task type: %s %v", rep.Outcome, rep.Err)
		}
	})
}

// TestEnrich: an orphan is linked related_to/related_to to the objects
// sharing enough terms with it — not to unrelated ones, ones already
// linked, or reasoning nodes — at most five, best first; run again, it is a
// no-op.
func TestEnrich(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		enrich := agents.Enrichment(st.Objects)
		mk := func(kind, title, text string) cks.Object {
			b, _ := json.Marshal(map[string]string{"text": text})
			return backendtest.MustCreateObject(t, st.Objects, knowledge.NewObject{Kind: kind, Title: title, Content: b})
		}
		orphan := mk("claim", "", "A heartbeat renews the lease of a running task")
		related := mk("note", "Leases", "The worker heartbeat renews the task lease every minute")
		mk("claim", "", "Each running task holds a lease; a lost lease aborts the task at once")
		unrelated := mk("claim", "", "Honey bees dance to tell foragers where flowers are")
		linked := mk("claim", "", "A heartbeat renews the lease of a running task, really")
		reasoning := mk("critique", "", "A heartbeat renews the lease of a running task")
		if _, err := st.Objects.AddEdges(t.Context(), []knowledge.NewEdge{{Src: linked.ID, Dst: orphan.ID, BaseType: "depends_on", SemanticType: "cites"}}); err != nil {
			t.Fatal(err)
		}
		many := make([]cks.Object, 6)
		for i := range many {
			many[i] = mk("claim", "", fmt.Sprintf("heartbeat renews lease of running task number %d", i))
		}

		var done agents.Enriched
		outcome(t, runTask(t, st, cks.TaskTypeEnrich, map[string]any{"object_id": orphan.ID}, enrich), "enriched", &done)
		var got []int64
		for _, r := range done.Related {
			got = append(got, r.ObjectID)
		}
		if len(got) != agents.EnrichMaxLinks {
			t.Fatalf("linked %v, want %d objects", got, agents.EnrichMaxLinks)
		}
		for _, not := range []int64{unrelated.ID, linked.ID, reasoning.ID, orphan.ID} {
			if slices.Contains(got, not) {
				t.Fatalf("linked %v includes %d", got, not)
			}
		}
		for i := 1; i < len(done.Related); i++ {
			if done.Related[i].Score > done.Related[i-1].Score {
				t.Fatalf("related not best first: %+v", done.Related)
			}
		}
		o := backendtest.MustGetObject(t, st.Objects, orphan.ID)
		for _, id := range got {
			if !slices.ContainsFunc(o.Edges, func(e cks.Edge) bool {
				return e.Src == orphan.ID && e.Dst == id && e.BaseType == agents.BaseRelatedTo && e.SemanticType == agents.SemRelatedTo && e.Weight != nil && *e.Weight > 0
			}) {
				t.Fatalf("no related_to edge %d → %d: %+v", orphan.ID, id, o.Edges)
			}
		}

		// Few enough candidates: all the related ones, none else; then a no-op.
		lone := mk("claim", "", "Workers renew a task lease with a heartbeat")
		outcome(t, runTask(t, st, cks.TaskTypeEnrich, map[string]any{"object_id": related.ID}, enrich), "enriched", &done)
		ids := []int64{}
		for _, r := range done.Related {
			ids = append(ids, r.ObjectID)
		}
		if !slices.Contains(ids, lone.ID) || slices.Contains(ids, unrelated.ID) {
			t.Fatalf("related of %d: %v", related.ID, ids)
		}
		bees := mk("note", "Bees", "Honey bees dance")
		outcome(t, runTask(t, st, cks.TaskTypeEnrich, map[string]any{"object_id": bees.ID}, enrich), "enriched", &done)
		if len(done.Related) != 1 || done.Related[0].ObjectID != unrelated.ID {
			t.Fatalf("bees related to %+v, want only %d", done.Related, unrelated.ID)
		}
		// Missing metadata filled: the content got its keywords, as a new version.
		if got := backendtest.MustGetObject(t, st.Objects, bees.ID); !strings.Contains(string(got.Content), `"keywords":["bee","dance","honey"]`) ||
			got.HeadVersion != done.Version || done.Version == 0 {
			t.Fatalf("bees after enrich: %s (head %d), result %+v", got.Content, got.HeadVersion, done)
		}
		outcome(t, runTask(t, st, cks.TaskTypeEnrich, map[string]any{"object_id": bees.ID}, enrich), "noop", nil)
		empty := backendtest.MustCreateObject(t, st.Objects, knowledge.NewObject{Kind: "note", Content: []byte(`{"keywords":[]}`)})
		outcome(t, runTask(t, st, cks.TaskTypeEnrich, map[string]any{"object_id": empty.ID}, enrich), "noop", nil)
		if rep := runTask(t, st, cks.TaskTypeEnrich, map[string]any{"object_id": 999999}, enrich); !errors.Is(rep.Err, worker.ErrPermanent) {
			t.Fatalf("unknown object: %s %v", rep.Outcome, rep.Err)
		}
	})
}
