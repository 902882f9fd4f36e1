package liveness_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/driver"
)

// TestLiveness: the liveness records (upsert, get, list, the latest per
// kind, their refusals and precision) and the stop requests, on both
// backends.
func TestLiveness(t *testing.T) {
	backendtest.Run(t, backendtest.Cases{
		"LivenessRoundTrip":            testLivenessRoundTrip,
		"LivenessUpsertKeepsStartedAt": testLivenessUpsertKeepsStartedAt,
		"LivenessListOrder":            testLivenessListOrder,
		"LivenessNotFound":             testLivenessNotFound,
		"LivenessLatestByKind":         testLivenessLatestByKind,
		"LivenessRejectsBadInput":      testLivenessRejectsBadInput,
		"LivenessTimePrecision":        testLivenessTimePrecision,
		"LivenessConcurrentUpserts":    testLivenessConcurrentUpserts,
		"LivenessRequestStop":          testLivenessRequestStop,
	})
}

// testLivenessRequestStop: ADR-016's request_agent_stop only ever updates,
// leaves the heartbeat alone, survives the process's own upserts, and wakes
// watchers of TopicAgentStop on other handles.
func testLivenessRequestStop(t *testing.T, open backendtest.Opener) {
	s := open(t)
	watched := open(t, driver.WithChangePollInterval(backendtest.FastPoll))
	w := backendtest.Watch(t, watched, cks.TopicAgentStop)
	w.Ready(t, cks.TopicAgentStop)

	found, err := s.Liveness.RequestAgentStop(ctx(t), "never-ran")
	if err != nil || found {
		t.Fatalf("stop of an unknown instance = %v, %v; want false, nil", found, err)
	}
	if _, err := s.Liveness.GetAgentLiveness(ctx(t), "never-ran"); !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("the stop request created a row: %v", err)
	}
	w.Quiet(t)

	r := backendtest.Liveness("inst-1", "critic", 0)
	backendtest.MustUpsert(t, s, r)
	if got, _ := s.Liveness.GetAgentLiveness(ctx(t), "inst-1"); got.DesiredState != "" {
		t.Fatalf("new row desired_state %q, want empty (no stop requested)", got.DesiredState)
	}
	found, err = s.Liveness.RequestAgentStop(ctx(t), "inst-1")
	if err != nil || !found {
		t.Fatalf("RequestAgentStop = %v, %v; want true", found, err)
	}
	if got := w.Next(t); got != cks.TopicAgentStop {
		t.Fatalf("watcher woke with %q", got)
	}
	got, err := watched.Liveness.GetAgentLiveness(ctx(t), "inst-1")
	if err != nil || got.DesiredState != cks.DesiredStopRequested {
		t.Fatalf("after the request: %+v, %v", got, err)
	}
	got.DesiredState = ""
	backendtest.EqualLiveness(t, got, r) // last_heartbeat_at untouched
	// The process keeps heartbeating until it notices: the request stays.
	r.LastHeartbeatAt = r.LastHeartbeatAt.Add(time.Minute)
	backendtest.MustUpsert(t, s, r)
	if got, _ := s.Liveness.GetAgentLiveness(ctx(t), "inst-1"); got.DesiredState != cks.DesiredStopRequested {
		t.Fatalf("an upsert cleared the stop request: %+v", got)
	}
	if all, _ := s.Liveness.ListAgentLiveness(ctx(t)); len(all) != 1 || all[0].DesiredState != cks.DesiredStopRequested {
		t.Fatalf("list: %+v", all)
	}
}

// ctx bounds a test's calls: backendtest.Ctx.
var ctx = backendtest.Ctx

func testLivenessRoundTrip(t *testing.T, open backendtest.Opener) {
	s := open(t)
	idle := backendtest.Liveness("i-idle", "critic", 0)
	busy := backendtest.Liveness("i-busy", "pipeline", time.Second)
	task := int64(77)
	busy.CurrentTaskID, busy.CurrentTaskType = &task, "research"
	busy.LivenessIntervalS = 2.5
	backendtest.MustUpsert(t, s, idle)
	backendtest.MustUpsert(t, s, busy)
	for _, want := range []cks.AgentLiveness{idle, busy} {
		got, err := s.Liveness.GetAgentLiveness(ctx(t), want.InstanceID)
		if err != nil {
			t.Fatalf("GetAgentLiveness(%s): %v", want.InstanceID, err)
		}
		backendtest.EqualLiveness(t, got, want)
	}
}

