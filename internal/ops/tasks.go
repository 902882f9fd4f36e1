package ops

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
	"github.com/cks-dev/cks/internal/service/ledger"
)

// The operator operations of the task ledger (ADR 0020): list, show, create,
// answer, cancel, and the controls stop, start, retry and update, each with
// its own permission (holding stop does not grant start, nor start retry).

// LocalActor is recorded as the actor of a change made by a caller that is
// no principal: the local operator of `cks mcp --embedded` over stdio.
const LocalActor = "mcp"

// actor names the caller in ctx for the event log: the authenticated
// principal's name, else LocalActor.
func actor(ctx context.Context) string {
	if p, ok := auth.PrincipalFrom(ctx); ok && p.Name != "" {
		return p.Name
	}
	return LocalActor
}

// taskResource is the resource template of an operation on one task.
const taskResource = auth.ResourceTasks + "/{task_id}"

// ListTasksInputOf is cks.ListTasksInputOf.
func ListTasksInputOf(f cks.TaskFilter) cks.ListTasksInput { return cks.ListTasksInputOf(f) }

// TaskFilterOf turns in, the input of list_tasks, into the store's filter
// at time now: its states checked against the ledger's, stopped_longer_than
// made a STOPPED filter relative to now.
func TaskFilterOf(in cks.ListTasksInput, now time.Time) (cks.TaskFilter, error) {
	f := cks.TaskFilter{Types: in.Type, After: in.Cursor, Limit: in.Limit, Text: in.Q, CreatedBy: in.CreatedBy,
		UnconfirmedAbort: in.UnconfirmedAbort, Sort: cks.TaskSort(strings.TrimSpace(string(in.Sort))), AfterKey: in.CursorKey,
		Parent: in.ParentID}
	if v := in.StoppedLongerThan; v != "" {
		d, err := time.ParseDuration(string(v))
		if err != nil || d < 0 {
			return f, &cks.FieldError{Field: "stopped_longer_than", Expected: fmt.Sprintf("a duration such as 24h or 90m, got %q", v)}
		}
		if len(in.State) > 0 {
			return f, &cks.FieldError{Field: "state", Expected: "no state filter together with stopped_longer_than (it selects STOPPED)"}
		}
		stale := sweeper.StaleStopFilter(now, d)
		f.States, f.StateChangedBefore = stale.States, stale.StateChangedBefore
	}
	for _, s := range in.State {
		st := cks.TaskState(strings.ToUpper(strings.TrimSpace(s)))
		if !ledger.Valid(st) {
			return f, &cks.FieldError{Field: "state", Expected: fmt.Sprintf("one of %s, got %q", statesList(), s)}
		}
		f.States = append(f.States, st)
	}
	return f.Validate()
}

func statesList() string {
	var s []string
	for _, st := range ledger.All {
		s = append(s, string(st))
	}
	return strings.Join(s, ", ")
}

// ListTasks is list_tasks.
var ListTasks = define(cks.OpListTasks, &Op[cks.ListTasksInput, cks.TaskPage]{
	spec: Spec{
		Title:   "List tasks",
		Summary: "a page of tasks (cursor paging), filtered by state, type, text (q), creator and an unconfirmed abort, or the STOPPED ones held at least stopped_longer_than (e.g. 24h); sorted by id, -id, updated, -updated or priority; order stopped_first lists the STOPPED tasks first",
		Description: "List tasks of the cks task ledger, oldest first (or in sort's order), one page at a time (use next_cursor " +
			"as cursor for the next page, and under sort updated, -updated or priority its next_key as cursor_key). Filter by " +
			"state and type, text in the title, description or criteria (q), creator (created_by), an abort not confirmed " +
			"(unconfirmed_abort), or select the STOPPED tasks held at least stopped_longer_than. With order " +
			"stopped_first the first page opens with every STOPPED task (up to 1000; more_stopped says there are more), longest held " +
			"first, and stopped says how many; then come the tasks of every other state, paged as usual.",
		Permission: auth.PermRead, Resource: auth.ResourceTasks,
		Surfaces: HTTP | MCP | CLI, Needs: NeedTasks, Hints: readOnly,
	},
	check: func(in *cks.ListTasksInput) error {
		f, err := TaskFilterOf(*in, time.Time{})
		if err != nil {
			return err
		}
		return ledger.CheckOrder(f, in.Order)
	},
	call: func(ctx context.Context, s *Services, in *cks.ListTasksInput) (cks.TaskPage, error) {
		f, err := TaskFilterOf(*in, s.clock().Now())
		if err != nil {
			return cks.TaskPage{}, err
		}
		page, err := ledger.ListInOrder(ctx, s.Tasks, f, in.Order)
		if page.Tasks == nil {
			page.Tasks = []cks.Task{}
		}
		return page, err
	},
})

