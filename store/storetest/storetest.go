// Package storetest is the conformance suite every store backend must pass. Each
// backend's tests call Run once with a constructor for a fresh, empty store, so
// a behaviour is specified once and checked on SQLite and Postgres alike.
package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/backend"
	"github.com/cks-dev/cks/driver"
)

// NewStore returns a fresh, empty store for one test and arranges its cleanup.
type NewStore func(t testing.TB) *backend.Backend

// Opener opens a new, independent handle (with its own connections) on one
// database, closed when t ends. Several handles on one database behave like
// several processes sharing it.
type Opener func(t testing.TB, opts ...driver.Option) *backend.Backend

// NewDB creates a fresh, empty database for one test, arranges for it to be
// removed when t ends, and returns an Opener for it.
type NewDB func(t testing.TB) Opener

// Option adjusts Run.
type Option func(*config)

type config struct {
	skip map[string]bool
}

// Skip leaves out the tests named: for a backend on its way out that does
// not have a behaviour the suite asks for since (each use says which and
// why), never for one that is meant to stay.
func Skip(names ...string) Option {
	return func(c *config) {
		for _, n := range names {
			c.skip[n] = true
		}
	}
}

func apply(opts []Option) config {
	c := config{skip: map[string]bool{}}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// RunKnowledge runs the knowledge and version tests alone (knowledge.Service
// and knowledge.Service, their refusals of bad text, and the TopicObjects
// notifications through WatchChanges), under the names Run gives them: for a knowledge store
// built without the rest of a store. The other methods of the stores newDB
// opens are not called.
func RunKnowledge(t *testing.T, newDB NewDB, opts ...Option) {
	t.Helper()
	c := apply(opts)
	runDB(t, newDB, c, slices.Concat(knowledgeTests(), versionTests(), badTextKnowledgeTests()))
}

// RunTasks runs the task ledger's part of the suite (tasks, leases, sweeps,
// sweeper control, operator control, the ledger's bad-text cases): for an
// implementation of ledger.Service and ledger.Service tested before the
// rest of backend.Backend is built on the same schema.
func RunTasks(t *testing.T, newDB NewDB, opts ...Option) {
	t.Helper()
	c := apply(opts)
	runDB(t, newDB, c, slices.Concat(taskTests(), batchingTests(), leaseTests(), sweepTaskTests(), controlTests(), taskControlTests(), badTextTests()))
}

func runDB(t *testing.T, newDB NewDB, c config, tests []taskTest) {
	t.Helper()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if c.skip[tc.name] {
				t.Skip("skipped for this backend (storetest.Skip)")
			}
			t.Parallel()
			tc.fn(t, newDB(t))
		})
	}
}

// Run runs the whole conformance suite against the backend newDB creates:
// RunRest, RunTasks and RunKnowledge.
func Run(t *testing.T, newDB NewDB, opts ...Option) {
	t.Helper()
	RunRest(t, newDB, opts...)
	c := apply(opts)
	runDB(t, newDB, c, slices.Concat(taskTests(), batchingTests(), leaseTests(), sweepTaskTests(), controlTests(), taskControlTests(), knowledgeTests(), versionTests(), badTextTests(), badTextKnowledgeTests()))
}

// RunRest runs the part of the suite that is neither RunTasks' nor
// RunKnowledge's: liveness and principals. A store whose task ledger and
// knowledge store are checked by their own packages' runs of RunTasks and
// RunKnowledge (against the same store) runs this for the rest, instead of
// running the ledger's and the knowledge store's tests a second time.
func RunRest(t *testing.T, newDB NewDB, opts ...Option) {
	t.Helper()
	c := apply(opts)
	newStore := func(t testing.TB) *backend.Backend { return newDB(t)(t) }
	tests := []struct {
		name string
		fn   func(t *testing.T, s *backend.Backend)
	}{
		{"LivenessRoundTrip", testLivenessRoundTrip},
		{"LivenessUpsertKeepsStartedAt", testLivenessUpsertKeepsStartedAt},
		{"LivenessListOrder", testLivenessListOrder},
		{"LivenessNotFound", testLivenessNotFound},
		{"LivenessLatestByKind", testLivenessLatestByKind},
		{"LivenessRejectsBadInput", testLivenessRejectsBadInput},
		{"LivenessTimePrecision", testLivenessTimePrecision},
		{"LivenessConcurrentUpserts", testLivenessConcurrentUpserts},
		{"Principals", testPrincipals},
	}
	tests = append(tests, principalTests()...)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if c.skip[tc.name] {
				t.Skip("skipped for this backend (storetest.Skip)")
			}
			t.Parallel()
			tc.fn(t, newStore(t))
		})
	}
}

