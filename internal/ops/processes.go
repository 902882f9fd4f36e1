package ops

import (
	"context"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/base/events"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/liveness"
)

// The process operations (ADR-014 §4, ADR-016): liveness of the standalone
// agent processes, and their graceful stop.

// ttlRule is the liveness rule as the descriptions state it.
var ttlRule = fmt.Sprintf(`status is computed when read: "alive" iff now - last_heartbeat_at <= %d × liveness_interval_s, otherwise "stopped"`, liveness.TTLFactor)

var kinds = strings.Join(liveness.KnownKinds(), ", ")

// ListProcesses is list_processes.
var ListProcesses = define(cks.OpListProcesses, &Op[cks.ListProcessesInput, cks.ProcessList]{
	spec: Spec{
		Title:   "List agent processes",
		Summary: "the live agent process instances (history=true: every one that ever reported), paged, with their computed status",
		Description: "List standalone cks agent process instances (one row per OS process instance; a restarted process " +
			"gets a new row and old rows stay as history until the retention sweeper prunes them), newest-started first, " +
			"under \"processes\". By default the live instances: the newest instance of each kind (what process_status " +
			"reports, alive or not) and every alive instance; history=true lists every instance that ever reported. " +
			"alive=true or alive=false keeps only the alive or the stopped ones, kind only the instances of the kinds " +
			"named (cks's own agents are " + kinds + "; a process that reports over report_process names its own). A page holds up to limit rows (default 100, at most 1000); next_cursor, when " +
			"present, is the cursor of the following page. " + ttlRule + ". " +
			"Each row has instance_id, process_kind, hostname, pid, liveness_interval_s, started_at, " +
			"last_heartbeat_at, heartbeat_age_s and the best-effort current_task_id/current_task_type. " +
			"A kind that is no process kind, a bad cursor or limit is an invalid_argument error naming the field. " +
			"Use process_status for the current state of one kind. These are OS processes, not the in-process " +
			"sweepers that list_agents reports.",
		Permission: auth.PermRead, Resource: auth.ResourceProcesses,
		Surfaces: HTTP | MCP | CLI, Needs: NeedLiveness, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, in *cks.ListProcessesInput) (cks.ProcessList, error) {
		return s.Liveness.Page(ctx, *in)
	},
	outSchema: func(s *jsonschema.Schema) {
		s.Properties["processes"].Description = "the page's instances, newest-started first"
		s.Properties["processes"].Items = processSchema(cks.ProcessAlive, cks.ProcessStopped)
		s.Properties["next_cursor"].Description = "the cursor of the following page; absent on the last"
	},
})

// ProcessStatus is process_status.
var ProcessStatus = define(cks.OpProcessStatus, &Op[cks.ProcessInput, cks.Process]{
	spec: Spec{
		Title:   "Process status",
		Summary: `the newest instance of a kind; "status":"not_found" if none ever reported`,
		Description: "Report whether a kind of standalone cks agent process is running: the most recently started " +
			"instance of process_kind, in the same row shape as list_processes. " + ttlRule +
			"; \"not_found\" (a normal answer, not an error) means no instance of that kind has ever reported. " +
			"cks's own agents are " + kinds + "; a process that reports over report_process names its own kind.",
		Permission: auth.PermRead, Resource: auth.ResourceProcesses + "/{process_kind}",
		Surfaces: HTTP | MCP | CLI, Needs: NeedLiveness, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, in *cks.ProcessInput) (cks.Process, error) {
		return s.Liveness.ProcessStatus(ctx, in.ProcessKind)
	},
	outSchema: func(s *jsonschema.Schema) {
		*s = *processSchema(cks.ProcessAlive, cks.ProcessStopped, cks.ProcessNotFound)
	},
})

// RequestProcessStop is request_process_stop.
var RequestProcessStop = define(cks.OpRequestProcessStop, &Op[cks.ProcessInput, cks.ProcessStopResult]{
	spec: Spec{
		Title: "Request process stop",
		Summary: "ask a process (a kind's newest instance, or an instance id) to finish its current task and exit (ADR-016); " +
			`{"found":false} (200) when none is alive; there is no start`,
		Description: "Ask a standalone cks agent process to stop gracefully: the current alive instance of process_kind " +
			"(the most recently started one, as process_status reports it), or the instance whose instance_id is given " +
			"as process_kind, is asked to finish its current task, if any, " +
			"claim nothing more, and exit. The request is recorded on the instance's liveness row (desired_state " +
			"\"stop_requested\") and the process sees it within one liveness interval, usually much sooner; the call " +
			"returns at once and does not wait for the exit. Once the process exits it reads \"stopped\" in " +
			"list_processes and process_status. Returns {\"found\": true, \"instance_id\", \"process_kind\"} for the " +
			"instance asked, or {\"found\": false} (a normal answer, not an error) when the kind has no alive instance: " +
			"never started, or its newest instance already stopped. There is no start: cks cannot launch an agent " +
			"process; restarting one is up to whatever launched it (systemd, a container orchestrator, a shell). " +
			"There is no pause or resume either; a stop is the graceful drain. A process that reports over " +
			"report_process learns of the request in the answer to its next report (desired_state). A kind is read " +
			"first: a target is an instance id only when no process of that kind ever reported. " +
			"Needs control on /processes/KIND of the process it names.",
		Permission: auth.PermControl, Resource: auth.ResourceProcesses + "/{process_kind}",
		Surfaces: HTTP | MCP | CLI, Needs: NeedLiveness,
		// The process exits (a drain: it claims nothing more); a repeat is
		// answered as the first.
		Hints: Hints{Idempotent: true, Destructive: new(true), OpenWorld: new(false)},
	},
	resource: processStopResource,
	call: func(ctx context.Context, s *Services, in *cks.ProcessInput) (cks.ProcessStopResult, error) {
		res, err := s.Liveness.RequestStop(ctx, in.ProcessKind)
		if err == nil && res.Found && s.Bus != nil {
			// The row's desired_state changed: tell this hub's viewers now
			// rather than at the liveness watch's next read (which notices
			// it too).
			s.Bus.Publish(events.Event{Type: events.ProcessesChanged, At: s.clock().Now()})
		}
		return res, err
	},
	outSchema: func(s *jsonschema.Schema) {
		describe("request_process_stop", s, map[string]string{
			"found":        "true when an alive instance was asked to stop; false (not an error) when the kind has no alive instance",
			"instance_id":  "the instance asked to stop (with found false: the kind's newest, already stopped, instance; absent when none ever reported)",
			"process_kind": "the kind of that instance",
		})
	},
})

