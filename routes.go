package cks

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Route is where an operation of a hub is served over HTTP: its name (the
// MCP tool's name, the argument of `cks api`), its method and its path, a
// net/http ServeMux pattern whose {wildcards} name the input fields they
// carry. Package ops declares each operation on its route (permission,
// call, schemas); a client needs only the route and the types.
type Route struct {
	Name, Method, Path string
}

// Bodyless reports whether the route's input travels in the URL only: the
// path and, for GET and DELETE, the query.
func (r Route) Bodyless() bool { return r.Method == "GET" || r.Method == "DELETE" }

// Operation is an operation as a client calls it: its route, and a zero
// input to decode an input into.
type Operation interface {
	Route() Route
	// NewInput returns a pointer to a zero input.
	NewInput() any
}

// Endpoint is the route of an operation with input In and output Out.
type Endpoint[In, Out any] struct{ route Route }

// endpoint declares the route of an operation.
func endpoint[In, Out any](name, method, path string) Endpoint[In, Out] {
	return Endpoint[In, Out]{route: Route{Name: name, Method: method, Path: path}}
}

// Route implements Operation.
func (e Endpoint[In, Out]) Route() Route { return e.route }

// NewInput implements Operation.
func (e Endpoint[In, Out]) NewInput() any { return new(In) }

// Waiter is an input whose call may wait before it answers, beyond an
// ordinary request (a stop or an update of a running task waiting for its
// executor's abort confirmation): MaxWait says how long, so that a caller
// and the hub extend their deadlines by it.
type Waiter interface {
	MaxWait() time.Duration
}

// The operations of a hub that answer a request, in the order of the
// operations table (package ops), each with its input and output type.
var (
	// OpListProcesses is list_processes.
	OpListProcesses = endpoint[ListProcessesInput, ProcessList]("list_processes", "GET", "/v1/processes")
	// OpProcessStatus is process_status.
	OpProcessStatus = endpoint[ProcessInput, Process]("process_status", "GET", "/v1/processes/{process_kind}")
	// OpRequestProcessStop is request_process_stop.
	OpRequestProcessStop = endpoint[ProcessInput, ProcessStopResult]("request_process_stop", "POST", "/v1/processes/{process_kind}/stop")
	// OpReportProcess is report_process.
	OpReportProcess = endpoint[ReportProcessInput, Process]("report_process", "POST", "/v1/processes/{process_kind}/report")
	// OpCreateTask is create_task.
	OpCreateTask = endpoint[NewTask, CreatedTask]("create_task", "POST", "/v1/tasks")
	// OpListTasks is list_tasks.
	OpListTasks = endpoint[ListTasksInput, TaskPage]("list_tasks", "GET", "/v1/tasks")
	// OpCountTasks is count_tasks.
	OpCountTasks = endpoint[CountTasksInput, TaskCounts]("count_tasks", "GET", "/v1/tasks/counts")
	// OpTaskStats is task_stats.
	OpTaskStats = endpoint[TaskStatsInput, TaskStats]("task_stats", "GET", "/v1/tasks/stats")
	// OpListUnclaimedTypes is list_unclaimed_types.
	OpListUnclaimedTypes = endpoint[UnclaimedTypesInput, UnclaimedTypes]("list_unclaimed_types", "GET", "/v1/tasks/unclaimed-types")
	// OpGetTask is get_task.
	OpGetTask = endpoint[TaskInput, Task]("get_task", "GET", "/v1/tasks/{task_id}")
	// OpAnswerTask is answer_task.
	OpAnswerTask = endpoint[AnswerTaskInput, Task]("answer_task", "POST", "/v1/tasks/{task_id}/answer")
	// OpCancelTask is cancel_task.
	OpCancelTask = endpoint[TaskReasonInput, Task]("cancel_task", "POST", "/v1/tasks/{task_id}/cancel")
	// OpStopTask is stop_task.
	OpStopTask = endpoint[StopTaskInput, TaskStopResult]("stop_task", "POST", "/v1/tasks/{task_id}/stop")
	// OpStartTask is start_task.
	OpStartTask = endpoint[TaskReasonInput, Task]("start_task", "POST", "/v1/tasks/{task_id}/start")
	// OpRetryTask is retry_task.
	OpRetryTask = endpoint[TaskReasonInput, Task]("retry_task", "POST", "/v1/tasks/{task_id}/retry")
	// OpUpdateTask is update_task.
	OpUpdateTask = endpoint[UpdateTaskInput, UpdateResult]("update_task", "PATCH", "/v1/tasks/{task_id}")
	// OpBulkStopTasks is bulk_stop_tasks.
	OpBulkStopTasks = endpoint[BulkStopTasksInput, BulkResult]("bulk_stop_tasks", "POST", "/v1/tasks/bulk/stop")
	// OpBulkStartTasks is bulk_start_tasks.
	OpBulkStartTasks = endpoint[BulkTasksInput, BulkResult]("bulk_start_tasks", "POST", "/v1/tasks/bulk/start")
	// OpBulkCancelTasks is bulk_cancel_tasks.
	OpBulkCancelTasks = endpoint[BulkTasksInput, BulkResult]("bulk_cancel_tasks", "POST", "/v1/tasks/bulk/cancel")
	// OpBulkRetryTasks is bulk_retry_tasks.
	OpBulkRetryTasks = endpoint[BulkTasksInput, BulkResult]("bulk_retry_tasks", "POST", "/v1/tasks/bulk/retry")
	// OpClaimTasks is claim_tasks.
	OpClaimTasks = endpoint[ClaimTasksInput, ClaimedTasks]("claim_tasks", "POST", "/v1/tasks/claim")
	// OpMarkRunning is mark_running.
	OpMarkRunning = endpoint[LeaseInput, Task]("mark_running", "POST", "/v1/tasks/{task_id}/running")
	// OpTouchTask is touch_task.
	OpTouchTask = endpoint[LeaseInput, TouchResult]("touch_task", "POST", "/v1/tasks/{task_id}/touch")
	// OpAddEvidence is add_evidence.
	OpAddEvidence = endpoint[AddEvidenceInput, Evidence]("add_evidence", "POST", "/v1/tasks/{task_id}/evidence")
	// OpAppendOutput is append_output.
	OpAppendOutput = endpoint[AppendOutputInput, OutputAppended]("append_output", "POST", "/v1/tasks/{task_id}/output")
	// OpGetOutput is get_output.
	OpGetOutput = endpoint[GetOutputInput, OutputPage]("get_output", "GET", "/v1/tasks/{task_id}/output")
	// OpRecordDecision is record_decision.
	OpRecordDecision = endpoint[RecordDecisionInput, Decision]("record_decision", "POST", "/v1/tasks/{task_id}/decisions")
	// OpReuseWorkspace is reuse_workspace.
	OpReuseWorkspace = endpoint[ReuseWorkspaceInput, Decision]("reuse_workspace", "POST", "/v1/tasks/{task_id}/workspace/reuse")
	// OpReportUsage is report_usage.
	OpReportUsage = endpoint[ReportUsageInput, UsageReport]("report_usage", "POST", "/v1/tasks/{task_id}/usage")
	// OpGetUsage is get_usage.
	OpGetUsage = endpoint[GetUsageInput, UsageSummary]("get_usage", "GET", "/v1/usage")
	// OpConfirmAbort is confirm_abort.
	OpConfirmAbort = endpoint[LeaseInput, Abort]("confirm_abort", "POST", "/v1/tasks/{task_id}/abort/confirm")
	// OpCompleteTask is complete_task.
	OpCompleteTask = endpoint[CompleteTaskInput, Task]("complete_task", "POST", "/v1/tasks/{task_id}/complete")
	// OpFailTask is fail_task.
	OpFailTask = endpoint[FailTaskInput, Task]("fail_task", "POST", "/v1/tasks/{task_id}/fail")
	// OpRequestInput is request_input.
	OpRequestInput = endpoint[QuestionInput, Task]("request_input", "POST", "/v1/tasks/{task_id}/request-input")
	// OpClaimReview is claim_review.
	OpClaimReview = endpoint[ClaimReviewInput, ClaimedTask]("claim_review", "POST", "/v1/tasks/{task_id}/review/claim")
	// OpApproveReview is approve_review.
	OpApproveReview = endpoint[ReviewInput, Task]("approve_review", "POST", "/v1/tasks/{task_id}/review/approve")
	// OpRejectReview is reject_review.
	OpRejectReview = endpoint[ReviewInput, Task]("reject_review", "POST", "/v1/tasks/{task_id}/review/reject")
	// OpListAgents is list_agents.
	OpListAgents = endpoint[struct{}, SweeperList]("list_agents", "GET", "/v1/sweepers")
	// OpAgentStatus is agent_status.
	OpAgentStatus = endpoint[SweeperInput, SweeperStatus]("agent_status", "GET", "/v1/sweepers/{agent_id}")
	// OpStartAgent is start_agent.
	OpStartAgent = endpoint[SweeperInput, SweeperStatus]("start_agent", "POST", "/v1/sweepers/{agent_id}/start")
	// OpStopAgent is stop_agent.
	OpStopAgent = endpoint[SweeperInput, SweeperStatus]("stop_agent", "POST", "/v1/sweepers/{agent_id}/stop")
	// OpPauseType is pause_type.
	OpPauseType = endpoint[PauseTypeInput, PausedType]("pause_type", "POST", "/v1/types/pause")
	// OpResumeType is resume_type.
	OpResumeType = endpoint[TypeInput, TypeResumed]("resume_type", "POST", "/v1/types/resume")
	// OpListPausedTypes is list_paused_types.
	OpListPausedTypes = endpoint[struct{}, PausedTypeList]("list_paused_types", "GET", "/v1/types/paused")
	// OpSetLimit is set_limit.
	OpSetLimit = endpoint[LimitInput, Limit]("set_limit", "POST", "/v1/limits")
	// OpListLimits is list_limits.
	OpListLimits = endpoint[struct{}, LimitList]("list_limits", "GET", "/v1/limits")
	// OpDeleteLimit is delete_limit.
	OpDeleteLimit = endpoint[LimitNameInput, LimitDeleted]("delete_limit", "DELETE", "/v1/limits/{name}")
	// OpCreateSchedule is create_schedule.
	OpCreateSchedule = endpoint[NewSchedule, Schedule]("create_schedule", "POST", "/v1/schedules")
	// OpListSchedules is list_schedules.
	OpListSchedules = endpoint[struct{}, ScheduleList]("list_schedules", "GET", "/v1/schedules")
	// OpGetSchedule is get_schedule.
	OpGetSchedule = endpoint[ScheduleInput, Schedule]("get_schedule", "GET", "/v1/schedules/{name}")
	// OpPauseSchedule is pause_schedule.
	OpPauseSchedule = endpoint[ScheduleInput, Schedule]("pause_schedule", "POST", "/v1/schedules/{name}/pause")
	// OpResumeSchedule is resume_schedule.
	OpResumeSchedule = endpoint[ScheduleInput, Schedule]("resume_schedule", "POST", "/v1/schedules/{name}/resume")
	// OpTriggerSchedule is trigger_schedule.
	OpTriggerSchedule = endpoint[ScheduleInput, ScheduleFired]("trigger_schedule", "POST", "/v1/schedules/{name}/trigger")
	// OpDeleteSchedule is delete_schedule.
	OpDeleteSchedule = endpoint[ScheduleInput, struct{}]("delete_schedule", "DELETE", "/v1/schedules/{name}")
	// OpSubmitResearch is submit_research.
	OpSubmitResearch = endpoint[SubmitResearchInput, Object]("submit_research", "POST", "/v1/objects")
	// OpListObjects is list_objects.
	OpListObjects = endpoint[ListObjectsInput, ObjectPage]("list_objects", "GET", "/v1/objects")
	// OpGetObject is get_object.
	OpGetObject = endpoint[ObjectInput, ObjectView]("get_object", "GET", "/v1/objects/{object_id}")
	// OpListObjectVersions is list_object_versions.
	OpListObjectVersions = endpoint[ObjectInput, VersionList]("list_object_versions", "GET", "/v1/objects/{object_id}/versions")
	// OpWriteObjectVersion is write_object_version.
	OpWriteObjectVersion = endpoint[WriteVersionInput, Version]("write_object_version", "POST", "/v1/objects/{object_id}/versions")
	// OpCreateToken is create_token.
	OpCreateToken = endpoint[CreateTokenInput, CreatedToken]("create_token", "POST", "/v1/tokens")
	// OpListTokens is list_tokens.
	OpListTokens = endpoint[struct{}, TokenList]("list_tokens", "GET", "/v1/tokens")
	// OpRevokeToken is revoke_token.
	OpRevokeToken = endpoint[TokenInput, struct{}]("revoke_token", "DELETE", "/v1/tokens/{id}")
	// OpListSessions is list_sessions.
	OpListSessions = endpoint[ListSessionsInput, SessionList]("list_sessions", "GET", "/v1/sessions")
	// OpRevokeSession is revoke_session.
	OpRevokeSession = endpoint[SessionInput, struct{}]("revoke_session", "DELETE", "/v1/sessions/{id}")
	// OpCheckStored is check_stored.
	OpCheckStored = endpoint[CheckStoredInput, StoredCheck]("check_stored", "GET", "/v1/stored/check")
)

// The endpoints that are not request/response, served by the hub's own
// handlers.
var (
	// StreamMetrics is GET /metrics (Prometheus).
	StreamMetrics = Route{Name: "metrics", Method: "GET", Path: "/metrics"}
	// StreamEvents is GET /v1/events (Server-Sent Events).
	StreamEvents = Route{Name: "events", Method: "GET", Path: "/v1/events"}
	// StreamOpenAPI is GET /v1/openapi.json, the OpenAPI contract of the operations.
	StreamOpenAPI = Route{Name: "openapi", Method: "GET", Path: "/v1/openapi.json"}
)

// Operations returns every request/response operation, in table order.
func Operations() []Operation {
	return []Operation{
		OpListProcesses,
		OpProcessStatus,
		OpRequestProcessStop,
		OpReportProcess,
		OpCreateTask,
		OpListTasks,
		OpCountTasks,
		OpTaskStats,
		OpListUnclaimedTypes,
		OpGetTask,
		OpAnswerTask,
		OpCancelTask,
		OpStopTask,
		OpStartTask,
		OpRetryTask,
		OpUpdateTask,
		OpBulkStopTasks,
		OpBulkStartTasks,
		OpBulkCancelTasks,
		OpBulkRetryTasks,
		OpClaimTasks,
		OpMarkRunning,
		OpTouchTask,
		OpAddEvidence,
		OpAppendOutput,
		OpGetOutput,
		OpRecordDecision,
		OpReuseWorkspace,
		OpReportUsage,
		OpConfirmAbort,
		OpCompleteTask,
		OpFailTask,
		OpRequestInput,
		OpClaimReview,
		OpApproveReview,
		OpRejectReview,
		OpListAgents,
		OpAgentStatus,
		OpStartAgent,
		OpStopAgent,
		OpPauseType,
		OpResumeType,
		OpListPausedTypes,
		OpSetLimit,
		OpListLimits,
		OpDeleteLimit,
		OpGetUsage,
		OpCreateSchedule,
		OpListSchedules,
		OpGetSchedule,
		OpPauseSchedule,
		OpResumeSchedule,
		OpTriggerSchedule,
		OpDeleteSchedule,
		OpSubmitResearch,
		OpListObjects,
		OpGetObject,
		OpListObjectVersions,
		OpWriteObjectVersion,
		OpCreateToken,
		OpListTokens,
		OpRevokeToken,
		OpListSessions,
		OpRevokeSession,
		OpCheckStored,
	}
}

// LookupOperation returns the operation named name.
func LookupOperation(name string) (Operation, bool) {
	for _, op := range Operations() {
		if op.Route().Name == name {
			return op, true
		}
	}
	return nil, false
}

// Request is how a call of op with input in travels over HTTP: the method,
// the path (with the path fields of in filled in and, for GET and DELETE,
// the other fields as the query) and the JSON body (nil when there is
// nothing to send). in is a pointer to op's input type, or any value that
// encodes as the same JSON object (a json.RawMessage, a map). A client calls
// any operation with it; the hub reads the request back into the same input
// (package ops, HTTPInput). Path and query values of a typed input are sent as
// they are, bytes and all, so the hub judges them (JSON would have replaced
// invalid UTF-8).
func Request(op Operation, in any) (method, path string, body []byte, err error) {
	sp := op.Route()
	if sp.Method == "" || sp.Path == "" {
		return "", "", nil, fmt.Errorf("operation %s has no HTTP route", sp.Name)
	}
	raw, err := json.Marshal(in)
	if err != nil {
		return "", "", nil, fmt.Errorf("encode the input of %s: %w", sp.Name, err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return "", "", nil, fmt.Errorf("the input of %s is not a JSON object", sp.Name)
	}
	typed := reflect.TypeOf(in) == reflect.TypeOf(op.NewInput())
	texts := func(name string) []string {
		if typed {
			return fieldTexts(InputField(in, name))
		}
		return jsonTexts(m[name])
	}
	path = sp.Path
	for _, name := range Wildcards(sp.Path) {
		v := texts(name)
		if _, ok := m[name]; !ok || len(v) != 1 {
			return "", "", nil, &FieldError{Field: name, Expected: "a string or number for the path of " + sp.Name}
		}
		path = strings.Replace(path, "{"+name+"}", url.PathEscape(v[0]), 1)
		delete(m, name)
	}
	if sp.Bodyless() {
		q := url.Values{}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			for _, v := range texts(k) {
				q.Add(k, v)
			}
		}
		if len(q) > 0 {
			path += "?" + q.Encode()
		}
		return sp.Method, path, nil, nil
	}
	if len(m) > 0 {
		if body, err = json.Marshal(m); err != nil {
			return "", "", nil, err
		}
	}
	return sp.Method, path, body, nil
}

// fieldTexts is a field's value as path or query text (none when unset).
func fieldTexts(f reflect.Value) []string {
	switch f.Kind() {
	case reflect.String:
		return []string{f.String()}
	case reflect.Int, reflect.Int64:
		return []string{strconv.FormatInt(f.Int(), 10)}
	case reflect.Float64:
		return []string{strconv.FormatFloat(f.Float(), 'g', -1, 64)}
	case reflect.Bool:
		return []string{strconv.FormatBool(f.Bool())}
	case reflect.Pointer: // an optional value (list_processes' alive): unset when nil
		if f.IsNil() {
			return nil
		}
		return fieldTexts(f.Elem())
	case reflect.Slice:
		if f.Type().Elem().Kind() == reflect.String {
			return f.Convert(reflect.TypeFor[[]string]()).Interface().([]string)
		}
	}
	return nil
}

// jsonTexts is a JSON value as path or query text: a scalar's text, or an
// array's items'.
func jsonTexts(v json.RawMessage) []string {
	var list []json.RawMessage
	if json.Unmarshal(v, &list) == nil {
		var out []string
		for _, item := range list {
			if t, err := scalarText(item); err == nil {
				out = append(out, t)
			}
		}
		return out
	}
	if t, err := scalarText(v); err == nil {
		return []string{t}
	}
	return nil
}

// scalarText is a JSON string's content, or a number's or boolean's text.
func scalarText(v json.RawMessage) (string, error) {
	var s string
	if json.Unmarshal(v, &s) == nil {
		return s, nil
	}
	t := strings.TrimSpace(string(v))
	if t == "" || t[0] == '{' || t[0] == '[' || t == "null" {
		return "", errors.New("not a scalar")
	}
	return t, nil
}

// Wildcards returns the names of the {wildcards} of a ServeMux pattern, a
// path or a resource template ("{path...}" names path).
func Wildcards(pattern string) []string {
	var out []string
	for rest := pattern; ; {
		i := strings.IndexByte(rest, '{')
		if i < 0 {
			return out
		}
		j := strings.IndexByte(rest[i:], '}')
		if j < 0 {
			return out
		}
		out = append(out, strings.TrimSuffix(rest[i+1:i+j], "..."))
		rest = rest[i+j+1:]
	}
}

// InputFields maps the JSON names of the fields of an input type t (a
// struct; embedded structs' promoted fields included) to their indexes
// (reflect.Value.FieldByIndex): the names by which path wildcards, query
// parameters and body keys address an input.
func InputFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	if t.Kind() != reflect.Struct {
		return out
	}
	for _, f := range reflect.VisibleFields(t) {
		if !f.IsExported() || f.Anonymous {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Index
	}
	return out
}

// InputField returns the field of *in, a pointer to an input struct, with
// JSON name name (InputFields); it panics when there is none, a mistake in
// the route table rather than in a request.
func InputField(in any, name string) reflect.Value {
	v := reflect.ValueOf(in).Elem()
	idx, ok := InputFields(v.Type())[name]
	if !ok {
		panic(fmt.Sprintf("cks: %T has no field %q", in, name))
	}
	return v.FieldByIndex(idx)
}