// CountTasks is count_tasks.
var CountTasks = define(cks.OpCountTasks, &Op[cks.CountTasksInput, cks.TaskCounts]{
	spec: Spec{
		Title:   "Count tasks",
		Summary: "how many tasks are in each state, for list_tasks' filter, in one read",
		Description: "Count the tasks of the cks task ledger per state: counts has every state the filter names (every state " +
			"when it names none), 0 included, and total their sum. The filter is list_tasks': state, type, or the STOPPED " +
			"tasks held at least stopped_longer_than, and the text (q), creator (created_by) and unconfirmed_abort filters.",
		Permission: auth.PermRead, Resource: auth.ResourceTasks,
		Surfaces: HTTP, Needs: NeedTasks, Hints: readOnly,
	},
	check: func(in *cks.CountTasksInput) error {
		_, err := TaskFilterOf(in.ListTasksInput(), time.Time{})
		return err
	},
	call: func(ctx context.Context, s *Services, in *cks.CountTasksInput) (cks.TaskCounts, error) {
		f, err := TaskFilterOf(in.ListTasksInput(), s.clock().Now())
		if err != nil {
			return cks.TaskCounts{}, err
		}
		return s.Tasks.CountTasksByState(ctx, f)
	},
})

// TaskStats is task_stats.
var TaskStats = define(cks.OpTaskStats, &Op[cks.TaskStatsInput, cks.TaskStats]{
	spec: Spec{
		Title:   "Task statistics",
		Summary: "tasks completed and failed, queue depth and claim latency per minute, over the last hour",
		Description: "The task ledger's last minutes (minutes, 60 by default, at most 10080: 7 days; the current minute last), from its " +
			"events, per minute or per step of step_minutes (1 by default; at most 1440 steps, each starting at a whole multiple " +
			"of the step, so the window is rounded up to whole steps; step_minutes says which in the answer): " +
			"the tasks that reached COMPLETED and FAILED, the depth of the queue at the step's end " +
			"under depth (every unfinished state, 0 included), and the claims with the median and 95th percentile of " +
			"their wait from the task last becoming OPEN to its claim (claim_latency_p50_ms, claim_latency_p95_ms; null " +
			"without claims). claims_sampled says the window held more than 10000 claims and the newest were measured.",
		Permission: auth.PermRead, Resource: auth.ResourceTasks,
		Surfaces: HTTP | MCP | CLI, Needs: NeedTasks, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, in *cks.TaskStatsInput) (cks.TaskStats, error) {
		return s.Tasks.TaskStats(ctx, *in)
	},
})

// ListUnclaimedTypes is list_unclaimed_types.
var ListUnclaimedTypes = define(cks.OpListUnclaimedTypes, &Op[cks.UnclaimedTypesInput, cks.UnclaimedTypes]{
	spec: Spec{
		Title:   "List unclaimed task types",
		Summary: "the task types whose OPEN tasks wait with no worker to claim them",
		Description: "The task types no worker claims: a type whose longest-waiting due OPEN task has waited more than after_s " +
			"seconds (60 by default), with no task of it CLAIMED or RUNNING and no live process naming it among the types it " +
			"claims (its --types). Such tasks wait forever unless a worker for the type starts, or the type is misspelt. " +
			"Longest-waiting first, at most 100 (total counts them all).",
		Permission: auth.PermRead, Resource: auth.ResourceTasks,
		Surfaces: HTTP | MCP | CLI, Needs: NeedTasks | NeedLiveness, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, in *cks.UnclaimedTypesInput) (cks.UnclaimedTypes, error) {
		return UnclaimedTypes(ctx, s, time.Duration(in.AfterS*float64(time.Second)))
	},
})

// UnclaimedTypes is list_unclaimed_types for after (the input's after_s;
// cks.DefaultUnclaimedAfter when 0), for the surfaces that show it beside
// something else (the board, task show, doctor, /metrics).
func UnclaimedTypes(ctx context.Context, s *Services, after time.Duration) (cks.UnclaimedTypes, error) {
	declared, err := s.Liveness.DeclaredTypes(ctx)
	if err != nil {
		return cks.UnclaimedTypes{}, err
	}
	return s.Tasks.UnclaimedTypes(ctx, cmp.Or(after, cks.DefaultUnclaimedAfter), declared)
}

// FollowPage is how many chunks a follower of a task's output reads at
// a time (ledger.FollowPage).
const FollowPage = ledger.FollowPage

