package agents_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/runtime/worker"
	"github.com/cks-dev/cks/internal/service/knowledge"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// runTask enqueues a task of typ with payload, claims it and works it with
// r, as an agent would, and returns the report (the task as the outcome
// left it).
func runTask(t testing.TB, st *backend.Backend, typ string, payload any, r worker.Resolver) worker.Report {
	t.Helper()
	b, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	want := backendtest.MustEnqueue(t, st, cks.NewTask{Type: typ, Title: "knowledge task", Payload: b})
	got, err := st.Tasks.Claim(context.Background(), ledger.ClaimParams{Worker: "test-agent", Types: []string{typ}, N: 1, Lease: time.Hour})
	if err != nil || len(got) != 1 || got[0].ID != want.ID {
		t.Fatalf("claim of task %d: %v %v", want.ID, got, err)
	}
	rep, err := worker.New(st.Tasks, worker.Options{Changes: st.Changes}).Run(context.Background(), got[0], r)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// outcome decodes a completed task's result and fails unless it completed
// with the given outcome.
func outcome(t testing.TB, rep worker.Report, want string, v any) {
	t.Helper()
	if rep.Outcome != worker.Completed {
		t.Fatalf("task %d: %s (%v), want completed with outcome %s", rep.Task.ID, rep.Outcome, rep.Err, want)
	}
	var o struct {
		Outcome string `json:"outcome"`
	}
	if err := json.Unmarshal([]byte(rep.Task.Result), &o); err != nil || o.Outcome != want {
		t.Fatalf("task %d result %s: want outcome %q", rep.Task.ID, rep.Task.Result, want)
	}
	if v != nil {
		if err := json.Unmarshal([]byte(rep.Task.Result), v); err != nil {
			t.Fatal(err)
		}
	}
}

func mustWrite(t testing.TB, vs *knowledge.Service, id, base int64, content string) cks.Version {
	t.Helper()
	v, err := vs.WriteVersion(context.Background(), id, base, json.RawMessage(content), "test")
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func headIDs(t testing.TB, vs *knowledge.Service, id int64) ([]int64, []cks.Version) {
	t.Helper()
	hs, err := vs.Heads(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]int64, len(hs))
	for i, h := range hs {
		ids[i] = h.Version
	}
	return ids, hs
}

// TestForkResolver: a fork made by two writes from one base is merged
// three-way (a change on one side merges cleanly, sets add-wins, a true
// conflict by the deterministic rule) into one head whose parents are both
// former heads, with a rationale node linked by resolves; the same task
// again, and a task naming heads that are no longer the object's, are
// no-ops; a bad payload fails permanently.
func TestForkResolver(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		vs := st
		resolve := agents.ForkResolver(st.Objects, agents.ForkConfig{})
		o := backendtest.MustCreateObject(t, st.Objects, knowledge.NewObject{Kind: "note", Title: "fork me",
			Content: json.RawMessage(`{"title":"a","tags":["x"],"n":1,"keep":true}`)})
		base := o.HeadVersion
		v2 := mustWrite(t, vs.Objects, o.ID, base, `{"title":"b","tags":["x","y"],"n":1,"keep":true}`)
		v3 := mustWrite(t, vs.Objects, o.ID, base, `{"title":"c","tags":["x","z"],"n":2,"keep":true}`)
		if ids, _ := headIDs(t, vs.Objects, o.ID); !slices.Equal(ids, []int64{v2.Version, v3.Version}) {
			t.Fatalf("heads %v, want a fork of %d and %d", ids, v2.Version, v3.Version)
		}

		var merged agents.ForkMerged
		outcome(t, runTask(t, st, cks.TaskTypeResolveFork, map[string]any{"object_id": o.ID, "heads": []int64{v3.Version, v2.Version}}, resolve), "merged", &merged)
		ids, hs := headIDs(t, vs.Objects, o.ID)
		if len(ids) != 1 || ids[0] != merged.MergedVersion || !slices.Equal(hs[0].Parents, []int64{v2.Version, v3.Version}) {
			t.Fatalf("after the merge: heads %v (parents %v), result %+v; want one head with parents %d, %d", ids, hs[0].Parents, merged, v2.Version, v3.Version)
		}
		if want := `{"keep":true,"n":2,"tags":["x","y","z"],"title":"c"}`; string(hs[0].Content) != want || hs[0].Author != agents.AuthorForkResolution {
			t.Fatalf("merged content %s by %s, want %s by fork_resolution", hs[0].Content, hs[0].Author, want)
		}
		if merged.MergeBase != base || merged.Conflicts != 1 {
			t.Fatalf("result %+v: want merge base %d and 1 conflict", merged, base)
		}
		got := backendtest.MustGetObject(t, st.Objects, o.ID)
		if string(got.Content) != string(hs[0].Content) || got.Forked {
			t.Fatalf("object after the merge: content %s, forked %v", got.Content, got.Forked)
		}
		if !slices.ContainsFunc(got.Edges, func(e cks.Edge) bool {
			return e.Src == merged.RationaleID && e.Dst == o.ID && e.BaseType == "depends_on" && e.SemanticType == "resolves"
		}) {
			t.Fatalf("no rationale %d → object depends_on/resolves edge: %+v", merged.RationaleID, got.Edges)
		}
		node := backendtest.MustGetObject(t, st.Objects, merged.RationaleID)
		var r agents.MergeRationale
		if err := json.Unmarshal(node.Content, &r); err != nil || node.Kind != "rationale" {
			t.Fatalf("rationale %s %s: %v", node.Kind, node.Content, err)
		}
		if r.MergeBase != base || !slices.Equal(r.Heads, []int64{v2.Version, v3.Version}) || len(r.Conflicts) != 1 || r.Conflicts[0].Path != "title" ||
			string(r.Conflicts[0].Chosen) != `"c"` || r.Resolver != "deterministic" || !strings.Contains(r.Text, "title") {
			t.Fatalf("rationale content %s", node.Content)
		}

		// The same task again: one head, nothing to do.
		var nop struct{ Reason string }
		outcome(t, runTask(t, st, cks.TaskTypeResolveFork, map[string]any{"object_id": o.ID, "heads": []int64{v2.Version, v3.Version}}, resolve), "noop", &nop)
		if !strings.Contains(nop.Reason, "already resolved") {
			t.Fatalf("no-op reason %q", nop.Reason)
		}
		// A new fork, but the task names other heads: nothing merged.
		v5 := mustWrite(t, vs.Objects, o.ID, merged.MergedVersion, `{"title":"d"}`)
		v6 := mustWrite(t, vs.Objects, o.ID, merged.MergedVersion, `{"title":"e"}`)
		outcome(t, runTask(t, st, cks.TaskTypeResolveFork, map[string]any{"object_id": o.ID, "heads": []int64{v2.Version, v6.Version}}, resolve), "noop", &nop)
		if ids, _ := headIDs(t, vs.Objects, o.ID); !slices.Equal(ids, []int64{v5.Version, v6.Version}) || !strings.Contains(nop.Reason, "not the task's") {
			t.Fatalf("heads %v after a stale task (%q), want %d, %d untouched", ids, nop.Reason, v5.Version, v6.Version)
		}

		// Bad payloads fail permanently.
		for _, p := range []any{map[string]any{"object_id": o.ID}, map[string]any{"object": 1}, map[string]any{"object_id": 999999, "heads": []int64{1, 2}}} {
			rep := runTask(t, st, cks.TaskTypeResolveFork, p, resolve)
			if rep.Outcome != worker.Failed || !errors.Is(rep.Err, worker.ErrPermanent) || rep.Task.State != "FAILED" {
				t.Fatalf("payload %v: %s %v (state %s), want a permanent failure", p, rep.Outcome, rep.Err, rep.Task.State)
			}
		}

		// A write landing while the agent merges: the merge is refused and
		// the attempt fails retryably.
		racy := agents.ForkResolver(racingStore{Service: st.Objects, t: t}, agents.ForkConfig{})
		rep := runTask(t, st, cks.TaskTypeResolveFork, map[string]any{"object_id": o.ID, "heads": []int64{v5.Version, v6.Version}}, racy)
		if rep.Outcome != worker.Failed || errors.Is(rep.Err, worker.ErrPermanent) || !errors.Is(rep.Err, cks.ErrConflict) || rep.Task.State != "OPEN" {
			t.Fatalf("merge raced by a write: %s %v (state %s), want a retryable failure", rep.Outcome, rep.Err, rep.Task.State)
		}
		if ids, _ := headIDs(t, vs.Objects, o.ID); len(ids) != 2 || ids[0] != v6.Version {
			t.Fatalf("heads %v after the raced merge, want %d and the racer's (nothing merged)", ids, v6.Version)
		}
	})
}

// racingStore writes a version from the object's first head right after
// the resolver read the version history, as a concurrent editor would.
type racingStore struct {
	*knowledge.Service
	t testing.TB
}

func (r racingStore) ObjectVersions(ctx context.Context, id int64) ([]cks.Version, error) {
	vs, err := r.Service.ObjectVersions(ctx, id)
	if err != nil {
		return vs, err
	}
	hs, err := r.Service.Heads(ctx, id)
	if err != nil {
		return nil, err
	}
	mustWrite(r.t, r.Service, id, hs[0].Version, `{"title":"racer"}`)
	return vs, nil
}
