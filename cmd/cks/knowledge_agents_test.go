package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/agents"
	"github.com/cks-dev/cks/internal/backend"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/knowledge"
)

// The acceptance tests of the knowledge agents (issue 8): real `cks serve`
// hubs whose knowledge sweepers find the work (at a fast interval; the
// others off), and real `cks agent` processes that do it, on both backends.

// knowledgeHub starts `cks serve` on db with the knowledge sweeper id
// sweeping every 100 ms and the other knowledge sweepers disabled.
func knowledgeHub(t testing.TB, db testDB, id string) *hubProc {
	t.Helper()
	var env []string
	for _, s := range []string{sweeper.ForkDetectionID, sweeper.ContradictionID, sweeper.InferenceStalenessID, sweeper.GraphHealthID} {
		enabled, interval := config.SweeperEnv(s)
		if s == id {
			env = append(env, enabled+"=true", interval+"=100ms")
		} else {
			env = append(env, enabled+"=false")
		}
	}
	return startHubEnv(t, "serve", env, "--database", db.url)
}

func versionsOf(t testing.TB, st *backend.Backend) *knowledge.Service {
	t.Helper()
	return st.Objects
}

// tasksOf lists every task of typ.
func tasksOf(t testing.TB, st *backend.Backend, typ string) []cks.Task {
	t.Helper()
	var out []cks.Task
	for after := int64(0); ; {
		page, err := st.Tasks.ListTasks(context.Background(), cks.TaskFilter{Types: []string{typ}, After: after, Limit: cks.MaxListLimit})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page.Tasks...)
		if page.Next == 0 {
			return out
		}
		after = page.Next
	}
}

// waitTask waits until the task of typ has completed with outcome want and
// returns it. There must be exactly one task of typ: the sweepers' dedupe
// keys are once-ever (NewTask.DedupeOnce), so a sweep that raced the
// agent's work (even on another hub) enqueues nothing. No task may fail.
func waitTask(t testing.TB, st *backend.Backend, typ, want string, a *agentProc) cks.Task {
	t.Helper()
	var done cks.Task
	waitFor(t, fmt.Sprintf("a %s task completed with outcome %s", typ, want), func() bool {
		if a.exited() {
			t.Fatalf("agent exited (status %d)\n%s", a.code, a.stderr.String())
		}
		var found []cks.Task
		ended := true
		for _, task := range tasksOf(t, st, typ) {
			if task.State == "FAILED" || task.LastError != "" {
				t.Fatalf("%s task %d: %s, %s\n%s", typ, task.ID, task.State, task.LastError, a.stderr.String())
			}
			if task.State != "COMPLETED" {
				ended = false
				continue
			}
			var r struct{ Outcome string }
			if err := json.Unmarshal([]byte(task.Result), &r); err != nil {
				t.Fatalf("%s task %d result %q: %v", typ, task.ID, task.Result, err)
			}
			switch r.Outcome {
			case want:
				found = append(found, task)
			default:
				t.Fatalf("%s task %d: outcome %q, want %q", typ, task.ID, r.Outcome, want)
			}
		}
		if n := len(tasksOf(t, st, typ)); n > 1 {
			t.Fatalf("%d %s tasks, want exactly one", n, typ)
		}
		if len(found) == 1 && ended {
			done = found[0]
			return true
		}
		return false
	})
	return done
}

