package cks

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

// The input and output of every operation of a hub that is not a record or
// view of its own: each operation's input is one JSON object, the same on
// every surface (over HTTP its path fields come from the path, the others
// from the query or the body; see Request), named for the operation
// (StopTaskInput is the input of stop_task) or, when several operations
// share it, for what it names (TaskInput, LeaseInput).

// The bounds of the lists of the inputs. The hub counts a list's items
// before it decodes them and refuses a longer list naming its field
// (package ops), and the input schemas state each bound as maxItems.
const (
	// MaxNames bounds a list of names: states, types, kinds, statuses.
	MaxNames = 100
	// MaxDependsOn bounds a task's depends_on, and an edit's
	// add_depends_on and remove_depends_on.
	MaxDependsOn = 1000
	// MaxAddChildren bounds the children one update_task creates.
	MaxAddChildren = 100
	// MaxCancelChildren bounds the children one update_task cancels.
	MaxCancelChildren = 500
	// MaxGrants bounds the grants of one create_token.
	MaxGrants = 100
)

// The operator operations of the task ledger (ADR 0020).

// TaskInput names a task.
type TaskInput struct {
	TaskID int64 `json:"task_id" jsonschema:"the task's id"`
}

// ListTasksInput is the input of list_tasks (over HTTP, the query of GET
// /v1/tasks: a list may repeat its parameter or separate items by commas).
type ListTasksInput struct {
	State Names `json:"state,omitempty" jsonschema:"only tasks in any of these states (OPEN, WAITING, BLOCKED, CLAIMED, RUNNING, NEEDS_REVIEW, NEEDS_INPUT, REVIEWING, COMPLETED, FAILED, CANCELLED, STOPPED): one, or a list"`
	Type  Names `json:"type,omitempty" jsonschema:"only tasks of any of these types: one, or a list"`
	// Cursor and Limit page the list.
	Cursor int64 `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page: list the tasks after that task in the sort's order (by id: task_id greater than this)"`
	Limit  int   `json:"limit,omitempty" jsonschema:"page size, 1 to 1000 (default 100)"`
	// StoppedLongerThan selects the STOPPED tasks whose state has not
	// changed for at least this long, relative to now.
	StoppedLongerThan Duration `json:"stopped_longer_than,omitempty" jsonschema:"a duration such as 24h: only STOPPED tasks held at least that long (no state filter with it)"`
	// Order is how the page is ordered (package ledger, ListInOrder).
	Order TaskOrder `json:"order,omitempty" jsonschema:"id (the default): by task_id, oldest first; stopped_first: every STOPPED task (up to 1000), longest held first, heads the first page, then a page of the tasks in every other state (no state filter or stopped_longer_than with it)"`
	TaskMatch
	// Sort and CursorKey: the sort of the page (of the tasks after the
	// STOPPED head in order stopped_first) and the cursor's key.
	Sort      TaskSort `json:"sort,omitempty" jsonschema:"the order of the page: id (the default, oldest first), -id (newest first), updated, -updated (last changed first) or priority (highest first)"`
	CursorKey string   `json:"cursor_key,omitempty" jsonschema:"with sort updated, -updated or priority: the next_key of the previous page, with its next_cursor as cursor"`
	// ParentID keeps the children of that task: how a parent's children
	// are paged (a task view names at most MaxChildIDs of them).
	ParentID int64 `json:"parent_id,omitempty" jsonschema:"only the children of this task (get_task names at most 100 of them, under child_ids, and counts them all)"`
}

// TaskMatch are the filters of list_tasks and a bulk selection beyond state
// and type: text, creator, an abort not confirmed.
type TaskMatch struct {
	Q                string `json:"q,omitempty" jsonschema:"only tasks whose title, description or acceptance criteria contain this text (letters of any script in either case: each character lower-cased, final sigma as σ; at most 200 bytes)"`
	CreatedBy        string `json:"created_by,omitempty" jsonschema:"only tasks created by this principal"`
	UnconfirmedAbort bool   `json:"unconfirmed_abort,omitempty" jsonschema:"only tasks whose latest abort request is not confirmed (pending or unconfirmed: the old executor may still be working)"`
}

// Set reports whether m filters at all.
func (m TaskMatch) Set() bool { return m.Q != "" || m.CreatedBy != "" || m.UnconfirmedAbort }

