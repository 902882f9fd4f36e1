package agents_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/llm"
)

// judgingModel is a model with the optional methods of the knowledge
// agents: it always picks the first claim and keeps "model" in conflicts.
type judgingModel struct{ llm.Model }

func (judgingModel) Name() string { return "fake:judge" }

func (judgingModel) JudgeContradiction(ctx context.Context, claims [2]llm.Claim, passages []llm.Passage) (int, string, error) {
	return 0, "the model prefers " + claims[0].Text, nil
}

func (judgingModel) ResolveConflict(ctx context.Context, path string, base, ours, theirs json.RawMessage) (json.RawMessage, error) {
	return json.RawMessage(`"model"`), nil
}

var (
	_ agents.ContradictionJudge = judgingModel{}
	_ agents.ConflictModel      = judgingModel{}
)

// TestModelDecides: a model implementing the optional methods decides
// instead of the offline rules, and is named in what is written.
func TestModelDecides(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		m := judgingModel{}
		a := newClaim(t, st, "proposed", `{"text":"less cited","citations":[]}`)
		b := newClaim(t, st, "proposed", `{"text":"more cited","citations":["x","y"]}`)
		var done agents.CritiqueDone
		outcome(t, runTask(t, st, cks.TaskTypeCritique, map[string]any{"claims": []int64{a.ID, b.ID}}, agents.Critic(st.Objects, agents.CriticConfig{Model: m})), "disputed", &done)
		var cc agents.CritiqueContent
		json.Unmarshal(backendtest.MustGetObject(t, st.Objects, done.CritiqueID).Content, &cc)
		if done.Winner != a.ID || cc.Judge != "fake:judge" || cc.Reason != "the model prefers less cited" {
			t.Fatalf("model verdict: %+v, critique %+v", done, cc)
		}

		vs := st
		o := backendtest.MustCreateObject(t, st.Objects, knowledge.NewObject{Kind: "note", Content: json.RawMessage(`{"v":"a"}`)})
		v2 := mustWrite(t, vs.Objects, o.ID, o.HeadVersion, `{"v":"b"}`)
		v3 := mustWrite(t, vs.Objects, o.ID, o.HeadVersion, `{"v":"c"}`)
		var merged agents.ForkMerged
		outcome(t, runTask(t, st, cks.TaskTypeResolveFork, map[string]any{"object_id": o.ID, "heads": []int64{v2.Version, v3.Version}},
			agents.ForkResolver(st.Objects, agents.ForkConfig{Model: m})), "merged", &merged)
		if _, hs := headIDs(t, vs.Objects, o.ID); string(hs[0].Content) != `{"v":"model"}` {
			t.Fatalf("merged by the model: %s", hs[0].Content)
		}
		var r agents.MergeRationale
		json.Unmarshal(backendtest.MustGetObject(t, st.Objects, merged.RationaleID).Content, &r)
		if r.Resolver != "fake:judge" {
			t.Fatalf("rationale resolver %q", r.Resolver)
		}
	})
}
