package ops

import (
	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/service/auth"
)

// The endpoints that are not request/response: listed for their permission
// (so the table is the whole access policy), served by the HTTP surface's
// own handlers.
var (
	// Metrics is GET /metrics (Prometheus).
	Metrics = streamOf(cks.StreamMetrics, Spec{
		Summary: "Prometheus metrics, e.g. cks_processes_alive{process_kind}",
		Description: "The hub's metrics in the Prometheus text format: its processes, sweepers, storage and Go runtime " +
			"(cks_processes_alive, cks_process_instances, cks_sweeper_running, …).",
		Permission: auth.PermRead, Resource: auth.ResourceRoot})
	// Events is GET /v1/events (Server-Sent Events).
	Events = streamOf(cks.StreamEvents, Spec{
		Summary: "Server-Sent Events (event: processes when process state changes; agent_step_started/agent_step_completed " +
			"when the hub runs the pipeline in-process)",
		Description: "A stream of Server-Sent Events, one per change a viewer should see (tasks, objects, processes, the " +
			"pipeline's steps), each carrying its type and time only: a client re-reads what it shows. A comment keeps the " +
			"stream alive; it ends when the client leaves or the hub shuts down.",
		Permission: auth.PermRead, Resource: auth.ResourceRoot})
	// OpenAPIDocument is GET /v1/openapi.json, the contract of the HTTP
	// operations of this table (OpenAPI).
	OpenAPIDocument = streamOf(cks.StreamOpenAPI, Spec{
		Summary: "the OpenAPI 3.1 contract of every operation of this table",
		Description: "This document: the OpenAPI 3.1 contract of every HTTP operation the hub serves, generated from its " +
			"operations table, the inputs' bounds included.",
		Permission: auth.PermRead, Resource: auth.ResourceRoot})
)

// table is every operation, in the order the surfaces list them.
var table = []Operation{
	Metrics,
	ListProcesses, ProcessStatus, RequestProcessStop, ReportProcess,
	Events, OpenAPIDocument,
	CreateTask, ListTasks, CountTasks, TaskStats, ListUnclaimedTypes, GetTask, AnswerTask, CancelTask, StopTask, StartTask, RetryTask, UpdateTask,
	BulkStopTasks, BulkStartTasks, BulkCancelTasks, BulkRetryTasks,
	ClaimTasks, MarkRunning, TouchTask, AddEvidence, AppendOutput, GetOutput, RecordDecision, ReuseWorkspace, ReportUsage, ConfirmAbort,
	CompleteTask, FailTask, RequestInput, ClaimReview, ApproveReview, RejectReview,
	ListAgents, AgentStatus, StartAgent, StopAgent,
	PauseType, ResumeType, ListPausedTypes,
	SetLimit, ListLimits, DeleteLimit,
	GetUsage,
	CreateSchedule, ListSchedules, GetSchedule, PauseSchedule, ResumeSchedule, TriggerSchedule, DeleteSchedule,
	SubmitResearch, ListObjects, GetObject, ListObjectVersionsOp, WriteObjectVersionOp,
	CreateToken, ListTokens, RevokeToken,
	ListSessions, RevokeSession,
	CheckStored,
}