// processStopResource is the resource of a stop request: /processes/KIND
// of the instance the target resolves to (ResolveProcess: a kind, or an
// instance's kind), or /processes/TARGET when it names nothing (so only a
// caller who may control it learns, from the call's answer, that it names
// nothing).
func processStopResource(ctx context.Context, s *Services, in *cks.ProcessInput) (string, error) {
	if _, err := expand(auth.ResourceProcesses+"/{process_kind}", in); err != nil {
		return "", err
	}
	if s.Liveness == nil {
		// No process to resolve (a caller weighing the operation, such
		// as the studio asking whether to offer it): the target's own.
		return auth.ProcessResource(in.ProcessKind), nil
	}
	p, err := s.Liveness.ResolveProcess(ctx, in.ProcessKind)
	if err != nil {
		return "", err
	}
	return auth.ProcessResource(p.ProcessKind), nil
}

// ReportProcess is report_process.
var ReportProcess = define(cks.OpReportProcess, &Op[cks.ReportProcessInput, cks.Process]{
	spec: Spec{
		Title: "Report a process",
		Summary: "a process's heartbeat over the API (any language): starts or renews its liveness row and answers " +
			"its desired_state, stop_requested once it is asked to stop",
		Description: "Report that a process is alive, for a process that is not a cks agent on the database: a worker in " +
			"Python or TypeScript, a script, any program with an HTTP or MCP client. The first report of an " +
			"instance_id (a random UUID the process makes at its start) adds the instance to list_processes, the Agent " +
			"Panel and process_status under process_kind; each later report is a heartbeat, with the task in hand " +
			"(current_task_id, current_task_type) and the types it claims (task_types). " + ttlRule + ": report at " +
			"least every liveness_interval_s (default 30). The answer is the instance's row with its status and " +
			"desired_state: \"stop_requested\" once request_process_stop (cks process stop) asked it to stop — then " +
			"finish the task in hand, claim nothing more, and send a last report with exited true, after which the " +
			"instance reads stopped and takes no more reports. Only the principal that made an instance's row may " +
			"report it again (a conflict otherwise), and the instance's kind is fixed by its first report. " +
			"Needs update on /processes/KIND: a credential granted that on its own kind may report its processes and " +
			"nothing else's.",
		Permission: auth.PermUpdate, Resource: auth.ResourceProcesses + "/{process_kind}",
		Surfaces: HTTP | MCP | CLI, Needs: NeedLiveness,
		// A repeat renews the same row: its answer is the first's but for
		// the heartbeat's time. It adds a row, never takes one away.
		Hints: Hints{Idempotent: true, Destructive: new(false), OpenWorld: new(false)},
	},
	call: func(ctx context.Context, s *Services, in *cks.ReportProcessInput) (cks.Process, error) {
		return s.Liveness.Report(ctx, reporterOf(ctx), *in)
	},
	outSchema: func(s *jsonschema.Schema) {
		*s = *processSchema(cks.ProcessAlive, cks.ProcessStopped)
	},
})

// readOnly are the hints of an operation that changes nothing.
var readOnly = Hints{ReadOnly: true, Idempotent: true, OpenWorld: new(false)}

// processFieldDocs describe each property of a cks.Process.
var processFieldDocs = map[string]string{
	"instance_id":         "unique id of the process instance, generated once at process start",
	"process_kind":        "which standalone agent this is",
	"hostname":            "host the process runs on",
	"pid":                 "operating-system process id on that host",
	"liveness_interval_s": "seconds between this instance's heartbeats",
	"started_at":          "RFC 3339 time the instance started",
	"last_heartbeat_at":   "RFC 3339 time of the instance's latest heartbeat",
	"current_task_id":     "outbox task the process holds, null when idle (best effort)",
	"current_task_type":   "type of that task, absent when idle (best effort)",
	"status":              ttlRule,
	"heartbeat_age_s":     "seconds between last_heartbeat_at and the time of this read",
}

// processSchema returns the schema of one process row, with descriptions and
// status limited to statuses.
func processSchema(statuses ...cks.ProcessStatus) *jsonschema.Schema {
	s := outputSchema[cks.Process]("process")
	describe("process", s, processFieldDocs)
	status := s.Properties["status"]
	for _, st := range statuses {
		status.Enum = append(status.Enum, string(st))
		if st == cks.ProcessNotFound {
			status.Description += `; "not_found" when no instance of the kind has ever reported`
		}
	}
	return s
}

// reporterOf is the principal a process's liveness row is reported by: the
// caller's id, "" for a caller that is none (report_process writes it, a
// claim for a process reads by it).
func reporterOf(ctx context.Context) string {
	if p, ok := auth.PrincipalFrom(ctx); ok {
		return p.ID
	}
	return ""
}