// T0 is the base time of the suite's records.
var T0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// Liveness returns a valid liveness row for tests, started at T0 plus offset.
func Liveness(id, kind string, offset time.Duration) cks.AgentLiveness {
	return cks.AgentLiveness{
		InstanceID:        id,
		ProcessKind:       kind,
		Hostname:          "host-a",
		PID:               4242,
		LivenessIntervalS: 30,
		StartedAt:         T0.Add(offset),
		LastHeartbeatAt:   T0.Add(offset),
	}
}

func ctx(t testing.TB) context.Context {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// MustUpsert upserts r or fails the test.
func MustUpsert(t testing.TB, s *backend.Backend, r cks.AgentLiveness) {
	t.Helper()
	if err := s.Liveness.UpsertAgentLiveness(ctx(t), r); err != nil {
		t.Fatalf("UpsertAgentLiveness(%s): %v", r.InstanceID, err)
	}
}

// EqualLiveness fails the test when got and want differ in any field.
func EqualLiveness(t testing.TB, got, want cks.AgentLiveness) {
	t.Helper()
	if d := diffLiveness(got, want); d != "" {
		t.Fatalf("liveness %s differs: %s\n got: %+v\nwant: %+v", want.InstanceID, d, got, want)
	}
}

func diffLiveness(got, want cks.AgentLiveness) string {
	switch {
	case got.InstanceID != want.InstanceID:
		return "instance_id"
	case got.ProcessKind != want.ProcessKind:
		return "process_kind"
	case got.Hostname != want.Hostname:
		return "hostname"
	case got.PID != want.PID:
		return "pid"
	case got.LivenessIntervalS != want.LivenessIntervalS:
		return "liveness_interval_s"
	case !got.StartedAt.Equal(want.StartedAt) || got.StartedAt.Location() != time.UTC:
		return fmt.Sprintf("started_at %v vs %v", got.StartedAt, want.StartedAt)
	case !got.LastHeartbeatAt.Equal(want.LastHeartbeatAt) || got.LastHeartbeatAt.Location() != time.UTC:
		return fmt.Sprintf("last_heartbeat_at %v vs %v", got.LastHeartbeatAt, want.LastHeartbeatAt)
	case (got.CurrentTaskID == nil) != (want.CurrentTaskID == nil):
		return "current_task_id nil-ness"
	case got.CurrentTaskID != nil && *got.CurrentTaskID != *want.CurrentTaskID:
		return "current_task_id"
	case got.CurrentTaskType != want.CurrentTaskType:
		return "current_task_type"
	case got.DesiredState != want.DesiredState:
		return "desired_state"
	}
	return ""
}

func testLivenessRoundTrip(t *testing.T, s *backend.Backend) {
	idle := Liveness("i-idle", "critic", 0)
	busy := Liveness("i-busy", "pipeline", time.Second)
	task := int64(77)
	busy.CurrentTaskID, busy.CurrentTaskType = &task, "research"
	busy.LivenessIntervalS = 2.5
	MustUpsert(t, s, idle)
	MustUpsert(t, s, busy)
	for _, want := range []cks.AgentLiveness{idle, busy} {
		got, err := s.Liveness.GetAgentLiveness(ctx(t), want.InstanceID)
		if err != nil {
			t.Fatalf("GetAgentLiveness(%s): %v", want.InstanceID, err)
		}
		EqualLiveness(t, got, want)
	}
}

func testLivenessUpsertKeepsStartedAt(t *testing.T, s *backend.Backend) {
	r := Liveness("i-1", "critic", 0)
	task := int64(5)
	r.CurrentTaskID, r.CurrentTaskType = &task, "critique"
	MustUpsert(t, s, r)

	next := r
	next.StartedAt = T0.Add(time.Hour) // must be ignored: started_at is set once
	next.LastHeartbeatAt = T0.Add(30 * time.Second)
	next.CurrentTaskID, next.CurrentTaskType = nil, ""
	next.PID = 4343
	MustUpsert(t, s, next)

	got, err := s.Liveness.GetAgentLiveness(ctx(t), "i-1")
	if err != nil {
		t.Fatal(err)
	}
	want := next
	want.StartedAt = r.StartedAt
	EqualLiveness(t, got, want)
	all, err := s.Liveness.ListAgentLiveness(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("upsert of one instance left %d rows, want 1", len(all))
	}
}

func testLivenessListOrder(t *testing.T, s *backend.Backend) {
	got, err := s.Liveness.ListAgentLiveness(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("fresh store lists %d rows", len(got))
	}
	MustUpsert(t, s, Liveness("old", "critic", 0))
	MustUpsert(t, s, Liveness("new", "critic", 2*time.Minute))
	MustUpsert(t, s, Liveness("mid", "enrichment", time.Minute))
	got, err = s.Liveness.ListAgentLiveness(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, r := range got {
		ids = append(ids, r.InstanceID)
	}
	if fmt.Sprint(ids) != "[new mid old]" {
		t.Fatalf("list order = %v, want newest-started first [new mid old]", ids)
	}
}

func testLivenessNotFound(t *testing.T, s *backend.Backend) {
	_, err := s.Liveness.GetAgentLiveness(ctx(t), "nope")
	if !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("GetAgentLiveness(missing) = %v, want ErrNotFound", err)
	}
	_, err = s.Liveness.LatestAgentLiveness(ctx(t), "critic")
	if !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("LatestAgentLiveness(no rows) = %v, want ErrNotFound", err)
	}
}