// TestForkResolutionAgent: two concurrent edits from one base fork an
// object; the fork_detection sweepers of two hubs enqueue exactly one
// resolve_fork task; a `cks agent fork_resolution` process merges it, and
// the object has one head whose parents are both former heads, with a
// rationale linked by resolves, shown by `cks object show`.
func TestForkResolutionAgent(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		h := knowledgeHub(t, db, sweeper.ForkDetectionID)
		knowledgeHub(t, db, sweeper.ForkDetectionID) // a second hub sweeping the same store
		st := db.open(t)
		vs := versionsOf(t, st)
		ctx := context.Background()
		o, err := st.Objects.CreateObject(ctx, knowledge.NewObject{Kind: "note", Title: "a shared note",
			Content: json.RawMessage(`{"text":"draft","tags":["a"],"owner":"ann"}`)})
		if err != nil {
			t.Fatal(err)
		}
		a := startAgent(t, nil, append([]string{"fork_resolution", "--database", db.url}, fastAgent...)...)
		a.waitLog(t, "agent started")

		// Two editors write from the same base at once.
		edits := []string{`{"text":"final text","tags":["a","b"],"owner":"ann"}`, `{"text":"draft","tags":["a","c"],"owner":"bob"}`}
		var wg sync.WaitGroup
		errs := make([]error, len(edits))
		written := make([]cks.Version, len(edits))
		for i, c := range edits {
			wg.Go(func() {
				written[i], errs[i] = vs.WriteVersion(ctx, o.ID, o.HeadVersion, json.RawMessage(c), fmt.Sprintf("editor-%d", i))
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		// Both are heads until the agent merges them (it may already have).
		former := []int64{written[0].Version, written[1].Version}
		slices.Sort(former)

		task := waitTask(t, st, cks.TaskTypeResolveFork, "merged", a)
		var res agents.ForkMerged
		if err := json.Unmarshal([]byte(task.Result), &res); err != nil || res.Outcome != "merged" {
			t.Fatalf("resolve_fork result %q: %v", task.Result, err)
		}
		heads, err := vs.Heads(ctx, o.ID)
		if err != nil || len(heads) != 1 || !slices.Equal(heads[0].Parents, former) || heads[0].Author != agents.AuthorForkResolution {
			t.Fatalf("heads after the merge: %+v %v; want one by fork_resolution with parents %v", heads, err, former)
		}
		if want := `{"owner":"bob","tags":["a","b","c"],"text":"final text"}`; string(heads[0].Content) != want {
			t.Fatalf("merged content %s, want %s", heads[0].Content, want)
		}
		if got, err := st.Objects.GetObject(ctx, o.ID); err != nil || got.Forked || got.HeadVersion != heads[0].Version {
			t.Fatalf("object after the merge: forked %v, head %d (%v)", got.Forked, got.HeadVersion, err)
		}
		r := runCKS(t, nil, "object", "show", fmt.Sprint(o.ID), "--data-dir", string(h.dir))
		if r.code != 0 {
			t.Fatalf("object show: exit %d\n%s", r.code, r.stderr)
		}
		wantAll(t, "object show of the merged object", r.stdout, fmt.Sprintf("#%d rationale", res.RationaleID), "resolves")
	})
}

// TestCriticAgent: a planted contradiction is found by the contradiction
// sweeper and critiqued by a `cks agent critic` process: the less-cited
// claim is disputed, and `cks object show` of it shows the chain — the
// critic's log entry with the critique's text under it.
func TestCriticAgent(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		h := knowledgeHub(t, db, sweeper.ContradictionID)
		st := db.open(t)
		ctx := context.Background()
		mk := func(content string) cks.Object {
			o, err := st.Objects.CreateObject(ctx, knowledge.NewObject{Kind: "claim", Status: "proposed", CreatedBy: "researcher", Content: json.RawMessage(content)})
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		loser := mk(`{"subject":"Mount Everest","predicate":"height","value":"8,000 m","citations":["atlas.md#1"]}`)
		winner := mk(`{"subject":"mount everest","predicate":"Height","value":"8,849 m","citations":["atlas.md#1","survey.md#3"]}`)
		mk(`{"subject":"K2","predicate":"height","value":"8,611 m","citations":[]}`) // no contradiction

		a := startAgent(t, nil, append([]string{"critic", "--database", db.url}, fastAgent...)...)
		task := waitTask(t, st, cks.TaskTypeCritique, cks.StatusDisputed, a)
		var res agents.CritiqueDone
		if err := json.Unmarshal([]byte(task.Result), &res); err != nil || res.Winner != winner.ID || res.Loser != loser.ID {
			t.Fatalf("critique result %q (%v): want winner %d, loser %d", task.Result, err, winner.ID, loser.ID)
		}
		got, err := st.Objects.GetObject(ctx, loser.ID)
		if err != nil || got.Status != cks.StatusDisputed {
			t.Fatalf("loser: %s %v, want disputed", got.Status, err)
		}
		r := runCKS(t, nil, "object", "show", fmt.Sprint(loser.ID), "--data-dir", string(h.dir))
		if r.code != 0 {
			t.Fatalf("object show: exit %d\n%s", r.code, r.stderr)
		}
		wantAll(t, "object show of the disputed claim", r.stdout,
			fmt.Sprintf("claim %d · disputed", loser.ID), "Transition log:", "researcher: created → proposed",
			"critic: disputed → disputed",
			fmt.Sprintf("critique #%d: claims #%d and #%d contradict each other; the evidence supports #%d", res.CritiqueID, loser.ID, winner.ID, winner.ID))
		// The critique's text sits under the critic's log entry.
		if i, j := strings.Index(r.stdout, "critic: disputed → disputed"), strings.Index(r.stdout, fmt.Sprintf("critique #%d:", res.CritiqueID)); i < 0 || j < i {
			t.Fatalf("the critique is not under the log entry:\n%s", r.stdout)
		}
		r = runCKS(t, nil, "object", "show", fmt.Sprint(winner.ID), "--data-dir", string(h.dir))
		wantAll(t, "object show of the winning claim", r.stdout, fmt.Sprintf("claim %d · proposed", winner.ID), fmt.Sprintf("#%d critique", res.CritiqueID), "supports")
	})
}

