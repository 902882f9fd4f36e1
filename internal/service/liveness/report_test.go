package liveness_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/backend/backendtest"
	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// TestReport: a process that reports over the API (report_process) is
// listed, read and stopped like a cks agent: its first report starts its
// row, later ones renew it, the answer carries the stop request, its last
// report (exited) ends it; only its own principal may write its row, and
// its kind is fixed. Both backends.
func TestReport(t *testing.T) {
	backendtest.ForEach(t, func(t *testing.T, open backendtest.Opener) {
		st := open(t)
		c := clock.NewFake(backendtest.T0)
		svc := liveness.NewService(st.Driver(), c)
		ctx := context.Background()
		report := func(by string, in cks.ReportProcessInput) cks.Process {
			t.Helper()
			p, err := svc.Report(ctx, by, in)
			if err != nil {
				t.Fatalf("report %+v by %q: %v", in, by, err)
			}
			return p
		}
		first := cks.ReportProcessInput{ProcessKind: "summarize", InstanceID: "i-1", LivenessIntervalS: 10, TaskTypes: cks.Names{"summarize"}}
		p := report("p-1", first)
		if p.Status != cks.ProcessAlive || !p.StartedAt.Equal(backendtest.T0) || p.Hostname != "unknown" || p.PID != 1 ||
			p.ReportedBy != "p-1" || p.DesiredState != "" {
			t.Fatalf("first report answered %+v", p)
		}

		// A heartbeat with the task in hand keeps the start.
		c.Advance(5 * time.Second)
		beat := first
		beat.CurrentTaskID, beat.CurrentTaskType = 7, "summarize"
		if p := report("p-1", beat); !p.StartedAt.Equal(backendtest.T0) || !p.LastHeartbeatAt.Equal(backendtest.T0.Add(5*time.Second)) ||
			p.CurrentTaskID == nil || *p.CurrentTaskID != 7 {
			t.Fatalf("heartbeat answered %+v", p)
		}
		// Listed in the live view and read by kind, like a cks agent.
		list, err := svc.Page(ctx, cks.ListProcessesInput{})
		if err != nil || len(list.Processes) != 1 || list.Processes[0].InstanceID != "i-1" {
			t.Fatalf("live view = %+v, %v", list, err)
		}
		if p, err := svc.ProcessStatus(ctx, "summarize"); err != nil || p.InstanceID != "i-1" || p.Status != cks.ProcessAlive {
			t.Fatalf("process_status = %+v, %v", p, err)
		}

		// A stop request reaches it in the answer to its next report.
		if res, err := svc.RequestStop(ctx, "summarize"); err != nil || !res.Found || res.InstanceID != "i-1" {
			t.Fatalf("stop = %+v, %v", res, err)
		}
		if p := report("p-1", beat); p.DesiredState != cks.DesiredStopRequested {
			t.Fatalf("report after the stop answered desired_state %q", p.DesiredState)
		}

		// Nobody else writes its row, nor changes its kind.
		for _, by := range []string{"p-2", ""} {
			if _, err := svc.Report(ctx, by, beat); !errors.Is(err, cks.ErrConflict) {
				t.Errorf("report of i-1 by %q: %v, want a conflict", by, err)
			}
		}
		other := beat
		other.ProcessKind = "critic"
		if _, err := svc.Report(ctx, "p-1", other); !cks.IsFieldError(err, "process_kind") {
			t.Errorf("a new kind: %v, want a FieldError naming process_kind", err)
		}
		// Nor a process on the database's.
		backendtest.MustUpsert(t, st, backendtest.Liveness("db-1", "critic", 0))
		if _, err := svc.Report(ctx, "p-1", cks.ReportProcessInput{ProcessKind: "critic", InstanceID: "db-1"}); !errors.Is(err, cks.ErrConflict) {
			t.Errorf("report of a database process's row: %v, want a conflict", err)
		}

		// The last report: stopped at once, and no report after it.
		last := beat
		last.Exited = true
		if p := report("p-1", last); p.Status != cks.ProcessStopped || p.ExitedAt.IsZero() || p.CurrentTaskID != nil {
			t.Fatalf("exit answered %+v", p)
		}
		if _, err := svc.Report(ctx, "p-1", beat); !errors.Is(err, cks.ErrConflict) {
			t.Errorf("report after the exit: %v, want a conflict", err)
		}
		got, err := st.Liveness.GetAgentLiveness(ctx, "i-1")
		if err != nil || got.ReportedBy != "p-1" || got.ExitedAt.IsZero() || got.ProcessKind != "summarize" {
			t.Fatalf("row after the refusals = %+v, %v", got, err)
		}

		// The TTL rule: three intervals without a report.
		report("p-1", cks.ReportProcessInput{ProcessKind: "summarize", InstanceID: "i-2", LivenessIntervalS: 10})
		c.Advance(30 * time.Second)
		if p, _ := svc.ProcessStatus(ctx, "summarize"); p.InstanceID != "i-2" || p.Status != cks.ProcessAlive {
			t.Fatalf("at 3 intervals: %+v", p)
		}
		c.Advance(time.Millisecond)
		if p, _ := svc.ProcessStatus(ctx, "summarize"); p.Status != cks.ProcessStopped {
			t.Fatalf("past 3 intervals: %+v", p)
		}
	})
}

// TestReportRefusesBadInput: each bad field is a FieldError naming it,
// and nothing is written.
func TestReportRefusesBadInput(t *testing.T) {
	svc, st, _ := newService(t)
	ok := cks.ReportProcessInput{ProcessKind: "summarize", InstanceID: "i-1"}
	for field, set := range map[string]func(*cks.ReportProcessInput){
		"process_kind":        func(in *cks.ReportProcessInput) { in.ProcessKind = "a/b" },
		"instance_id":         func(in *cks.ReportProcessInput) { in.InstanceID = "" },
		"pid":                 func(in *cks.ReportProcessInput) { in.PID = -1 },
		"liveness_interval_s": func(in *cks.ReportProcessInput) { in.LivenessIntervalS = 0.5 },
		"current_task_id":     func(in *cks.ReportProcessInput) { in.CurrentTaskID = -3 },
		"current_task_type":   func(in *cks.ReportProcessInput) { in.CurrentTaskType = "summarize" },
		"task_types":          func(in *cks.ReportProcessInput) { in.TaskTypes = cks.Names{"a b"} },
		"hostname":            func(in *cks.ReportProcessInput) { in.Hostname = "a\x00b" },
	} {
		bad := ok
		set(&bad)
		if _, err := svc.Report(context.Background(), "p", bad); !cks.IsFieldError(err, field) {
			t.Errorf("%s: %v, want a FieldError naming it", field, err)
		}
	}
	if rows, err := st.Liveness.ListAgentLiveness(context.Background()); err != nil || len(rows) != 0 {
		t.Fatalf("refused reports wrote %+v, %v", rows, err)
	}
}