// GetOutput is get_output.
var GetOutput = define(cks.OpGetOutput, &Op[cks.GetOutputInput, cks.OutputPage]{
	spec: Spec{
		Title:   "Get output",
		Summary: "a page of a task's live output after a seq (follow=1 over HTTP: a stream of Server-Sent Events)",
		Description: "Read the chunks of output the task's attempts appended (append_output), oldest first, after seq after " +
			"(0: from the start; pass next_after for the next page), up to limit (1 to 1000, default 100), with the task's state, " +
			"its attempt and live (an attempt is running: more may come). A chunk with dropped and no text is a note: that many " +
			"bytes of the attempt's oldest output were dropped to keep its last 4 MiB. Over HTTP, follow=1 answers Server-Sent " +
			"Events instead: event: output (id: the seq, data: the chunk) as chunks are appended, resumed after the Last-Event-ID " +
			"header's seq on reconnect, and event: end (data: the task's state) when the attempt ends.",
		Permission: auth.PermRead, Resource: taskResource,
		Surfaces: HTTP | MCP | CLI, Needs: NeedTasks, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, in *cks.GetOutputInput) (cks.OutputPage, error) {
		return s.Tasks.Output(ctx, in.TaskID, in.After, in.Limit)
	},
})

// GetTask is get_task.
var GetTask = define(cks.OpGetTask, &Op[cks.TaskInput, cks.Task]{
	spec: Spec{
		Title:   "Get task",
		Summary: "one task with its events, evidence per attempt and aborts",
		Description: "Show one task with its dependencies, its event history (every state change: who, when, from, to, " +
			"attempt, reason; and every edit, with each field it changed, its old and its new value), its current attempt and earlier ones (evidence, decisions, workspace), its aborts, and under " +
			"actions the operator verbs its state admits (stop, start, cancel, answer, update, update_material, review, retry; none " +
			"when it is COMPLETED) — whether the caller holds their permissions is not checked here.",
		Permission: auth.PermRead, Resource: taskResource,
		Surfaces: HTTP | MCP | CLI, Needs: NeedTasks, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, in *cks.TaskInput) (cks.Task, error) {
		t, err := s.Tasks.GetTask(ctx, in.TaskID)
		if err != nil {
			return t, err
		}
		t.Actions = ledger.Actions(t.State)
		if t.Actions == nil {
			t.Actions = []cks.TaskAction{}
		}
		return t, nil
	},
})

// ErrDedupeUnreadable is the answer to a create whose dedupe_key names a
// task the caller may not read: a conflict that names nothing of that task
// (not its id, not its content), so a key cannot be used to read tasks.
var ErrDedupeUnreadable = fmt.Errorf("a task with this dedupe_key already exists (or, with dedupe_once, existed) "+
	"and the caller may not read it; nothing was created: %w", cks.ErrConflict)

// newTaskDocs describe the fields of cks.NewTask, the input of
// create_task and each of update_task's add_children.
var newTaskDocs = map[string]string{
	"type":                "the task type; agents claim tasks by type",
	"title":               "a short human title",
	"description":         "what to do",
	"acceptance_criteria": "how to tell it is done",
	"payload":             "any JSON value the executor needs",
	"priority":            "0 (lowest, default) to 1000; higher is claimed first",
	"max_attempts":        "attempts before the task is dead-lettered as FAILED (default 3)",
	"parent_id":           "the parent task, making this a child (needs create on /tasks/PARENT, not on /tasks)",
	"depends_on":          "tasks that must be COMPLETED before this one is claimable",
	"dedupe_key":          "when a live task has this key it is returned instead of creating another",
	"dedupe_once":         "with dedupe_key: a finished task with the key counts too, so the key is used at most once ever",
	"metadata":            "a JSON object for the caller's own use",
	"run_after":           "a delayed task: no claim takes it before this time (RFC 3339; a past time is now; at most a year and a day ahead); it is OPEN meanwhile, run_after shown",
	"delay":               "run_after as a duration from now, such as 10m or 24h (not with run_after)",
	"attempt_timeout":     "the longest an attempt may run from its claim, such as 10m or 2h (1s to 168h): past it the lease reaper ends the attempt as a stop does (lease revoked, abort requested, an exec agent's command killed) and the task is retried, or FAILED at max_attempts, reason \"timed out after 10m\"",
	"traceparent":         "the W3C traceparent of the caller's span, such as 00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01 (over HTTP also the traceparent header): the task is kept in that trace; a hub that exports traces (OTEL_*, docs/tracing.md) makes its create_task and attempt spans children of it, and each claim hands the executor the attempt's context (claim_tasks' traceparent)",
	"concurrency_keys":    "up to 4 keys such as openai or openai:gpt-5 (letters, digits and _ . : / @ + =, at most 128 bytes): the task is not claimed while one of them is held at its limit's cap (set_limit)",
	"expires_at":          "a task not completed by this time (RFC 3339; in the future, after run_after, at most a year and a day ahead) is cancelled by the lease reaper, reason \"expired: not completed by TIME\" (a running attempt aborted as a cancel's)",
}

