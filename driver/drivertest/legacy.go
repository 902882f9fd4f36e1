package drivertest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks/driver"
	"github.com/cks-dev/cks/store"
)

// The compatibility check with the first backends (store/sqlite,
// store/postgres): a driver's test creates a database with one of them,
// fills it through the store API with FillLegacy, opens it with the driver,
// and checks with CheckLegacy that the driver reads what was written (and,
// on its own, that the schema equals a fresh one's and no row changed).

// WithoutPrefixes returns the lines that start with none of prefixes: the
// facts of a schema diff left when those known to differ from the first
// backends' schema are taken out.
func WithoutPrefixes(lines []string, prefixes ...string) []string {
	var out []string
	for _, l := range lines {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(l, p) }) {
			out = append(out, l)
		}
	}
	return out
}

// FillLegacy writes a little of everything through s, a store of the first
// backends opened with a clock at T0: processes, principals, a sweeper
// override, tasks with dependencies, evidence, a decision and an abort, and
// objects with versions and an edge.
func FillLegacy(t testing.TB, s store.Store) {
	t.Helper()
	ctx := testCtx(t)
	task := int64(9)
	for _, r := range []store.AgentLiveness{
		{InstanceID: "i-1", ProcessKind: "agent", Hostname: "h", PID: 10, LivenessIntervalS: 15,
			StartedAt: T0, LastHeartbeatAt: T0.Add(time.Second), CurrentTaskID: &task, CurrentTaskType: "critique"},
		{InstanceID: "i-2", ProcessKind: "hub", Hostname: "h", PID: 11, LivenessIntervalS: 2.5,
			StartedAt: T0.Add(time.Minute), LastHeartbeatAt: T0.Add(time.Minute)},
	} {
		must(t, "liveness", s.UpsertAgentLiveness(ctx, r))
	}
	must(t, "stop request", ignore(s.RequestAgentStop(ctx, "i-1")))
	must(t, "admin", s.CreatePrincipal(ctx, store.Principal{ID: "admin", Name: "admin", CreatedAt: T0}, "hash-admin",
		[]store.Grant{{Resource: "/", Permission: "admin"}}))
	must(t, "reader", s.CreatePrincipal(ctx, store.Principal{ID: "reader", Name: "ci", CreatedAt: T0.Add(time.Second)}, "hash-reader",
		[]store.Grant{{Resource: "/tasks", Permission: "read"}, {Resource: "/objects", Permission: "read"}}))
	must(t, "sweeper control", s.SetSweeperDesiredRunning(ctx, "lease_reaper", false))

	a, _, err := s.Enqueue(ctx, store.NewTask{Type: "critique", Title: "a", Payload: json.RawMessage(`{"object_id": 7}`),
		DedupeKey: "k-a", CreatedBy: "cli", Metadata: json.RawMessage(`{"owner": "x"}`)})
	must(t, "enqueue a", err)
	_, _, err = s.Enqueue(ctx, store.NewTask{Type: "critique", Title: "b", DependsOn: []int64{a.ID}})
	must(t, "enqueue b", err)
	claimed, err := s.Claim(ctx, "w1", []string{"critique"}, 1, time.Minute)
	if err != nil || len(claimed) != 1 || claimed[0].ID != a.ID {
		t.Fatalf("claim: %v, %v", claimed, err)
	}
	c := claimed[0]
	must(t, "running", ignore(s.MarkRunning(ctx, c.ID, c.LeaseToken)))
	must(t, "evidence", ignore(s.AddEvidence(ctx, c.ID, c.LeaseToken, "log", "did it")))
	must(t, "decision", ignore(s.RecordDecision(ctx, c.ID, c.LeaseToken, "approach", "this way", 1)))
	_, _, err = s.Stop(ctx, c.ID, "admin", "enough", time.Minute)
	must(t, "stop", err)

	q, err := s.CreateObject(ctx, store.NewObject{Kind: "question", Title: "why?", Content: json.RawMessage(`{"q": "why?"}`),
		Status: "awaiting_research", CreatedBy: "cli"})
	must(t, "object", err)
	r, err := s.CreateObject(ctx, store.NewObject{Kind: "claim", Content: json.RawMessage(`{}`), CreatedBy: "researcher"})
	must(t, "object", err)
	must(t, "version", ignore(s.WriteVersion(ctx, q.ID, q.HeadVersion, json.RawMessage(`{"q": "how?"}`), "editor")))
	w := 0.5
	must(t, "edge", ignore(s.AddEdges(ctx, []store.NewEdge{{Src: r.ID, Dst: q.ID, BaseType: "supports", Weight: &w}})))
}