// TaskOrder is the order of a list_tasks page.
type TaskOrder string

// The orders of list_tasks.
const (
	// TaskOrderByID lists tasks by task_id, oldest first (the default).
	TaskOrderByID TaskOrder = "id"
	// TaskOrderStoppedFirst heads the first page with the STOPPED tasks,
	// longest held first, before a page of the others: the operator's
	// view of the ledger (ADR 0020: the holds nothing runs until someone
	// starts them, first and prominently).
	TaskOrderStoppedFirst TaskOrder = "stopped_first"
)

// Names is a list of names (states, types, kinds) that a caller may also
// send as one name, as a person or a model naturally does: the JSON "OPEN"
// reads as ["OPEN"], and "" as no name at all. Anything else that is not
// a list of strings is a type error naming the field.
type Names []string

// UnmarshalJSON implements json.Unmarshaler.
func (n *Names) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		if *n = nil; one != "" {
			*n = Names{one}
		}
		return nil
	}
	var list []string
	if err := json.Unmarshal(b, &list); err != nil {
		return &json.UnmarshalTypeError{Value: "value", Type: reflect.TypeFor[[]string]()}
	}
	*n = list
	return nil
}

// Duration is a Go duration written as text ("30s", "2m", "24h"): the type
// of an input field that holds one, so that a surface reading the field
// from text (the CLI's flags) reads it as a duration. The operation parses
// it and refuses one that does not parse, naming the field.
type Duration string

// ListTasksInputOf is the input of list_tasks that selects what f does
// (its states, types, cursor and limit).
func ListTasksInputOf(f TaskFilter) ListTasksInput {
	in := ListTasksInput{Type: f.Types, Cursor: f.After, Limit: f.Limit, Sort: f.Sort, CursorKey: f.AfterKey, ParentID: f.Parent,
		TaskMatch: TaskMatch{Q: f.Text, CreatedBy: f.CreatedBy, UnconfirmedAbort: f.UnconfirmedAbort}}
	for _, st := range f.States {
		in.State = append(in.State, string(st))
	}
	return in
}

// CountTasksInput is the input of count_tasks: list_tasks' filter without
// its paging.
type CountTasksInput struct {
	State Names `json:"state,omitempty" jsonschema:"count only tasks in any of these states (OPEN, WAITING, BLOCKED, CLAIMED, RUNNING, NEEDS_REVIEW, NEEDS_INPUT, REVIEWING, COMPLETED, FAILED, CANCELLED, STOPPED): one, or a list"`
	Type  Names `json:"type,omitempty" jsonschema:"count only tasks of any of these types: one, or a list"`
	// StoppedLongerThan counts the STOPPED tasks whose state has not
	// changed for at least this long, relative to now.
	StoppedLongerThan Duration `json:"stopped_longer_than,omitempty" jsonschema:"a duration such as 24h: count only STOPPED tasks held at least that long (no state filter with it)"`
	TaskMatch
}

// ListTasksInput is list_tasks' input with the same filter, from its
// first page.
func (in CountTasksInput) ListTasksInput() ListTasksInput {
	return ListTasksInput{State: in.State, Type: in.Type, StoppedLongerThan: in.StoppedLongerThan, TaskMatch: in.TaskMatch}
}

// TaskCounts is the output of count_tasks: how many tasks a filter selects,
// per state.
type TaskCounts struct {
	// Counts has every state the filter names (every state when it names
	// none), each with its count, 0 included.
	Counts map[TaskState]int `json:"counts"`
	// Total is the sum of Counts.
	Total int `json:"total"`
}

// TaskStatsInput is the input of task_stats.
type TaskStatsInput struct {
	// Minutes is the window: the last Minutes minutes up to now, the
	// current one included (DefaultStatsMinutes when 0, at most
	// MaxStatsMinutes).
	Minutes int `json:"minutes,omitempty" jsonschema:"the window in minutes, up to now (60 when 0 or absent, at most 10080: 7 days)"`
	// StepMinutes is how many minutes each entry of the answer sums (1
	// when 0): the window in steps, at most MaxStatsSteps of them.
	StepMinutes int `json:"step_minutes,omitempty" jsonschema:"the minutes each entry sums (1 when 0 or absent); minutes / step_minutes at most 1440"`
}