// CreateTask is create_task.
var CreateTask = define(cks.OpCreateTask, &Op[cks.NewTask, cks.CreatedTask]{
	spec: Spec{
		Title:   "Create task",
		Summary: "enqueue a task (201; 200 with created false on a dedupe hit)",
		Description: "Enqueue a task for agents to claim. It starts OPEN, or WAITING until every task in depends_on is COMPLETED. " +
			"With run_after or delay it is a delayed task: OPEN (or WAITING) with that run_after, claimed by nobody before then, " +
			"and a waiting claim (wait_s) hears of it the moment it is due. " +
			"With attempt_timeout each attempt is ended by the ledger once it has run that long, however alive its agent; " +
			"with expires_at the task is cancelled if it is not completed by then. " +
			"Its creator (created_by, the creation event's actor) is the caller. With a dedupe_key that a live task " +
			"already has, that task is returned with created=false instead (a conflict, naming no task, when the caller " +
			"may not read it). A dependency that does not exist, or that the caller may not read, is an invalid_argument error " +
			"naming depends_on (the same for both). Needs create on /tasks, or on /tasks/P for a child of P (parent_id P).",
		Permission: auth.PermCreate, Resource: auth.ResourceTasks,
		Status: http.StatusCreated, Surfaces: HTTP | MCP | CLI, Needs: NeedTasks,
		Alternate: &Alternate{Status: http.StatusOK, When: "a live task had the dedupe_key: it is returned, with created false"},
		// Each call adds a task (one with a dedupe_key only the first time).
		Hints: Hints{Destructive: new(false), OpenWorld: new(false)},
		// The W3C Trace Context header is the traceparent field.
		Headers: []string{"traceparent"},
	},
	// The one place of the rule: a child of P needs create on /tasks/P (so
	// a task-scoped agent credential can create children of its own task).
	resource: func(_ context.Context, _ *Services, n *cks.NewTask) (string, error) {
		if n.ParentID != nil && *n.ParentID > 0 {
			return auth.TaskResource(*n.ParentID), nil
		}
		return auth.ResourceTasks, nil
	},
	check: func(n *cks.NewTask) error {
		_, err := n.Validate()
		return err
	},
	call: func(ctx context.Context, s *Services, n *cks.NewTask) (cks.CreatedTask, error) {
		if err := requireReadable(ctx, "depends_on", n.DependsOn); err != nil {
			return cks.CreatedTask{}, err
		}
		in := *n
		in.CreatedBy = actor(ctx)
		t, created, err := s.Tasks.Enqueue(ctx, in)
		if err != nil || created {
			return cks.CreatedTask{Task: t, Created: created}, err
		}
		// A dedupe hit returns the existing task only to a caller that may
		// read it.
		if err := auth.Require(ctx, auth.PermRead, auth.TaskResource(t.ID)); errors.Is(err, auth.ErrForbidden) {
			return cks.CreatedTask{}, ErrDedupeUnreadable
		} else if err != nil {
			return cks.CreatedTask{}, err
		}
		return cks.CreatedTask{Task: t}, nil
	},
	status: func(out cks.CreatedTask) int {
		if out.Created {
			return http.StatusCreated
		}
		return http.StatusOK
	},
	required: []string{"type"},
})

// requireReadable refuses a dependency (of ids, named in field) that the
// caller may not read exactly as the ledger refuses one that does not exist
// (ledger.NoSuchDependency), before anything is written: so a create or an
// edit can neither tell an unreadable task from a missing one nor learn its
// state from the new task's (WAITING, OPEN or BLOCKED). The one place of
// the rule; an id that is not positive is left to the ledger's validation.
func requireReadable(ctx context.Context, field string, ids []int64) error {
	var resources []string
	var of []int64 // the id of each resource
	for _, d := range ids {
		if d > 0 {
			resources, of = append(resources, auth.TaskResource(d)), append(of, d)
		}
	}
	err := auth.RequireEach(ctx, auth.PermRead, resources)
	if fe, ok := errors.AsType[*auth.ForbiddenError](err); ok {
		return ledger.NoSuchDependency(field, of[slices.Index(resources, fe.Resource)])
	}
	return err
}

