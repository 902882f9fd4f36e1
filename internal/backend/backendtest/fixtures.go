package backendtest

import (
	"fmt"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend"
)

// T0 is the base time of the tests' records.
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

// MustUpsert upserts r or fails the test.
func MustUpsert(t testing.TB, s *backend.Backend, r cks.AgentLiveness) {
	t.Helper()
	if err := s.Liveness.UpsertAgentLiveness(Ctx(t), r); err != nil {
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