// CheckLegacy checks, through the driver's primitives, what FillLegacy
// wrote of the domains the driver serves.
func CheckLegacy(t testing.TB, d driver.Driver) {
	t.Helper()
	ctx := context.Background()
	ex := d.Executor()
	all, err := ex.LivenessList(ctx)
	must(t, "liveness", err)
	want := []driver.LivenessRow{
		{InstanceID: "i-2", ProcessKind: "hub", Hostname: "h", PID: 11, LivenessIntervalS: 2.5,
			StartedAt: T0.Add(time.Minute), LastHeartbeatAt: T0.Add(time.Minute)},
		{InstanceID: "i-1", ProcessKind: "agent", Hostname: "h", PID: 10, LivenessIntervalS: 15,
			StartedAt: T0, LastHeartbeatAt: T0.Add(time.Second), CurrentTaskID: 9, CurrentTaskType: "critique",
			DesiredState: store.DesiredStopRequested},
	}
	if len(all) != 2 || all[0] != want[0] || all[1] != want[1] {
		t.Errorf("liveness rows %+v, want %+v", all, want)
	}
	p, err := ex.PrincipalByTokenHash(ctx, "hash-reader")
	if err != nil || p != (driver.PrincipalRow{ID: "reader", Name: "ci", TokenHash: "hash-reader", CreatedAt: T0.Add(time.Second)}) {
		t.Errorf("principal reader = %+v, %v", p, err)
	}
	grants, err := ex.GrantListAll(ctx)
	must(t, "grants", err)
	if len(grants) != 3 || grants[0] != grant("admin", "/", "admin") || grants[1] != grant("reader", "/objects", "read") {
		t.Errorf("grants %+v", grants)
	}
	if running, err := ex.SweeperControlGet(ctx, "lease_reaper"); err != nil || running {
		t.Errorf("sweeper control = %v, %v; want the stop override", running, err)
	}
	checkLegacyKnowledge(t, ex)
	checkLegacyTasks(t, ex)
}

// checkLegacyKnowledge checks the objects FillLegacy wrote: the question
// (version 1, then 2 by the editor) and the claim (version 1) with an edge
// between them, the question's creation logged, versions numbered within
// each object.
func checkLegacyKnowledge(t testing.TB, ex driver.Executor) {
	t.Helper()
	ctx := context.Background()
	objs, err := ex.ObjectGetMany(ctx, driver.ObjectGetManyParams{IDs: []int64{1, 2}})
	must(t, "objects", err)
	if len(objs) != 2 {
		t.Fatalf("objects %+v, want the question and the claim", objs)
	}
	q, c := objs[0], objs[1]
	if q.Kind != "question" || q.Title != "why?" || q.Status != "awaiting_research" || q.HeadVersion != 2 || q.Heads != 1 ||
		string(q.Content) != `{"q":"how?"}` || q.CreatedBy != "cli" || q.CreatedAt != T0 || q.ClaimedBy != "" || !q.ClaimedAt.IsZero() {
		t.Errorf("question reads %+v", q)
	}
	if c.Kind != "claim" || c.HeadVersion != 1 || c.Heads != 1 || string(c.Content) != `{}` || c.CreatedBy != "researcher" {
		t.Errorf("claim reads %+v", c)
	}
	vs, err := ex.VersionList(ctx, driver.VersionListParams{ObjectID: q.ID})
	must(t, "versions", err)
	if len(vs) != 2 || vs[0].Version != 1 || len(vs[0].Parents) != 0 || vs[0].IsHead || string(vs[0].Content) != `{"q":"why?"}` ||
		vs[1].Version != 2 || fmt.Sprint(vs[1].Parents) != "[1]" || !vs[1].IsHead || vs[1].Author != "editor" || vs[1].ContentHash != q.ContentHash {
		t.Errorf("versions of the question %+v", vs)
	}
	if vs, err := ex.VersionList(ctx, driver.VersionListParams{ObjectID: c.ID, HeadsOnly: true}); err != nil || len(vs) != 1 || vs[0].Version != 1 {
		t.Errorf("heads of the claim %+v, %v; want its version 1", vs, err)
	}
	edges, err := ex.EdgeListOf(ctx, q.ID)
	must(t, "edges", err)
	if len(edges) != 1 || edges[0].Src != c.ID || edges[0].Dst != q.ID || edges[0].BaseType != "supports" ||
		edges[0].Weight == nil || *edges[0].Weight != 0.5 || edges[0].CreatedAt != T0 {
		t.Errorf("edges of the question %+v", edges)
	}
	log, err := ex.TransitionList(ctx, q.ID)
	must(t, "log", err)
	if len(log) != 1 || log[0].Action != "created" || log[0].Agent != "cli" || log[0].TransitionedTo != "awaiting_research" || log[0].TS != T0 {
		t.Errorf("log of the question %+v", log)
	}
}