// AnswerTask is answer_task.
var AnswerTask = define(cks.OpAnswerTask, &Op[cks.AnswerTaskInput, cks.Task]{
	spec: Spec{
		Title:       "Answer task",
		Summary:     "answer a NEEDS_INPUT task's question",
		Description: "Answer the question of a NEEDS_INPUT task; it returns to OPEN with the answer recorded. Answering is an operator edit: it needs update on the task.",
		Permission:  auth.PermUpdate, Resource: taskResource, Surfaces: HTTP | MCP | CLI, Needs: NeedTasks,
		// A second answer is refused: the task is no longer NEEDS_INPUT.
		Hints: Hints{Destructive: new(false), OpenWorld: new(false)},
	},
	call: func(ctx context.Context, s *Services, in *cks.AnswerTaskInput) (cks.Task, error) {
		return s.Tasks.Answer(ctx, in.TaskID, actor(ctx), in.Text)
	},
})

// CancelTask is cancel_task.
var CancelTask = define(cks.OpCancelTask, &Op[cks.TaskReasonInput, cks.Task]{
	spec: Spec{
		Title:       "Cancel task",
		Summary:     "cancel a task (terminal)",
		Description: "Cancel a task (terminal). Its executor loses the lease and its WAITING dependants become BLOCKED. Needs cancel on the task.",
		Permission:  auth.PermCancel, Resource: taskResource, Surfaces: HTTP | MCP | CLI, Needs: NeedTasks,
		Hints: Hints{Destructive: new(true), OpenWorld: new(false)}, // terminal: a second cancel is refused
	},
	call: func(ctx context.Context, s *Services, in *cks.TaskReasonInput) (cks.Task, error) {
		return s.Tasks.Cancel(ctx, in.TaskID, actor(ctx), in.Reason)
	},
})

// StopTask is stop_task.
var StopTask = define(cks.OpStopTask, &Op[cks.StopTaskInput, cks.TaskStopResult]{
	spec: Spec{
		Title:   "Stop task",
		Summary: "hold a task in STOPPED, with the abort outcome of a running executor",
		Description: "Hold a task in STOPPED (ADR 0020): no agent claims it, no sweeper touches it and it burns no attempt until start_task releases it. " +
			"For a CLAIMED or RUNNING task the executor's lease is revoked and it is asked to abort; with wait (the default) the call waits up to " +
			"deadline (default 30s) for the executor to confirm. abort.outcome is then abort_confirmed, or abort_unconfirmed when the " +
			"deadline passed first: the executor named in abort.executor may still be running. The task is STOPPED either way. " +
			"OPEN, WAITING, BLOCKED, NEEDS_INPUT, NEEDS_REVIEW and REVIEWING tasks are stopped directly (no abort). " +
			"A terminal or already STOPPED task is a conflict. Needs stop on /tasks/{task_id}, which does not grant start.",
		Permission: auth.PermStop, Resource: taskResource, Surfaces: HTTP | MCP | CLI, Needs: NeedTasks,
		// It aborts a running attempt (its work is lost); a second stop is
		// refused.
		Hints: Hints{Destructive: new(true), OpenWorld: new(false)},
	},
	call: func(ctx context.Context, s *Services, in *cks.StopTaskInput) (cks.TaskStopResult, error) {
		d, wait, err := in.Parse()
		if err != nil {
			return cks.TaskStopResult{}, err
		}
		return s.Tasks.StopTask(ctx, ledger.StopParams{ID: in.TaskID, Actor: actor(ctx), Reason: in.Reason, Deadline: d, Wait: wait})
	},
})

// StartTask is start_task.
var StartTask = define(cks.OpStartTask, &Op[cks.TaskReasonInput, cks.Task]{
	spec: Spec{
		Title:   "Start task",
		Summary: "release a STOPPED task (OPEN, or WAITING/BLOCKED by its dependencies)",
		Description: "Release a STOPPED task: it becomes OPEN, or WAITING when a dependency is not COMPLETED at this moment (BLOCKED when one " +
			"failed or was cancelled). restarts is incremented, attempts is not. The next agent enters it from the top, with the task as it " +
			"now stands; nothing an aborted attempt recorded counts as current. A task that is not STOPPED is a conflict. " +
			"Needs start on /tasks/{task_id}.",
		Permission: auth.PermStart, Resource: taskResource, Surfaces: HTTP | MCP | CLI, Needs: NeedTasks,
		// A second start is refused: the task is no longer STOPPED.
		Hints: Hints{Destructive: new(false), OpenWorld: new(false)},
	},
	call: func(ctx context.Context, s *Services, in *cks.TaskReasonInput) (cks.Task, error) {
		return s.Tasks.Start(ctx, in.TaskID, actor(ctx), in.Reason)
	},
})