// The window of task_stats: up to 7 days, in at most 1,440 steps (a day
// by the minute, a week by the 7 minutes or coarser), so an answer stays
// the size of a day's minutes whatever the window.
const (
	DefaultStatsMinutes = 60
	MaxStatsMinutes     = 7 * 24 * 60
	MaxStatsSteps       = 24 * 60
)

// TaskStats is the output of task_stats: the task ledger's throughput,
// queue depth and claim latency per minute, from its events.
type TaskStats struct {
	// Since is the start of the first step, Until the time of the read
	// (inside the last step).
	Since time.Time `json:"since"`
	Until time.Time `json:"until"`
	// StepMinutes is how many minutes each entry of Minutes sums.
	StepMinutes int `json:"step_minutes"`
	// Minutes are the window's steps (its minutes unless StepMinutes
	// says otherwise), oldest first, every one present.
	Minutes []TaskStatsMinute `json:"minutes"`
	// ClaimsSampled is true when the window held more claims than
	// MaxStatsClaims: the latencies are those of the newest ones.
	ClaimsSampled bool `json:"claims_sampled,omitempty"`
}

// MaxStatsClaims is how many claims task_stats reads for the latencies.
const MaxStatsClaims = 10000

// TaskStatsMinute is one step of TaskStats: a minute, or StepMinutes of them.
type TaskStatsMinute struct {
	// At is the minute's start.
	At time.Time `json:"at"`
	// Completed and Failed count the tasks that reached COMPLETED or
	// FAILED in the minute.
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// Depth is how many tasks were in each unfinished state at the end of
	// the minute (at Until for the last one), every unfinished state
	// present.
	Depth map[TaskState]int `json:"depth"`
	// Claims counts the claims of the minute; ClaimLatencyP50MS and P95MS
	// are the median and 95th percentile of their wait, from the time the
	// task last became OPEN to its claim (null without claims).
	Claims            int      `json:"claims"`
	ClaimLatencyP50MS *float64 `json:"claim_latency_p50_ms"`
	ClaimLatencyP95MS *float64 `json:"claim_latency_p95_ms"`
}

// CreatedTask is the output of create_task.
type CreatedTask struct {
	Task Task `json:"task"`
	// Created is false when the dedupe key matched a live task, which is
	// returned (to a caller that may read it; see ops.ErrDedupeUnreadable).
	Created bool `json:"created"`
}

// AnswerTaskInput is the input of answer_task.
type AnswerTaskInput struct {
	TaskID int64  `json:"task_id" jsonschema:"the NEEDS_INPUT task"`
	Text   string `json:"text" jsonschema:"the answer to the task's question"`
}

// TaskReasonInput is the input of cancel_task, start_task and retry_task: a
// task and why.
type TaskReasonInput struct {
	TaskID int64  `json:"task_id" jsonschema:"the task"`
	Reason string `json:"reason,omitempty" jsonschema:"why, recorded in the task's events"`
}

// AbortWait is how a stop or an update of a running task waits for its
// executor to confirm the abort: the same two fields on every surface.
type AbortWait struct {
	// Deadline is a Go duration such as "30s", from 1ms to 10m; empty for
	// DefaultAbortDeadline.
	Deadline Duration `json:"deadline,omitempty" jsonschema:"how long to wait for the executor of a CLAIMED or RUNNING task to confirm its abort: a duration such as 30s or 2m, from 1ms to 10m (empty for 30s)"`
	// Wait, default true, makes the call wait up to Deadline for the
	// confirmation; false answers at once with the abort abort_pending.
	Wait *bool `json:"wait,omitempty" jsonschema:"wait up to the deadline for the executor's confirmation (default true); false answers at once with the abort pending"`
	// parsed says Check read Deadline into deadline.
	parsed   bool
	deadline time.Duration
}

// Check parses the deadline and checks its range (ValidateDeadline) once,
// keeping what it read for Parse and MaxWait: the call's one reading of
// it (package ops checks every input before its call).
func (a *AbortWait) Check() error {
	d, _, err := a.Parse()
	if err != nil {
		return err
	}
	if _, err := ValidateDeadline(d); err != nil {
		return err
	}
	a.parsed, a.deadline = true, d
	return nil
}