// checkLegacyTasks checks the tasks of FillLegacy: a, claimed, run and
// stopped with evidence, a decision and a pending abort; b waiting for a.
func checkLegacyTasks(t testing.TB, ex driver.Executor) {
	t.Helper()
	ctx := context.Background()
	tasks, err := ex.TaskGetMany(ctx, driver.TaskGetManyParams{IDs: []int64{1, 2}})
	must(t, "tasks", err)
	if len(tasks) != 2 {
		t.Fatalf("tasks %+v", tasks)
	}
	a, b := tasks[0], tasks[1]
	if a.Type != "critique" || a.Title != "a" || a.State != "STOPPED" || a.Attempts != 0 || a.MaxAttempts != 3 ||
		a.DedupeKey != "k-a" || a.CreatedBy != "cli" || a.LeaseTokenHash != "" || a.ClaimedBy != "" ||
		!a.CreatedAt.Equal(T0) || !a.StateChangedAt.Equal(T0) || a.Revision != 1 ||
		!jsonSame(a.Payload, []byte(`{"object_id": 7}`)) || !jsonSame(a.Metadata, []byte(`{"owner": "x"}`)) {
		t.Errorf("task a reads %+v", a)
	}
	if b.State != "WAITING" || b.Title != "b" || b.ParentID != 0 || !jsonSame(b.Payload, []byte(`{}`)) {
		t.Errorf("task b reads %+v", b)
	}
	deps, err := ex.TaskDepList(ctx, []int64{1, 2})
	if err != nil || len(deps) != 1 || deps[0] != (driver.TaskDep{TaskID: 2, DependsOn: 1}) {
		t.Errorf("dependencies %+v, %v", deps, err)
	}
	events, err := ex.TaskEventList(ctx, 1)
	must(t, "events", err)
	var path []string
	for _, e := range events {
		path = append(path, e.From+">"+e.To)
	}
	if want := []string{">OPEN", "OPEN>CLAIMED", "CLAIMED>RUNNING", "RUNNING>STOPPED"}; !slices.Equal(path, want) {
		t.Errorf("events of a: %v, want %v", path, want)
	}
	if ev, err := ex.EvidenceList(ctx, 1); err != nil || len(ev) != 1 || ev[0].Body != "did it" || ev[0].Attempt != 1 {
		t.Errorf("evidence %+v, %v", ev, err)
	}
	if ds, err := ex.DecisionList(ctx, 1); err != nil || len(ds) != 1 || ds[0].Text != "this way" || ds[0].DerivedFromRevision != 1 {
		t.Errorf("decisions %+v, %v", ds, err)
	}
	aborts, err := ex.AbortList(ctx, 1)
	if err != nil || len(aborts) != 1 || aborts[0].Outcome != string(store.AbortPending) || aborts[0].Executor != "w1" ||
		aborts[0].LeaseTokenHash == "" || !aborts[0].DeadlineAt.Equal(T0.Add(time.Minute)) {
		t.Errorf("aborts %+v, %v", aborts, err)
	}
}