// RetryTask is retry_task.
var RetryTask = define(cks.OpRetryTask, &Op[cks.TaskReasonInput, cks.Task]{
	spec: Spec{
		Title:   "Retry task",
		Summary: "open a FAILED or CANCELLED task again with a fresh attempt budget (OPEN, or WAITING/BLOCKED by its dependencies)",
		Description: "Open a FAILED or CANCELLED task again: attempts goes back to 0 (a fresh budget of max_attempts), restarts is " +
			"incremented, and it becomes OPEN, or WAITING when a dependency is not COMPLETED at this moment (BLOCKED when one failed or " +
			"was cancelled). Its earlier attempts, with their evidence, decisions and aborts, stay in its history; the retry is an event " +
			"of its own. The tasks its failure blocked wait again, unless another failed or blocked dependency still blocks them; its " +
			"children are left as they are. A task in any other state (COMPLETED is never reopened), or one whose dedupe_key a live " +
			"task holds now, is a conflict. Needs retry on /tasks/{task_id}, which start does not grant.",
		Permission: auth.PermRetry, Resource: taskResource, Surfaces: HTTP | MCP | CLI, Needs: NeedTasks,
		Hints: Hints{Destructive: new(false), OpenWorld: new(false)}, // a fresh budget; the old attempts stay history
	},
	call: func(ctx context.Context, s *Services, in *cks.TaskReasonInput) (cks.Task, error) {
		return s.Tasks.Retry(ctx, in.TaskID, actor(ctx), in.Reason)
	},
})

// UpdateTask is update_task.
var UpdateTask = define(cks.OpUpdateTask, &Op[cks.UpdateTaskInput, cks.UpdateResult]{
	spec: Spec{
		Title:   "Update task",
		Summary: "edit a task as one operation (path in_place, live or stop_apply_start)",
		Description: "Edit a task as one operation. Material fields (description, acceptance_criteria, payload, add_depends_on, " +
			"remove_depends_on, add_children, cancel_children) bump revision; title, priority, metadata, attempt_timeout, run_after, delay and expires_at do not. " +
			"run_after and delay apply to a task no one has claimed (OPEN, WAITING, BLOCKED; any other state is a conflict), and a claim that waits hears at once of a task they made due. A STOPPED, OPEN, WAITING " +
			"or BLOCKED task is edited in place (path in_place). A CLAIMED or RUNNING task is never edited under its executor: a material " +
			"edit stops it, applies the edit and starts it again below this call, so nobody observes the middle (path stop_apply_start; " +
			"abort says whether the old executor confirmed within deadline when wait is set); a non-material one applies live " +
			"(path live). NEEDS_INPUT, NEEDS_REVIEW and REVIEWING tasks take only non-material edits (stop them first); terminal tasks none. " +
			"A dependency that does not exist, that the caller may not read (answered as one that does not exist) or that would " +
			"close a cycle is an invalid_argument error, and any error changes nothing. " +
			"Needs update on /tasks/{task_id}.",
		Permission: auth.PermUpdate, Resource: taskResource, Surfaces: HTTP | MCP | CLI, Needs: NeedTasks,
		// It can cancel children, drop dependencies and restart a running
		// executor's attempt; add_children repeated adds more children.
		Hints: Hints{Destructive: new(true), OpenWorld: new(false)},
	},
	docs: map[string]string{
		"title":               "new title (not material)",
		"description":         "new description (material)",
		"acceptance_criteria": "new acceptance criteria (material)",
		"payload":             "new payload, any JSON value (material)",
		"priority":            "new priority, 0 to 1000 (not material)",
		"metadata":            "replaces the task's metadata, a JSON object (not material)",
		"add_depends_on":      "tasks to add as dependencies; each must exist and must not close a cycle (material)",
		"remove_depends_on":   "dependencies to remove (material)",
		"add_children":        "child tasks to create under this task, without parent_id (material)",
		"cancel_children":     "children of this task to cancel (material)",
		"attempt_timeout":     "new attempt timeout, such as 10m (1s to 168h; not material: a running attempt's deadline becomes its claim plus this)",
		"run_after":           "hold the task back from claims until this time, as create_task's (RFC 3339; a past time makes it claimable now); an OPEN, WAITING or BLOCKED task only (not material)",
		"delay":               "run_after as a duration from now, such as 10m (not with run_after; not material)",
		"expires_at":          "new expiry: the task, not completed by then, is cancelled (RFC 3339; in the future, after run_after; not material)",
		"concurrency_keys":    "replaces the task's concurrency keys ([] removes them; not material: a running attempt is counted under the new keys)",
	},
	also: func(ctx context.Context, _ *Services, in *cks.UpdateTaskInput) error {
		return requireChildren(ctx, in.TaskID, in.TaskPatch)
	},
	check: func(in *cks.UpdateTaskInput) error {
		_, err := in.TaskPatch.Validate()
		return err
	},
	call: func(ctx context.Context, s *Services, in *cks.UpdateTaskInput) (cks.UpdateResult, error) {
		d, wait, err := in.Parse()
		if err != nil {
			return cks.UpdateResult{}, err
		}
		if err := requireReadable(ctx, "add_depends_on", in.AddDependsOn); err != nil {
			return cks.UpdateResult{}, err
		}
		for i, c := range in.AddChildren {
			if err := requireReadable(ctx, fmt.Sprintf("add_children[%d].depends_on", i), c.DependsOn); err != nil {
				return cks.UpdateResult{}, err
			}
		}
		return s.Tasks.UpdateTask(ctx, ledger.UpdateParams{ID: in.TaskID, Actor: actor(ctx), Patch: in.TaskPatch, Deadline: d, Wait: wait})
	},
})