func testLivenessLatestByKind(t *testing.T, s *backend.Backend) {
	MustUpsert(t, s, Liveness("c-old", "critic", 0))
	MustUpsert(t, s, Liveness("c-new", "critic", time.Hour))
	// An older instance that heartbeats later is still not the newest-started.
	late := Liveness("c-old", "critic", 0)
	late.LastHeartbeatAt = T0.Add(2 * time.Hour)
	MustUpsert(t, s, late)
	MustUpsert(t, s, Liveness("p-1", "pipeline", 3*time.Hour))

	got, err := s.Liveness.LatestAgentLiveness(ctx(t), "critic")
	if err != nil {
		t.Fatal(err)
	}
	if got.InstanceID != "c-new" {
		t.Fatalf("latest critic = %s, want c-new (newest started_at)", got.InstanceID)
	}
}

func testLivenessRejectsBadInput(t *testing.T, s *backend.Backend) {
	good := Liveness("i-1", "critic", 0)
	cases := []struct {
		field string
		edit  func(*cks.AgentLiveness)
	}{
		{"instance_id", func(r *cks.AgentLiveness) { r.InstanceID = "" }},
		{"process_kind", func(r *cks.AgentLiveness) { r.ProcessKind = "" }},
		{"hostname", func(r *cks.AgentLiveness) { r.Hostname = "" }},
		{"pid", func(r *cks.AgentLiveness) { r.PID = 0 }},
		{"liveness_interval_s", func(r *cks.AgentLiveness) { r.LivenessIntervalS = -1 }},
		{"started_at", func(r *cks.AgentLiveness) { r.StartedAt = time.Time{} }},
		{"last_heartbeat_at", func(r *cks.AgentLiveness) { r.LastHeartbeatAt = time.Time{} }},
		// Task ids start at 1; a current task of 0 would read back as idle.
		{"current_task_id", func(r *cks.AgentLiveness) { zero := int64(0); r.CurrentTaskID = &zero }},
		{"current_task_id", func(r *cks.AgentLiveness) { neg := int64(-3); r.CurrentTaskID = &neg }},
	}
	for _, c := range cases {
		r := good
		c.edit(&r)
		err := s.Liveness.UpsertAgentLiveness(ctx(t), r)
		var fe *cks.FieldError
		if !errors.Is(err, cks.ErrInvalid) || !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("bad %s: err = %v, want a FieldError naming %s", c.field, err, c.field)
		}
	}
	all, err := s.Liveness.ListAgentLiveness(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 0 {
		t.Fatalf("rejected upserts wrote %d rows", len(all))
	}
}

func testLivenessTimePrecision(t *testing.T, s *backend.Backend) {
	r := Liveness("i-1", "critic", 0)
	r.StartedAt = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("X", 3600))
	r.LastHeartbeatAt = r.StartedAt.Add(10 * time.Millisecond)
	MustUpsert(t, s, r)
	got, err := s.Liveness.GetAgentLiveness(ctx(t), "i-1")
	if err != nil {
		t.Fatal(err)
	}
	want := r
	want.StartedAt = driver.Time(r.StartedAt)
	want.LastHeartbeatAt = driver.Time(r.LastHeartbeatAt)
	EqualLiveness(t, got, want)
	if got.StartedAt.Nanosecond() != 123456000 {
		t.Fatalf("started_at nanos = %d, want microsecond precision 123456000", got.StartedAt.Nanosecond())
	}
}