// TestEnrichmentAgent: changing a premise makes an inference stale; the
// inference_staleness sweeper enqueues a rederive task and a `cks agent
// enrichment` process re-derives it: a new version recording the
// premise's new hash.
func TestEnrichmentAgent(t *testing.T) {
	forBackends(t, func(t *testing.T, db testDB) {
		knowledgeHub(t, db, sweeper.InferenceStalenessID)
		st := db.open(t)
		vs := versionsOf(t, st)
		ctx := context.Background()
		mk := func(kind, content string) cks.Object {
			o, err := st.Objects.CreateObject(ctx, knowledge.NewObject{Kind: kind, Content: json.RawMessage(content)})
			if err != nil {
				t.Fatal(err)
			}
			return o
		}
		p1 := mk("claim", `{"text":"every heartbeat renews the lease"}`)
		p2 := mk("claim", `{"text":"a lease lasts five minutes"}`)
		inf := mk("inference", fmt.Sprintf(`{"statement":"a task heartbeating every minute keeps its lease","premises":{"%d":%q,"%d":%q}}`,
			p1.ID, p1.ContentHash, p2.ID, p2.ContentHash))
		a := startAgent(t, nil, append([]string{"enrichment", "--database", db.url}, fastAgent...)...)
		a.waitLog(t, "agent started")

		changed, err := vs.WriteVersion(ctx, p2.ID, p2.HeadVersion, json.RawMessage(`{"text":"a lease lasts ten minutes"}`), "editor")
		if err != nil {
			t.Fatal(err)
		}
		task := waitTask(t, st, cks.TaskTypeRederive, "rederived", a)
		var res agents.Rederived
		if err := json.Unmarshal([]byte(task.Result), &res); err != nil || res.Outcome != "rederived" || !slices.Equal(res.Premises, []int64{p2.ID}) {
			t.Fatalf("rederive result %q (%v)", task.Result, err)
		}
		heads, err := vs.Heads(ctx, inf.ID)
		if err != nil || len(heads) != 1 || heads[0].Version != res.Version || !slices.Equal(heads[0].Parents, []int64{inf.HeadVersion}) || heads[0].Author != "enrichment" {
			t.Fatalf("inference heads %+v (%v): want the re-derived version %d based on %d", heads, err, res.Version, inf.HeadVersion)
		}
		var c struct {
			Statement  string            `json:"statement"`
			Premises   map[string]string `json:"premises"`
			Derivation agents.Derivation `json:"derivation"`
		}
		if err := json.Unmarshal(heads[0].Content, &c); err != nil {
			t.Fatal(err)
		}
		k1, k2 := fmt.Sprint(p1.ID), fmt.Sprint(p2.ID)
		if c.Statement != "a task heartbeating every minute keeps its lease" || c.Premises[k2] != changed.ContentHash || c.Premises[k1] != p1.ContentHash ||
			c.Derivation.PremiseVersions[k2] != changed.Version {
			t.Fatalf("re-derived content %s: want premise %d at hash %s (version %d)", heads[0].Content, p2.ID, changed.ContentHash, changed.Version)
		}
		if got, err := st.Objects.GetObject(ctx, inf.ID); err != nil || got.ContentHash != heads[0].ContentHash {
			t.Fatalf("inference object: %s %v, want the new version's hash", got.ContentHash, err)
		}
	})
}
