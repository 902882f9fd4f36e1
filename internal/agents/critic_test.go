package agents_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

func newClaim(t testing.TB, st *backend.Backend, status, content string) cks.Object {
	t.Helper()
	return backendtest.MustCreateObject(t, st.Objects, knowledge.NewObject{Kind: "claim", Status: status, CreatedBy: "test", Content: json.RawMessage(content)})
}

func hasEdge(o cks.Object, src, dst int64, semantic string) bool {
	return slices.ContainsFunc(o.Edges, func(e cks.Edge) bool {
		return e.Src == src && e.Dst == dst && e.BaseType == "depends_on" && e.SemanticType == semantic
	})
}

// TestCritic: of two contradicting claims the better-cited one wins; the
// loser is disputed with a log entry pointing to a critique node that
// supports the winner and refutes the loser; the same task again is a
// no-op. Ties go to the claim better supported by its cited passages, then
// to the older claim. A loser without a status is disputed through the
// winner's transition; two claims without a status, and bad payloads, fail
// permanently.
func TestCritic(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		critic := agents.Critic(st.Objects, agents.CriticConfig{})
		a := newClaim(t, st, "proposed", `{"subject":"water","predicate":"boils at","value":"90 C","citations":["p1"]}`)
		b := newClaim(t, st, "accepted", `{"subject":"water","predicate":"boils at","value":"100 C","citations":["p1","p2",{"id":"p2"}]}`)

		var done agents.CritiqueDone
		outcome(t, runTask(t, st, cks.TaskTypeCritique, map[string]any{"claims": []int64{a.ID, b.ID}}, critic), "disputed", &done)
		if done.Winner != b.ID || done.Loser != a.ID {
			t.Fatalf("result %+v: want winner %d (two sources), loser %d", done, b.ID, a.ID)
		}
		loser := backendtest.MustGetObject(t, st.Objects, a.ID)
		last := loser.Log[len(loser.Log)-1]
		if loser.Status != cks.StatusDisputed || last.Agent != "critic" || last.Action != "disputed" || last.TransitionedTo != "disputed" ||
			last.ReasoningNodeID == nil || *last.ReasoningNodeID != done.CritiqueID {
			t.Fatalf("loser: status %s, last log entry %+v; want disputed by critic pointing to critique %d", loser.Status, last, done.CritiqueID)
		}
		if w := backendtest.MustGetObject(t, st.Objects, b.ID); w.Status != "accepted" {
			t.Fatalf("winner's status %s, want it unchanged", w.Status)
		}
		crit := backendtest.MustGetObject(t, st.Objects, done.CritiqueID)
		var cc agents.CritiqueContent
		if err := json.Unmarshal(crit.Content, &cc); err != nil || crit.Kind != "critique" || cc.Winner != b.ID || cc.Loser != a.ID ||
			cc.Judge != "rule" || !strings.Contains(cc.Reason, "cites 2") || !strings.Contains(cc.Text, "disputed") {
			t.Fatalf("critique %s %s (%v)", crit.Kind, crit.Content, err)
		}
		if !hasEdge(crit, crit.ID, b.ID, "supports") || !hasEdge(crit, crit.ID, a.ID, "refutes") {
			t.Fatalf("critique edges %+v: want → %d supports and → %d refutes", crit.Edges, b.ID, a.ID)
		}
		// Again: the loser is disputed already.
		outcome(t, runTask(t, st, cks.TaskTypeCritique, map[string]any{"claims": []int64{a.ID, b.ID}}, critic), "noop", nil)
		if n := len(backendtest.MustGetObject(t, st.Objects, a.ID).Log); n != len(loser.Log) {
			t.Fatalf("a no-op critique appended to the log (%d entries, was %d)", n, len(loser.Log))
		}

		// Equal citations: the claim whose terms its passages contain wins.
		c := newClaim(t, st, "proposed", `{"subject":"sky","predicate":"colour","value":"blue","text":"the sky is blue on clear days",
			"citations":[{"id":"s1","text":"On clear days the sky looks blue because of scattering."}]}`)
		d := newClaim(t, st, "proposed", `{"subject":"sky","predicate":"colour","value":"green","text":"the sky is green",
			"citations":[{"id":"s2","text":"Grass is green."}]}`)
		outcome(t, runTask(t, st, cks.TaskTypeCritique, map[string]any{"claims": []int64{d.ID, c.ID}}, critic), "disputed", &done)
		if done.Winner != c.ID || done.Loser != d.ID {
			t.Fatalf("support tie-break: %+v, want %d to win", done, c.ID)
		}
		// All equal: the older claim stands.
		e := newClaim(t, st, "proposed", `{"subject":"pi","predicate":"is","value":"3"}`)
		f := newClaim(t, st, "proposed", `{"subject":"pi","predicate":"is","value":"4"}`)
		outcome(t, runTask(t, st, cks.TaskTypeCritique, map[string]any{"claims": []int64{f.ID, e.ID}}, critic), "disputed", &done)
		if done.Winner != e.ID || done.Loser != f.ID {
			t.Fatalf("age tie-break: %+v, want %d (older) to win", done, e.ID)
		}

		// A loser without a status: the winner's transition disputes it.
		g := newClaim(t, st, "proposed", `{"subject":"moon","predicate":"made of","value":"rock","citations":["m1"]}`)
		h := newClaim(t, st, "", `{"subject":"moon","predicate":"made of","value":"cheese"}`)
		outcome(t, runTask(t, st, cks.TaskTypeCritique, map[string]any{"claims": []int64{g.ID, h.ID}}, critic), "disputed", &done)
		hl := backendtest.MustGetObject(t, st.Objects, h.ID)
		gl := backendtest.MustGetObject(t, st.Objects, g.ID)
		if hl.Status != "disputed" || len(hl.Log) == 0 || *hl.Log[len(hl.Log)-1].ReasoningNodeID != done.CritiqueID ||
			gl.Status != "proposed" || gl.Log[len(gl.Log)-1].Action != "critiqued" {
			t.Fatalf("status-less loser: %s %+v; winner %s %+v", hl.Status, hl.Log, gl.Status, gl.Log)
		}
		crit = backendtest.MustGetObject(t, st.Objects, done.CritiqueID)
		if !hasEdge(crit, crit.ID, g.ID, "supports") || !hasEdge(crit, crit.ID, h.ID, "refutes") {
			t.Fatalf("critique edges %+v", crit.Edges)
		}

		// Permanent failures.
		i := newClaim(t, st, "", `{"subject":"x","predicate":"y","value":"1"}`)
		j := newClaim(t, st, "", `{"subject":"x","predicate":"y","value":"2"}`)
		for _, p := range []any{
			map[string]any{"claims": []int64{i.ID, j.ID}},
			map[string]any{"claims": []int64{i.ID}},
			map[string]any{"claims": []int64{i.ID, i.ID}},
			map[string]any{"claims": []int64{i.ID, 999999}},
			map[string]any{"pair": []int64{1, 2}},
		} {
			rep := runTask(t, st, cks.TaskTypeCritique, p, critic)
			if rep.Outcome != worker.Failed || !errors.Is(rep.Err, worker.ErrPermanent) {
				t.Fatalf("payload %v: %s %v, want a permanent failure", p, rep.Outcome, rep.Err)
			}
		}
	})
}