// Parse reads the deadline (0 when empty: the ledger's default) and wait.
func (a AbortWait) Parse() (time.Duration, bool, error) {
	wait := a.Wait == nil || *a.Wait
	if a.parsed {
		return a.deadline, wait, nil
	}
	if a.Deadline == "" {
		return 0, wait, nil
	}
	// As written: " 30s" is not a duration on the command line or in Go.
	dur, err := time.ParseDuration(string(a.Deadline))
	if err != nil {
		return 0, wait, &FieldError{Field: "deadline",
			Expected: fmt.Sprintf("a duration such as 30s or 2m (empty for the default %s), got %q", DefaultAbortDeadline, a.Deadline)}
	}
	return dur, wait, nil
}

// MaxWait is how long a call with a may wait: its deadline when it waits.
func (a AbortWait) MaxWait() time.Duration {
	d, wait, err := a.Parse()
	if err != nil || !wait {
		return 0
	}
	if d, err = ValidateDeadline(d); err != nil {
		return 0
	}
	return d
}

// StopTaskInput is the input of stop_task.
type StopTaskInput struct {
	TaskID int64 `json:"task_id" jsonschema:"the task to stop"`
	// Reason is required; it is recorded in the task's events and abort.
	Reason string `json:"reason" jsonschema:"why the task is held, recorded in its events and in the abort request (required)"`
	AbortWait
}

// UpdateTaskInput is the input of update_task: the task, the fields of
// TaskPatch, and the abort wait of a running task's stop → apply →
// start.
type UpdateTaskInput struct {
	TaskID int64 `json:"task_id" jsonschema:"the task to update"`
	TaskPatch
	AbortWait
}

// TaskSelection selects the tasks of a bulk operation (bulk_stop_tasks,
// bulk_start_tasks, bulk_cancel_tasks, bulk_retry_tasks): the tasks
// TaskIDs names, or, instead, those list_tasks' filter (State, Type,
// StoppedLongerThan, TaskMatch) selects, a page at a time from Cursor (at most Limit
// of them; the answer's next_cursor goes on).
type TaskSelection struct {
	TaskIDs []int64 `json:"task_ids,omitempty" jsonschema:"the tasks to act on (at most 500); or, instead, a filter (state, type, stopped_longer_than, q, created_by, unconfirmed_abort)"`
	State   Names   `json:"state,omitempty" jsonschema:"act on the tasks in any of these states (OPEN, WAITING, BLOCKED, CLAIMED, RUNNING, NEEDS_REVIEW, NEEDS_INPUT, REVIEWING, COMPLETED, FAILED, CANCELLED, STOPPED): one, or a list"`
	Type    Names   `json:"type,omitempty" jsonschema:"act on the tasks of any of these types: one, or a list"`
	// StoppedLongerThan selects the STOPPED tasks held at least this long.
	StoppedLongerThan Duration `json:"stopped_longer_than,omitempty" jsonschema:"a duration such as 24h: act on the STOPPED tasks held at least that long (no state filter with it)"`
	TaskMatch
	Cursor int64 `json:"cursor,omitempty" jsonschema:"with a filter: act on tasks with task_id greater than this (the next_cursor of the previous call)"`
	Limit  int   `json:"limit,omitempty" jsonschema:"with a filter: act on at most this many tasks, 1 to 500 (default 500)"`
}

// Filtered reports whether s selects by a filter rather than by ids.
func (s TaskSelection) Filtered() bool {
	return len(s.State) > 0 || len(s.Type) > 0 || s.StoppedLongerThan != "" || s.TaskMatch.Set() || s.Cursor != 0 || s.Limit != 0
}

// ListTasksInput is list_tasks' input with s's filter, from s's cursor (its
// limit is the bulk operation's own).
func (s TaskSelection) ListTasksInput() ListTasksInput {
	return ListTasksInput{State: s.State, Type: s.Type, StoppedLongerThan: s.StoppedLongerThan, TaskMatch: s.TaskMatch, Cursor: s.Cursor}
}

// BulkTasksInput is the input of bulk_start_tasks, bulk_cancel_tasks and
// bulk_retry_tasks: the tasks and why.
type BulkTasksInput struct {
	TaskSelection
	Reason string `json:"reason,omitempty" jsonschema:"why, recorded in each task's events"`
}