func testLivenessConcurrentUpserts(t *testing.T, s *backend.Backend) {
	const workers, beats = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*beats)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := Liveness(fmt.Sprintf("w-%d", w), "pipeline", time.Duration(w)*time.Second)
			for b := range beats {
				r.LastHeartbeatAt = r.StartedAt.Add(time.Duration(b) * time.Second)
				if err := s.Liveness.UpsertAgentLiveness(ctx(t), r); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("concurrent upsert: %v", err)
	}
	all, err := s.Liveness.ListAgentLiveness(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != workers {
		t.Fatalf("got %d rows, want %d", len(all), workers)
	}
	for _, r := range all {
		if want := r.StartedAt.Add((beats - 1) * time.Second); !r.LastHeartbeatAt.Equal(want) {
			t.Errorf("%s last heartbeat %v, want the last write %v", r.InstanceID, r.LastHeartbeatAt, want)
		}
	}
}

func testPrincipals(t *testing.T, s *backend.Backend) {
	p := cks.Principal{ID: "p-1", Name: "admin", CreatedAt: T0}
	grants := []cks.Grant{{Resource: "/", Permission: "admin"}, {Resource: "/", Permission: "read"}}
	if err := s.Principals.CreatePrincipal(ctx(t), p, "hash-1", grants); err != nil {
		t.Fatal(err)
	}
	got, err := s.Principals.PrincipalByTokenHash(ctx(t), "hash-1")
	if err != nil {
		t.Fatal(err)
	}
	if got.ID != p.ID || got.Name != p.Name || !got.CreatedAt.Equal(p.CreatedAt) {
		t.Fatalf("principal = %+v, want %+v", got, p)
	}
	gs, err := s.Principals.GrantsOf(ctx(t), "p-1")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(gs) != fmt.Sprint(grants) {
		t.Fatalf("grants = %v, want %v", gs, grants)
	}
	if _, err := s.Principals.PrincipalByTokenHash(ctx(t), "other"); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("unknown hash: err = %v, want ErrNotFound", err)
	}
	if err := s.Principals.CreatePrincipal(ctx(t), cks.Principal{ID: "p-2", Name: "x", CreatedAt: T0}, "hash-1", nil); !errors.Is(err, cks.ErrConflict) {
		t.Fatalf("duplicate token hash: err = %v, want ErrConflict", err)
	}
	if err := s.Principals.CreatePrincipal(ctx(t), cks.Principal{ID: "p-1", Name: "x", CreatedAt: T0}, "hash-2", nil); !errors.Is(err, cks.ErrConflict) {
		t.Fatalf("duplicate id: err = %v, want ErrConflict", err)
	}
	if _, err := s.Principals.PrincipalByTokenHash(ctx(t), "hash-2"); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("rejected principal was stored: err = %v", err)
	}
}

// CheckUpgradedLiveness checks a store opened on a database whose
// cks_agent_liveness was created without current_task_id and current_task_type,
// holding rows old-1 (critic, started T0, heartbeat T0+30s, pid 10, interval 30)
// and old-2 (pipeline, started T0+1m, pid 11, interval 15): the rows read back
// intact with the new columns empty, and the new columns accept writes.
func CheckUpgradedLiveness(t testing.TB, s *backend.Backend) {
	t.Helper()
	old1 := cks.AgentLiveness{InstanceID: "old-1", ProcessKind: "critic", Hostname: "h", PID: 10,
		LivenessIntervalS: 30, StartedAt: T0, LastHeartbeatAt: T0.Add(30 * time.Second)}
	old2 := cks.AgentLiveness{InstanceID: "old-2", ProcessKind: "pipeline", Hostname: "h", PID: 11,
		LivenessIntervalS: 15, StartedAt: T0.Add(time.Minute), LastHeartbeatAt: T0.Add(time.Minute)}
	all, err := s.Liveness.ListAgentLiveness(ctx(t))
	if err != nil {
		t.Fatalf("list after upgrade: %v", err)
	}
	if len(all) != 2 {
		t.Fatalf("after upgrade %d rows, want 2", len(all))
	}
	EqualLiveness(t, all[0], old2)
	EqualLiveness(t, all[1], old1)
	for _, r := range all {
		if r.DesiredState != "" {
			t.Fatalf("row %s written before desired_state existed reads %q, want no stop requested", r.InstanceID, r.DesiredState)
		}
	}
	task := int64(9)
	old1.CurrentTaskID, old1.CurrentTaskType = &task, "critique"
	MustUpsert(t, s, old1)
	got, err := s.Liveness.GetAgentLiveness(ctx(t), "old-1")
	if err != nil {
		t.Fatal(err)
	}
	EqualLiveness(t, got, old1)
}