// requireChildren checks what an edit of task parent does to its children
// beyond the update its permission is (issue 38): creating children
// (add_children) needs create on the parent, as create_task with that
// parent_id does, and cancelling one (cancel_children) needs cancel on it,
// as cancel_task does — so update implies neither. A listed task that is
// no child of parent is refused alike when the caller may not cancel it:
// the refusal names the permission and the task, never whether it is a
// child. Checked before anything is written or read.
func requireChildren(ctx context.Context, parent int64, p cks.TaskPatch) error {
	if len(p.AddChildren) > 0 {
		if err := auth.Require(ctx, auth.PermCreate, auth.TaskResource(parent)); err != nil {
			return err
		}
	}
	var resources []string
	for _, c := range p.CancelChildren {
		if c > 0 {
			resources = append(resources, auth.TaskResource(c))
		}
	}
	return auth.RequireEach(ctx, auth.PermCancel, resources)
}

// bulkFilter is the selection of a bulk operation as the ledger takes it:
// the ids, or list_tasks' filter at time now (with the bulk's own limit,
// which the ledger bounds).
func bulkFilter(sel cks.TaskSelection, now time.Time) ([]int64, *cks.TaskFilter, error) {
	if !sel.Filtered() {
		return sel.TaskIDs, nil, nil
	}
	f, err := TaskFilterOf(sel.ListTasksInput(), now)
	if err != nil {
		return nil, nil, err
	}
	f.Limit = sel.Limit
	return sel.TaskIDs, &f, nil
}

// bulkDescription is what every bulk operation's description says of its
// selection, outcomes and permission.
const bulkDescription = " The tasks are task_ids (at most 500), or else every task list_tasks' filter selects (state, type, " +
	"stopped_longer_than, q, created_by, unconfirmed_abort): at most limit of them (1 to 500, default 500) in task_id order from cursor, and next_cursor says where " +
	"the next call goes on when more match. One transaction selects and locks them, then moves each from its state as it is at its " +
	"turn by the rule of the single-task operation; each task's outcome is done (from, state) or refused with the reason (its " +
	"state does not admit it, no such task: nothing of it changes). pending and unconfirmed count the aborts whose executors may " +
	"still be running. Needs %s on /tasks (a filter may select any task), and a selection by a filter also read on /tasks " +
	"(the outcomes name the tasks it matched)."

// bulkOp declares the bulk operation of endpoint e, verb action, needing
// permission perm.
func bulkOp[In any](e cks.Endpoint[In, cks.BulkResult], action cks.TaskAction, perm string, spec Spec,
	params func(in *In) (cks.TaskSelection, string, cks.AbortWait)) *Op[In, cks.BulkResult] {
	spec.Description += fmt.Sprintf(bulkDescription, perm)
	spec.Permission, spec.Resource, spec.Surfaces, spec.Needs = perm, auth.ResourceTasks, HTTP|MCP|CLI, NeedTasks
	return define(e, &Op[In, cks.BulkResult]{
		spec: spec,
		also: func(ctx context.Context, _ *Services, in *In) error {
			sel, _, _ := params(in)
			return requireFilterRead(ctx, sel)
		},
		check: func(in *In) error {
			sel, reason, w := params(in)
			d, wait, err := w.Parse()
			if err != nil {
				return err
			}
			ids, f, err := bulkFilter(sel, time.Time{})
			if err != nil {
				return err
			}
			return ledger.CheckBulk(ledger.BulkParams{Action: action, IDs: ids, Filter: f, Reason: reason, Deadline: d, Wait: wait})
		},
		call: func(ctx context.Context, s *Services, in *In) (cks.BulkResult, error) {
			sel, reason, w := params(in)
			d, wait, err := w.Parse()
			if err != nil {
				return cks.BulkResult{}, err
			}
			ids, f, err := bulkFilter(sel, s.clock().Now())
			if err != nil {
				return cks.BulkResult{}, err
			}
			return s.Tasks.Bulk(ctx, ledger.BulkParams{Action: action, IDs: ids, Filter: f, Actor: actor(ctx), Reason: reason,
				Deadline: d, Wait: wait})
		},
	})
}