// BulkStopTasksInput is the input of bulk_stop_tasks: the tasks, why, and
// how the stop waits for the executors of the running ones to confirm
// their aborts (one deadline for them all).
type BulkStopTasksInput struct {
	TaskSelection
	// Reason is required; it is recorded in each task's events and abort.
	Reason string `json:"reason" jsonschema:"why the tasks are held, recorded in their events and abort requests (required)"`
	AbortWait
}

// The executor operations: a claim hands back a lease token per task, and
// every other call of that lease carries it (LeaseInput).

// ClaimTasksInput is the input of claim_tasks.
type ClaimTasksInput struct {
	// Worker names the executor instance; default the caller's name.
	Worker string `json:"worker,omitempty" jsonschema:"the executor instance (default the caller's name)"`
	Types  Names  `json:"types,omitempty" jsonschema:"task types to lease, one or a list; none leases tasks of any type"`
	// N is how many tasks to lease at most (default 1).
	N int `json:"n,omitempty" jsonschema:"how many tasks to lease at most (default 1)"`
	// LeaseS is the lease in seconds (default the hub's default lease,
	// CKS_STALE_WINDOW: 300 unless set).
	LeaseS float64 `json:"lease_s,omitempty" jsonschema:"the lease in seconds, 1 to 86400 (default the hub's CKS_STALE_WINDOW, 300 unless set); lost once it runs out unrenewed"`
	// Running claims each task straight into RUNNING, as mark_running right
	// after the claim would (its start is the claim's instant): one request
	// and one commit less for an executor that starts the work at once.
	Running bool `json:"running,omitempty" jsonschema:"claim each task straight into RUNNING, as mark_running right after the claim would: then skip mark_running"`
	// WaitS is the long poll: with nothing to claim, the call is held up
	// to this many seconds (at most 60) and answers the moment a task of
	// the types becomes claimable, or empty at the end.
	WaitS float64 `json:"wait_s,omitempty" jsonschema:"with nothing to claim, hold the call up to this many seconds (0 to 60; default 0, answer at once) and claim the moment a task of the types becomes claimable; empty tasks at the end"`
	// InstanceID names the process the claim is for, one this caller
	// reports (report_process): once it is asked to stop, a claim takes
	// nothing and a waiting claim ends at once, with StopRequested.
	InstanceID string `json:"instance_id,omitempty" jsonschema:"the process this claim is for, as this caller reports it (report_process): once the process is asked to stop (cks process stop), the claim takes nothing and a waiting claim ends at once, with stop_requested"`
}

// MaxWait implements Waiter: a claim may be held for its wait_s.
func (in ClaimTasksInput) MaxWait() time.Duration {
	if !(in.WaitS > 0 && in.WaitS <= 60) {
		return 0
	}
	return time.Duration(in.WaitS * float64(time.Second))
}

// ClaimedTasks is the output of claim_tasks: the only answer that carries
// lease tokens (each task's lease_token, for the claimer).
type ClaimedTasks struct {
	Tasks []ClaimedTask `json:"tasks"`
	// AgentTokens maps each claimed task's id (as a decimal string) to a
	// task-scoped agent credential (read, append, create on /tasks/ID) for
	// the executor to work that task with, bound to the task's new lease (it
	// stops authenticating when the lease ends). Every claimed task has
	// one ("ckt_ID_…"); issuing it costs the claim no write of its own.
	AgentTokens map[string]string `json:"agent_tokens"`
	// StopRequested: the claim's process (InstanceID) was asked to stop, so
	// the claim took nothing; the process drains and exits.
	StopRequested bool `json:"stop_requested,omitempty"`
}

// LeaseInput names a leased task and the lease: the input of the executor
// calls that carry only the lease token, and the head of every other
// executor call's input (each carries the lease it works under).
type LeaseInput struct {
	TaskID     int64  `json:"task_id" jsonschema:"the leased task"`
	LeaseToken string `json:"lease_token" jsonschema:"the lease token its claim (or review claim) answered"`
}