func testLivenessUpsertKeepsStartedAt(t *testing.T, open backendtest.Opener) {
	s := open(t)
	r := backendtest.Liveness("i-1", "critic", 0)
	task := int64(5)
	r.CurrentTaskID, r.CurrentTaskType = &task, "critique"
	backendtest.MustUpsert(t, s, r)

	next := r
	next.StartedAt = backendtest.T0.Add(time.Hour) // must be ignored: started_at is set once
	next.LastHeartbeatAt = backendtest.T0.Add(30 * time.Second)
	next.CurrentTaskID, next.CurrentTaskType = nil, ""
	next.PID = 4343
	backendtest.MustUpsert(t, s, next)

	got, err := s.Liveness.GetAgentLiveness(ctx(t), "i-1")
	if err != nil {
		t.Fatal(err)
	}
	want := next
	want.StartedAt = r.StartedAt
	backendtest.EqualLiveness(t, got, want)
	all, err := s.Liveness.ListAgentLiveness(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 1 {
		t.Fatalf("upsert of one instance left %d rows, want 1", len(all))
	}
}

func testLivenessListOrder(t *testing.T, open backendtest.Opener) {
	s := open(t)
	got, err := s.Liveness.ListAgentLiveness(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Fatalf("fresh store lists %d rows", len(got))
	}
	backendtest.MustUpsert(t, s, backendtest.Liveness("old", "critic", 0))
	backendtest.MustUpsert(t, s, backendtest.Liveness("new", "critic", 2*time.Minute))
	backendtest.MustUpsert(t, s, backendtest.Liveness("mid", "enrichment", time.Minute))
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

func testLivenessNotFound(t *testing.T, open backendtest.Opener) {
	s := open(t)
	_, err := s.Liveness.GetAgentLiveness(ctx(t), "nope")
	if !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("GetAgentLiveness(missing) = %v, want ErrNotFound", err)
	}
	_, err = s.Liveness.LatestAgentLiveness(ctx(t), "critic")
	if !errors.Is(err, cks.ErrNotFound) {
		t.Fatalf("LatestAgentLiveness(no rows) = %v, want ErrNotFound", err)
	}
}

func testLivenessLatestByKind(t *testing.T, open backendtest.Opener) {
	s := open(t)
	backendtest.MustUpsert(t, s, backendtest.Liveness("c-old", "critic", 0))
	backendtest.MustUpsert(t, s, backendtest.Liveness("c-new", "critic", time.Hour))
	// An older instance that heartbeats later is still not the newest-started.
	late := backendtest.Liveness("c-old", "critic", 0)
	late.LastHeartbeatAt = backendtest.T0.Add(2 * time.Hour)
	backendtest.MustUpsert(t, s, late)
	backendtest.MustUpsert(t, s, backendtest.Liveness("p-1", "pipeline", 3*time.Hour))

	got, err := s.Liveness.LatestAgentLiveness(ctx(t), "critic")
	if err != nil {
		t.Fatal(err)
	}
	if got.InstanceID != "c-new" {
		t.Fatalf("latest critic = %s, want c-new (newest started_at)", got.InstanceID)
	}
}

func testLivenessRejectsBadInput(t *testing.T, open backendtest.Opener) {
	s := open(t)
	good := backendtest.Liveness("i-1", "critic", 0)
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

func testLivenessTimePrecision(t *testing.T, open backendtest.Opener) {
	s := open(t)
	r := backendtest.Liveness("i-1", "critic", 0)
	r.StartedAt = time.Date(2026, 1, 2, 3, 4, 5, 123456789, time.FixedZone("X", 3600))
	r.LastHeartbeatAt = r.StartedAt.Add(10 * time.Millisecond)
	backendtest.MustUpsert(t, s, r)
	got, err := s.Liveness.GetAgentLiveness(ctx(t), "i-1")
	if err != nil {
		t.Fatal(err)
	}
	want := r
	want.StartedAt = driver.Time(r.StartedAt)
	want.LastHeartbeatAt = driver.Time(r.LastHeartbeatAt)
	backendtest.EqualLiveness(t, got, want)
	if got.StartedAt.Nanosecond() != 123456000 {
		t.Fatalf("started_at nanos = %d, want microsecond precision 123456000", got.StartedAt.Nanosecond())
	}
}

func testLivenessConcurrentUpserts(t *testing.T, open backendtest.Opener) {
	s := open(t)
	const workers, beats = 8, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*beats)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := backendtest.Liveness(fmt.Sprintf("w-%d", w), "pipeline", time.Duration(w)*time.Second)
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
