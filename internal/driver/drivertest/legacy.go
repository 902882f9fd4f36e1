package drivertest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// The compatibility check with the first backends (store/sqlite,
// store/postgres, deleted once the drivers replaced them): a driver's test
// recreates a database they wrote — its testdata/first_backend_schema.sql
// (their DDL, rendered once) and first_backend_rows.sql (the rows they
// wrote through the store API, with a clock at T0: processes, principals, a
// sweeper override, tasks with dependencies, evidence, a decision and an
// abort, objects with versions and an edge) — opens it with the driver, and
// checks with CheckLegacy that the driver reads what was written (and, on
// its own, that the schema equals a fresh one's and no row changed).

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

// CheckLegacy checks, through the driver's primitives, what the first
// backends wrote (testdata/first_backend_rows.sql) of the domains the
// driver serves.
func CheckLegacy(t testing.TB, d driver.Driver) {
	t.Helper()
	ctx := context.Background()
	ex := d.Executor()
	all, err := ex.LivenessList(ctx)
	must(t, "liveness", err)
	// alive_until is backfilled: the last heartbeat plus 3 intervals.
	want := []driver.LivenessRow{
		{InstanceID: "i-2", ProcessKind: "hub", Hostname: "h", PID: 11, LivenessIntervalS: 2.5,
			StartedAt: T0.Add(time.Minute), LastHeartbeatAt: T0.Add(time.Minute), AliveUntil: T0.Add(time.Minute + 7500*time.Millisecond)},
		{InstanceID: "i-1", ProcessKind: "agent", Hostname: "h", PID: 10, LivenessIntervalS: 15,
			StartedAt: T0, LastHeartbeatAt: T0.Add(time.Second), CurrentTaskID: 9, CurrentTaskType: "critique",
			DesiredState: cks.DesiredStopRequested, AliveUntil: T0.Add(46 * time.Second)},
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

// checkLegacyKnowledge checks the objects of first_backend_rows.sql: the question
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
	if q.Kind != "question" || q.Title != "why?" || q.CurrentStatus != "awaiting_research" || q.HeadVersion != 2 || q.Heads != 1 ||
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
	edges, err := ex.EdgeListOfMany(ctx, []int64{q.ID})
	must(t, "edges", err)
	if len(edges) != 1 || edges[0].Src != c.ID || edges[0].Dst != q.ID || edges[0].BaseType != "supports" ||
		edges[0].Weight == nil || *edges[0].Weight != 0.5 || edges[0].CreatedAt != T0 {
		t.Errorf("edges of the question %+v", edges)
	}
	log, err := ex.TransitionListMany(ctx, []int64{q.ID})
	must(t, "log", err)
	if len(log) != 1 || log[0].Action != "created" || log[0].Agent != "cli" || log[0].TransitionedTo != "awaiting_research" || log[0].TS != T0 {
		t.Errorf("log of the question %+v", log)
	}
}

// checkLegacyTasks checks the tasks of first_backend_rows.sql: a, claimed, run and
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
		path = append(path, e.FromState+">"+e.ToState)
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
	if err != nil || len(aborts) != 1 || aborts[0].Outcome != string(cks.AbortPending) || aborts[0].Executor != "w1" ||
		aborts[0].LeaseTokenHash == "" || !aborts[0].DeadlineAt.Equal(T0.Add(time.Minute)) {
		t.Errorf("aborts %+v, %v", aborts, err)
	}
}