// TouchResult is the output of touch_task: whether the lease is still held
// (the seed's touch convention: a lost lease is an answer, not an error)
// and, when it is not, whether that is an abort the executor must confirm.
type TouchResult struct {
	Held bool `json:"held" jsonschema:"the lease is still this caller's: go on working"`
	// AbortRequested: the lease was revoked by an operator's stop, update
	// or cancel that waits for this attempt to stop (confirm_abort with
	// the same lease token). False with held false: the lease ended some
	// other way (it expired, the task finished), nothing to confirm.
	AbortRequested bool `json:"abort_requested" jsonschema:"with held false: an operator stopped the attempt; stop working and call confirm_abort with the same lease token"`
}

// AddEvidenceInput is the input of add_evidence.
type AddEvidenceInput struct {
	LeaseInput
	Kind string `json:"kind" jsonschema:"what the evidence is (workspace: the attempt's workspace path)"`
	Body string `json:"body" jsonschema:"the evidence"`
}

// RecordDecisionInput is the input of record_decision.
type RecordDecisionInput struct {
	LeaseInput
	Kind string `json:"kind" jsonschema:"what was decided"`
	Text string `json:"text,omitempty" jsonschema:"the decision"`
	// DerivedFromRevision is the task revision the decision was made from
	// (the revision of the task as the executor read it at claim).
	DerivedFromRevision int `json:"derived_from_revision" jsonschema:"the task revision the decision was made from"`
}

// ReuseWorkspaceInput is the input of reuse_workspace.
type ReuseWorkspaceInput struct {
	LeaseInput
	// Path is a workspace recorded by an earlier attempt of the task.
	Path                string `json:"path" jsonschema:"a workspace recorded by an earlier attempt of the task"`
	DerivedFromRevision int    `json:"derived_from_revision" jsonschema:"the task revision the decision was made from"`
}

// CompleteTaskInput is the input of complete_task.
type CompleteTaskInput struct {
	LeaseInput
	NeedsReview bool   `json:"needs_review,omitempty" jsonschema:"hand the result to a reviewer (NEEDS_REVIEW) instead of completing"`
	Result      string `json:"result,omitempty" jsonschema:"what the attempt produced"`
}

// FailTaskInput is the input of fail_task.
type FailTaskInput struct {
	LeaseInput
	Retryable bool   `json:"retryable,omitempty" jsonschema:"retry the task (OPEN again, after a backoff) while attempts remain"`
	Reason    string `json:"reason,omitempty" jsonschema:"why it failed"`
}

// QuestionInput is the input of request_input.
type QuestionInput struct {
	LeaseInput
	Question string `json:"question" jsonschema:"what a person must answer"`
}

// ClaimReviewInput is the input of claim_review.
type ClaimReviewInput struct {
	TaskID   int64   `json:"task_id" jsonschema:"the NEEDS_REVIEW task"`
	Reviewer string  `json:"reviewer,omitempty" jsonschema:"who reviews (default the caller's name)"`
	LeaseS   float64 `json:"lease_s,omitempty" jsonschema:"the review lease in seconds, 1 to 86400 (default the hub's CKS_STALE_WINDOW, 300 unless set)"`
}

// ReviewInput is the input of approve_review and reject_review.
type ReviewInput struct {
	LeaseInput
	Note string `json:"note,omitempty" jsonschema:"the reviewer's note"`
}

// The process operations (ADR-014 §4, ADR-016).

// ProcessList is the output of list_processes.
type ProcessList struct {
	Processes []Process `json:"processes"`
	// Next is the cursor of the following page, empty on the last.
	Next string `json:"next_cursor,omitempty"`
}

// ProcessInput names a process: a kind (its newest instance) or, where an
// operation says so, an instance id.
type ProcessInput struct {
	ProcessKind string `json:"process_kind" jsonschema:"the kind of standalone agent process, for example critic or pipeline (the description lists the known kinds)"`
}