// requireFilterRead refuses a bulk selection by a filter to a caller who
// may not read every task (read on /tasks): a filter reads the tasks as
// list_tasks does, and the outcomes name what it matched, so without it a
// caller holding stop but not read would learn the tasks a q matches
// (issue 38). A selection by ids names its tasks itself and needs no read.
func requireFilterRead(ctx context.Context, sel cks.TaskSelection) error {
	if !sel.Filtered() {
		return nil
	}
	return auth.Require(ctx, auth.PermRead, auth.ResourceTasks)
}

// bulkInput reads a BulkTasksInput (no abort wait: only a stop waits).
func bulkInput(in *cks.BulkTasksInput) (cks.TaskSelection, string, cks.AbortWait) {
	return in.TaskSelection, in.Reason, cks.AbortWait{Wait: new(false)}
}

// The bulk operations (issue 24): stop, start, cancel and retry of many
// tasks as one ledger call (ledger.Service.Bulk).
var (
	// BulkStopTasks is bulk_stop_tasks.
	BulkStopTasks = bulkOp(cks.OpBulkStopTasks, cks.ActionStop, auth.PermStop, Spec{
		Title:   "Stop tasks",
		Summary: "hold many tasks in STOPPED (ids, or a filter), each task's outcome and its executor's abort",
		Description: "Hold many tasks in STOPPED, as stop_task does each: a CLAIMED or RUNNING one's executor loses its lease and is " +
			"asked to abort; with wait (the default) the call waits up to one deadline (default 30s) for all of them to confirm, and " +
			"each abort is then abort_confirmed or abort_unconfirmed.",
		Hints: Hints{Destructive: new(true), OpenWorld: new(false)}, // it aborts running attempts
	}, func(in *cks.BulkStopTasksInput) (cks.TaskSelection, string, cks.AbortWait) {
		return in.TaskSelection, in.Reason, in.AbortWait
	})
	// BulkStartTasks is bulk_start_tasks.
	BulkStartTasks = bulkOp(cks.OpBulkStartTasks, cks.ActionStart, auth.PermStart, Spec{
		Title:   "Start tasks",
		Summary: "release many STOPPED tasks (ids, or a filter), each task's outcome",
		Description: "Release many STOPPED tasks, as start_task does each (OPEN, or WAITING/BLOCKED by its dependencies); a task " +
			"whose last abort its executor never confirmed says so in its outcome's abort.",
		Hints: Hints{Destructive: new(false), OpenWorld: new(false)},
	}, bulkInput)
	// BulkCancelTasks is bulk_cancel_tasks.
	BulkCancelTasks = bulkOp(cks.OpBulkCancelTasks, cks.ActionCancel, auth.PermCancel, Spec{
		Title:       "Cancel tasks",
		Summary:     "cancel many tasks (ids, or a filter), each task's outcome",
		Description: "Cancel many tasks, as cancel_task does each (terminal; a running one's executor is asked to abort, its WAITING dependants become BLOCKED).",
		Hints:       Hints{Destructive: new(true), OpenWorld: new(false)}, // terminal
	}, bulkInput)
	// BulkRetryTasks is bulk_retry_tasks.
	BulkRetryTasks = bulkOp(cks.OpBulkRetryTasks, cks.ActionRetry, auth.PermRetry, Spec{
		Title:   "Retry tasks",
		Summary: "open many FAILED or CANCELLED tasks again with fresh attempt budgets (ids, or a filter), each task's outcome",
		Description: "Open many FAILED or CANCELLED tasks again, as retry_task does each (a fresh attempt budget, restarts+1, the " +
			"tasks their failures blocked waiting again); of two with one dedupe_key the second is refused.",
		Hints: Hints{Destructive: new(false), OpenWorld: new(false)},
	}, bulkInput)
)
