package liveness

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/driver"
)

// MaxReportInterval bounds the liveness interval a reporting process
// names: it reads alive up to three of them after its last report.
const MaxReportInterval = time.Hour

// Report is report_process: one heartbeat of a process that reports its
// liveness over the API rather than on the database (a Python or
// TypeScript agent, a shell script), written by reporter — the id of the
// calling principal, "" for a caller that is none. The first report of an
// instance starts its row (started now), every later one is a heartbeat
// (the task in hand, the types it claims), and one with Exited is its
// last: the row reads stopped at once and takes no report after it. Only
// the principal that made the row may write it again (its ReportedBy), so
// a credential that may report a kind cannot speak for another's
// processes, nor for a process on the database. The answer is the row as
// written, with its status and desired_state: "stop_requested" once
// request_process_stop asked it to stop.
func (s *Service) Report(ctx context.Context, reporter string, in cks.ReportProcessInput) (cks.Process, error) {
	rec, err := reportedRow(in)
	if err != nil {
		return cks.Process{}, err
	}
	rec.ReportedBy = reporter
	var now time.Time
	err = s.db.WithTx(ctx, driver.TxOptions{}, func(ctx context.Context, ex driver.Executor) error {
		now = driver.Time(s.clock.Now())
		rec.StartedAt, rec.LastHeartbeatAt, rec.DesiredState, rec.ExitedAt = now, now, "", time.Time{}
		old, err := ex.LivenessGet(ctx, rec.InstanceID)
		switch {
		case errors.Is(err, driver.ErrNoRows):
		case err != nil:
			return err
		case old.ReportedBy != reporter:
			return reportedByAnother(rec.InstanceID)
		case old.ProcessKind != rec.ProcessKind:
			return &cks.FieldError{Field: "process_kind", Expected: fmt.Sprintf("%q, the kind instance %s reported first", old.ProcessKind, rec.InstanceID)}
		case !livenessOf(old).ExitedAt.IsZero():
			return fmt.Errorf("process instance %q exited; a new run reports under a new instance_id: %w", rec.InstanceID, cks.ErrConflict)
		default:
			rec.StartedAt, rec.DesiredState = old.StartedAt, old.DesiredState
		}
		if in.Exited {
			rec = Exited(rec, now)
		}
		return upsert(ctx, ex, rec)
	})
	if err != nil {
		return cks.Process{}, fmt.Errorf("report process %s: %w", in.InstanceID, err)
	}
	return s.annotate(rec, now), nil
}

// reportedRow is the row in reports, with its defaults, or a FieldError
// naming the first field a row cannot hold.
func reportedRow(in cks.ReportProcessInput) (cks.AgentLiveness, error) {
	if err := cks.ValidateProcessKind("process_kind", in.ProcessKind); err != nil {
		return cks.AgentLiveness{}, err
	}
	if err := cks.ValidateInstanceID("instance_id", in.InstanceID); err != nil {
		return cks.AgentLiveness{}, err
	}
	r := cks.AgentLiveness{InstanceID: in.InstanceID, ProcessKind: in.ProcessKind, Hostname: in.Hostname, PID: in.PID,
		LivenessIntervalS: in.LivenessIntervalS, CurrentTaskType: in.CurrentTaskType, TaskTypes: in.TaskTypes}
	if r.Hostname == "" {
		r.Hostname = "unknown"
	}
	if r.PID == 0 {
		r.PID = 1
	}
	if r.LivenessIntervalS == 0 {
		r.LivenessIntervalS = DefaultInterval.Seconds()
	}
	if in.CurrentTaskID != 0 {
		r.CurrentTaskID = &in.CurrentTaskID
	}
	switch {
	case r.PID < 0:
		return r, &cks.FieldError{Field: "pid", Expected: "a positive process id"}
	case !(r.LivenessIntervalS >= 1 && r.LivenessIntervalS <= MaxReportInterval.Seconds()):
		return r, &cks.FieldError{Field: "liveness_interval_s", Expected: fmt.Sprintf("1 to %.0f seconds", MaxReportInterval.Seconds())}
	case in.CurrentTaskID < 0:
		return r, &cks.FieldError{Field: "current_task_id", Expected: "a positive task id, or none when idle"}
	case in.CurrentTaskType != "" && in.CurrentTaskID == 0:
		return r, &cks.FieldError{Field: "current_task_type", Expected: "none without a current_task_id"}
	}
	if in.CurrentTaskType != "" {
		if err := cks.ValidateTaskType("current_task_type", in.CurrentTaskType); err != nil {
			return r, err
		}
	}
	if err := cks.ValidateTaskTypes("task_types", in.TaskTypes); err != nil {
		return r, err
	}
	// StartedAt and LastHeartbeatAt are the report's time: Validate
	// checks the rest.
	check := r
	check.StartedAt, check.LastHeartbeatAt = time.Unix(1, 0), time.Unix(1, 0)
	return r, check.Validate()
}