// ReportProcessInput is the input of report_process: one heartbeat of a
// process that reports its liveness over the API (any language, any
// host) rather than on the database, as liveness.Reporter does.
type ReportProcessInput struct {
	ProcessKind string `json:"process_kind" jsonschema:"the process's kind, for example summarizer: letters, digits and _ - . : (from a letter or digit, at most 100 bytes); process_status and request_process_stop name it"`
	InstanceID  string `json:"instance_id" jsonschema:"the id of this run of the process, made once at its start (a random UUID) and sent with every report; a new run takes a new id"`
	Hostname    string `json:"hostname,omitempty" jsonschema:"the host the process runs on (default: unknown)"`
	PID         int    `json:"pid,omitempty" jsonschema:"its operating-system process id on that host (default 1)"`
	// LivenessIntervalS is how often the process reports; it reads
	// stopped after three intervals without one.
	LivenessIntervalS float64 `json:"liveness_interval_s,omitempty" jsonschema:"seconds between this process's reports, 1 to 3600 (default 30); it reads stopped once three intervals pass without one"`
	CurrentTaskID     int64   `json:"current_task_id,omitempty" jsonschema:"the task the process works on now; absent when idle"`
	CurrentTaskType   string  `json:"current_task_type,omitempty" jsonschema:"that task's type"`
	TaskTypes         Names   `json:"task_types,omitempty" jsonschema:"the task types the process claims, shown on its card and counted as claimed by list_unclaimed_types"`
	// Exited is the last report of a process that exits: its row reads
	// stopped at once and takes no report after it.
	Exited bool `json:"exited,omitempty" jsonschema:"true in the last report of a process that exits cleanly: it reads stopped at once, and the instance takes no report after it"`
}

// The sweeper operations (ADR-015).

// SweeperList is the output of list_agents.
type SweeperList struct {
	Sweepers []SweeperStatus `json:"sweepers"`
}

// SweeperInput names a sweeper.
type SweeperInput struct {
	AgentID string `json:"agent_id" jsonschema:"the sweeper id, e.g. lease_reaper; list_agents lists them"`
}

// The knowledge-store operations (ADR-007).

// SubmitResearchInput is the input of submit_research: a question for the
// research pipeline.
type SubmitResearchInput struct {
	Question string `json:"question" jsonschema:"the question to research, 1 to 2000 bytes"`
	// Corpus, optional, is a directory (an absolute path on the host the
	// pipeline runs on) the Researcher reads instead of its default corpus.
	Corpus string `json:"corpus,omitempty" jsonschema:"optional: an absolute path, on the host the pipeline runs on, of a directory of .md and .txt files to research instead of the pipeline's default corpus"`
}

// ObjectInput names an object.
type ObjectInput struct {
	ObjectID int64 `json:"object_id" jsonschema:"the object's id"`
}

// ObjectView is the output of get_object: the object with its transition
// log and edges, and under "reasoning" every object at the other end of one
// of its edges, each with its own log and edges — for a question, its
// claims, critiques, syntheses, rationales and unusable model replies — so
// one call shows the whole chain. Reasoning is ordered by object id
// (creation order). Heads are the object's head versions (knowledge.Service),
// ascending; Forked is true when there is more than one (the fork_detection
// sweeper then enqueues a resolve_fork task).
type ObjectView struct {
	Object
	Heads []Version `json:"heads"`
	// Forked shadows Object.Forked so that the body always says it.
	Forked    bool     `json:"forked"`
	Reasoning []Object `json:"reasoning"`
}

// ListObjectsInput is the input of list_objects (over HTTP, the query of GET
// /v1/objects).
type ListObjectsInput struct {
	Status Names  `json:"status,omitempty" jsonschema:"only objects in any of these statuses: one, or a list"`
	Kind   Names  `json:"kind,omitempty" jsonschema:"only objects of any of these kinds (question, claim, synthesis, critique, rationale, model_reply): one, or a list"`
	Q      string `json:"q,omitempty" jsonschema:"only objects whose title or content contains this text (letters of any script in either case: each character lower-cased, final sigma as σ), at most 200 bytes"`
	Cursor int64  `json:"cursor,omitempty" jsonschema:"list objects with object_id greater than this (the next_cursor of the previous page)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"page size, 1 to 1000 (default 100)"`
}

// ObjectFilter turns in into the store's filter.
func (in ListObjectsInput) ObjectFilter() (ObjectFilter, error) {
	return ObjectFilter{Statuses: in.Status, Kinds: in.Kind, Text: in.Q, After: in.Cursor, Limit: in.Limit}.Validate()
}

// VersionList is the output of list_object_versions: every version of the
// object, ascending by number (each names its parents, so the list is the
// version DAG), and the numbers of its heads. Versions are numbered per
// object (Version).
type VersionList struct {
	ObjectID int64     `json:"object_id"`
	Versions []Version `json:"versions"`
	Heads    []int64   `json:"heads"`
	Forked   bool      `json:"forked"`
}

// WriteVersionInput is the input of write_object_version: the new content
// (a JSON object) and the number of the version it was written from. A
// base that is no longer a head makes a fork.
type WriteVersionInput struct {
	ObjectID    int64           `json:"object_id" jsonschema:"the object to write"`
	BaseVersion int64           `json:"base_version" jsonschema:"the number of the version the content was written from; one that is no longer a head makes a fork"`
	Content     json.RawMessage `json:"content" jsonschema:"the new content, a JSON object"`
}

// Token management: bearer tokens of principals and their grants.

// CreateTokenInput is the input of create_token.
type CreateTokenInput struct {
	// Name labels the principal (default "task/ID" with TaskID, else required).
	Name string `json:"name,omitempty" jsonschema:"the principal's name (default task/ID with task_id, else required)"`
	// Grants are PERMISSION on RESOURCE pairs (auth.ValidGrant).
	Grants []Grant `json:"grants,omitempty" jsonschema:"permissions on nodes of the resource tree"`
	// TaskID, when set, adds the grants of a task-scoped agent credential
	// for that task (read, append, create on /tasks/ID); the task must exist.
	TaskID int64 `json:"task_id,omitempty" jsonschema:"make a task-scoped agent credential of this task: read, append, create on /tasks/ID"`
}

// CreatedToken is the output of create_token. Token is shown this once:
// only its hash is stored.
type CreatedToken struct {
	PrincipalGrants
	Token string `json:"token"`
}

// TokenList is the output of list_tokens: every principal with its grants
// (never a token or its hash).
type TokenList struct {
	Tokens []PrincipalGrants `json:"tokens"`
}

// TokenInput names a principal.
type TokenInput struct {
	ID string `json:"id" jsonschema:"the principal's id (list_tokens lists them)"`
}

// ListSessionsInput is the input of list_sessions: a page of the studio
// sessions, newest first.
type ListSessionsInput struct {
	Cursor string `json:"cursor,omitempty" jsonschema:"the next_cursor of the previous page (empty for the first)"`
	Limit  int    `json:"limit,omitempty" jsonschema:"page size, 1 to 1000 (default 100)"`
}

// SessionList is the output of list_sessions: a page of the studio
// sessions, newest first (never a secret or its hash), with how many there
// are in all.
type SessionList struct {
	Sessions []Session `json:"sessions"`
	// Total is the number of sessions, on every page.
	Total int `json:"total"`
	// Next is the cursor of the following page, empty on the last.
	Next string `json:"next_cursor,omitempty"`
}

// SessionInput names a studio session.
type SessionInput struct {
	ID string `json:"id" jsonschema:"the session's id (list_sessions lists them)"`
}

// UnclaimedTypesInput is the input of list_unclaimed_types.
type UnclaimedTypesInput struct {
	// AfterS is how long a type's tasks must have waited unclaimed
	// (DefaultUnclaimedAfter when 0).
	AfterS float64 `json:"after_s,omitempty" jsonschema:"how long, in seconds, a type's oldest due OPEN task must have waited (60 when absent)"`
}

// Bounds of list_unclaimed_types.
const (
	// DefaultUnclaimedAfter is how long a type's tasks wait before the type
	// counts as unclaimed when the input says nothing.
	DefaultUnclaimedAfter = time.Minute
	// MaxUnclaimedTypes bounds the types of an answer (the longest-waiting
	// first; Total counts them all).
	MaxUnclaimedTypes = 100
)

// UnclaimedType is a task type no worker claims: it has OPEN tasks due
// for longer than the input's after_s, no task of it is CLAIMED or
// RUNNING, and no live process names it among the types it claims.
type UnclaimedType struct {
	Type string `json:"type"`
	// Waiting counts its due OPEN tasks.
	Waiting int `json:"waiting"`
	// Since is when the longest-waiting of them became OPEN.
	Since time.Time `json:"waiting_since"`
}

// UnclaimedTypes is the output of list_unclaimed_types.
type UnclaimedTypes struct {
	// Types are the unclaimed types, longest-waiting first, at most
	// MaxUnclaimedTypes.
	Types []UnclaimedType `json:"types"`
	// Total counts every unclaimed type.
	Total int `json:"total"`
	// AfterS is the wait the answer used.
	AfterS float64 `json:"after_s"`
}
