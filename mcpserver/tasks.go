package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks/api"
	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/ledger"
	"github.com/cks-dev/cks/store"
)

// Task tool names.
const (
	ToolListTasks  = "list_tasks"
	ToolGetTask    = "get_task"
	ToolCreateTask = "create_task"
	ToolAnswerTask = "answer_task"
	ToolCancelTask = "cancel_task"
	ToolStopTask   = "stop_task"
	ToolStartTask  = "start_task"
	ToolUpdateTask = "update_task"
)

// mcpActor is recorded as the actor of changes made through MCP tools when
// the caller is not an authenticated principal (the local operator of
// `cks mcp` over stdio).
const mcpActor = "mcp"

// actorOf names the caller for the task's event log: the authenticated
// principal's name (as the HTTP API records it), else mcpActor.
func actorOf(ctx context.Context) string {
	if p, ok := auth.PrincipalFrom(ctx); ok && p.Name != "" {
		return p.Name
	}
	return mcpActor
}

// TaskStore is what the task tools need of a store: the ledger, its
// operator control (stop, start, update) and the change notifications that
// carry abort confirmations. store.Store satisfies it.
type TaskStore interface {
	store.Tasks
	store.TaskControl
	store.Changes
}

type listTasksInput struct {
	State  []string `json:"state,omitempty" jsonschema:"only tasks in any of these states (OPEN, WAITING, BLOCKED, CLAIMED, RUNNING, NEEDS_REVIEW, NEEDS_INPUT, REVIEWING, COMPLETED, FAILED, CANCELLED, STOPPED)"`
	Type   []string `json:"type,omitempty" jsonschema:"only tasks of any of these types"`
	Cursor int64    `json:"cursor,omitempty" jsonschema:"list tasks with task_id greater than this (the next_cursor of the previous page)"`
	Limit  int      `json:"limit,omitempty" jsonschema:"page size, 1 to 1000 (default 100)"`
}

type taskIDInput struct {
	TaskID int64 `json:"task_id" jsonschema:"the task's id"`
}

type createTaskInput struct {
	Type               string  `json:"type" jsonschema:"the task type; agents claim tasks by type"`
	Title              string  `json:"title,omitempty" jsonschema:"a short human title"`
	Description        string  `json:"description,omitempty" jsonschema:"what to do"`
	AcceptanceCriteria string  `json:"acceptance_criteria,omitempty" jsonschema:"how to tell it is done"`
	Payload            any     `json:"payload,omitempty" jsonschema:"any JSON value the executor needs"`
	Priority           int     `json:"priority,omitempty" jsonschema:"0 (lowest, default) to 1000; higher is claimed first"`
	MaxAttempts        int     `json:"max_attempts,omitempty" jsonschema:"attempts before the task is dead-lettered as FAILED (default 3)"`
	ParentID           *int64  `json:"parent_id,omitempty" jsonschema:"the parent task, making this a child"`
	DependsOn          []int64 `json:"depends_on,omitempty" jsonschema:"tasks that must be COMPLETED before this one is claimable"`
	DedupeKey          string  `json:"dedupe_key,omitempty" jsonschema:"when a live task has this key it is returned instead of creating another"`
}

type answerInput struct {
	TaskID int64  `json:"task_id" jsonschema:"the NEEDS_INPUT task"`
	Text   string `json:"text" jsonschema:"the answer to the task's question"`
}

type cancelInput struct {
	TaskID int64  `json:"task_id" jsonschema:"the task to cancel"`
	Reason string `json:"reason,omitempty" jsonschema:"why, recorded in the task's events"`
}

type stopInput struct {
	TaskID          int64   `json:"task_id" jsonschema:"the task to stop"`
	Reason          string  `json:"reason" jsonschema:"why, recorded in the task's events and in the abort request"`
	DeadlineSeconds float64 `json:"deadline_seconds,omitempty" jsonschema:"how long to wait for the executor of a CLAIMED or RUNNING task to confirm the abort, 0.001 to 600 seconds (default 30)"`
	Wait            *bool   `json:"wait,omitempty" jsonschema:"wait up to the deadline for the executor's confirmation (default true); false returns at once with the abort pending"`
}

type startInput struct {
	TaskID int64  `json:"task_id" jsonschema:"the STOPPED task to start"`
	Reason string `json:"reason,omitempty" jsonschema:"why, recorded in the task's events"`
}

// childInput is one child task of update_task's add_children.
type childInput struct {
	Type               string  `json:"type" jsonschema:"the child's task type"`
	Title              string  `json:"title,omitempty" jsonschema:"a short human title"`
	Description        string  `json:"description,omitempty" jsonschema:"what to do"`
	AcceptanceCriteria string  `json:"acceptance_criteria,omitempty" jsonschema:"how to tell it is done"`
	Payload            any     `json:"payload,omitempty" jsonschema:"any JSON value the executor needs"`
	Priority           int     `json:"priority,omitempty" jsonschema:"0 (lowest, default) to 1000"`
	MaxAttempts        int     `json:"max_attempts,omitempty" jsonschema:"attempts before the child is dead-lettered (default 3)"`
	DependsOn          []int64 `json:"depends_on,omitempty" jsonschema:"tasks that must be COMPLETED before the child is claimable"`
	DedupeKey          string  `json:"dedupe_key,omitempty" jsonschema:"when a live task has this key it is used instead of creating another"`
}

type updateInput struct {
	TaskID             int64          `json:"task_id" jsonschema:"the task to update"`
	Title              *string        `json:"title,omitempty" jsonschema:"new title (not material)"`
	Description        *string        `json:"description,omitempty" jsonschema:"new description (material)"`
	AcceptanceCriteria *string        `json:"acceptance_criteria,omitempty" jsonschema:"new acceptance criteria (material)"`
	Payload            any            `json:"payload,omitempty" jsonschema:"new payload, any JSON value (material)"`
	Priority           *int           `json:"priority,omitempty" jsonschema:"new priority, 0 to 1000 (not material)"`
	Metadata           map[string]any `json:"metadata,omitempty" jsonschema:"replaces the task's metadata, a JSON object (not material)"`
	AddDependsOn       []int64        `json:"add_depends_on,omitempty" jsonschema:"tasks to add as dependencies; each must exist and must not close a cycle (material)"`
	RemoveDependsOn    []int64        `json:"remove_depends_on,omitempty" jsonschema:"dependencies to remove (material)"`
	AddChildren        []childInput   `json:"add_children,omitempty" jsonschema:"child tasks to create under this task (material)"`
	CancelChildren     []int64        `json:"cancel_children,omitempty" jsonschema:"children of this task to cancel (material)"`
	DeadlineSeconds    float64        `json:"deadline_seconds,omitempty" jsonschema:"when the task is CLAIMED or RUNNING and the edit is material: how long to wait for its executor to confirm the abort, 0.001 to 600 seconds (default 30)"`
	Wait               *bool          `json:"wait,omitempty" jsonschema:"wait up to the deadline for that confirmation (default true)"`
}

// deadline converts a deadline_seconds argument (0: the default).
func deadline(seconds float64) (time.Duration, error) {
	d := time.Duration(seconds * float64(time.Second))
	if seconds < 0 || seconds > store.MaxAbortDeadline.Seconds() || (seconds > 0 && d < time.Millisecond) {
		return 0, &store.FieldError{Field: "deadline_seconds", Expected: fmt.Sprintf(
			"a number of seconds from 0.001 to %g (absent or 0 for the default %g)",
			store.MaxAbortDeadline.Seconds(), store.DefaultAbortDeadline.Seconds())}
	}
	return d, nil
}

// rawJSON marshals an optional JSON argument; nil stays nil.
func rawJSON(field string, v any) (json.RawMessage, error) {
	if v == nil {
		return nil, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, &store.FieldError{Field: field, Expected: "a JSON value"}
	}
	return b, nil
}

// patch converts update_task's arguments to a store.TaskPatch.
func (in updateInput) patch() (store.TaskPatch, error) {
	p := store.TaskPatch{
		Title: in.Title, Description: in.Description, AcceptanceCriteria: in.AcceptanceCriteria, Priority: in.Priority,
		AddDependsOn: in.AddDependsOn, RemoveDependsOn: in.RemoveDependsOn, CancelChildren: in.CancelChildren,
	}
	var err error
	if p.Payload, err = rawJSON("payload", in.Payload); err != nil {
		return p, err
	}
	if in.Metadata != nil {
		if p.Metadata, err = rawJSON("metadata", in.Metadata); err != nil {
			return p, err
		}
	}
	for i, c := range in.AddChildren {
		payload, err := rawJSON(fmt.Sprintf("add_children[%d].payload", i), c.Payload)
		if err != nil {
			return p, err
		}
		p.AddChildren = append(p.AddChildren, store.NewTask{
			Type: c.Type, Title: c.Title, Description: c.Description, AcceptanceCriteria: c.AcceptanceCriteria,
			Payload: payload, Priority: c.Priority, MaxAttempts: c.MaxAttempts, DependsOn: c.DependsOn, DedupeKey: c.DedupeKey,
		})
	}
	return p, nil
}

// createdTask is the result of create_task.
type createdTask struct {
	Task    store.Task `json:"task"`
	Created bool       `json:"created"`
}

// AddTaskTools registers the task ledger tools on srv: list_tasks, get_task,
// create_task, answer_task, cancel_task and the operator controls of ADR
// 0020, stop_task, start_task and update_task (through ledger.Control, so
// the bounded wait for an abort confirmation behaves as in the HTTP API and
// the CLI). Bad input and illegal transitions come back as tool errors whose
// text says what was wrong, and change nothing.
func AddTaskTools(srv *mcp.Server, tasks TaskStore) {
	ctl := ledger.NewControl(tasks)
	states := make([]string, 0, len(ledger.All))
	for _, s := range ledger.All {
		states = append(states, string(s))
	}
	mcp.AddTool(srv, &mcp.Tool{
		Name:         ToolListTasks,
		Title:        "List tasks",
		Description:  "List tasks of the cks task ledger, oldest first, one page at a time (use next_cursor as cursor for the next page). Filter by state and type.",
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
		OutputSchema: outputSchema[store.TaskPage](),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in listTasksInput) (*mcp.CallToolResult, store.TaskPage, error) {
		if err := auth.Require(ctx, auth.PermRead, auth.ResourceTasks); err != nil {
			return nil, store.TaskPage{}, err
		}
		f := store.TaskFilter{Types: in.Type, After: in.Cursor, Limit: in.Limit}
		for _, s := range in.State {
			st := store.TaskState(strings.ToUpper(s))
			if !ledger.Valid(st) {
				return nil, store.TaskPage{}, fmt.Errorf("unknown state %q; expected one of %s", s, strings.Join(states, ", "))
			}
			f.States = append(f.States, st)
		}
		f, err := f.Validate()
		if err != nil {
			return nil, store.TaskPage{}, err
		}
		page, err := tasks.ListTasks(ctx, f)
		if page.Tasks == nil {
			page.Tasks = []store.Task{}
		}
		return nil, page, err
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:         ToolGetTask,
		Title:        "Get task",
		Description:  "Show one task with its dependencies, its event history (every state change: who, when, from, to, attempt, reason) and its evidence per attempt.",
		Annotations:  &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
		OutputSchema: outputSchema[store.Task](),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in taskIDInput) (*mcp.CallToolResult, store.Task, error) {
		if err := auth.Require(ctx, auth.PermRead, auth.TaskResource(in.TaskID)); err != nil {
			return nil, store.Task{}, err
		}
		t, err := tasks.GetTask(ctx, in.TaskID)
		return nil, t, err
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolCreateTask,
		Title: "Create task",
		Description: "Enqueue a task for agents to claim. It starts OPEN, or WAITING until every task in depends_on is COMPLETED. " +
			"With a dedupe_key that a live task already has, that task is returned with created=false instead " +
			"(a tool error, naming no task, when the caller may not read it).",
		OutputSchema: outputSchema[createdTask](),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in createTaskInput) (*mcp.CallToolResult, createdTask, error) {
		res := auth.ResourceTasks
		if in.ParentID != nil && *in.ParentID > 0 {
			res = auth.TaskResource(*in.ParentID)
		}
		if err := auth.Require(ctx, auth.PermCreate, res); err != nil {
			return nil, createdTask{}, err
		}
		var payload json.RawMessage
		if in.Payload != nil {
			b, err := json.Marshal(in.Payload)
			if err != nil {
				return nil, createdTask{}, &store.FieldError{Field: "payload", Expected: "a JSON value"}
			}
			payload = b
		}
		// As POST /v1/tasks: the creator is the caller, and a dedupe hit on a
		// task it may not read is refused without naming that task.
		t, created, err := api.CreateTask(ctx, tasks, store.NewTask{
			Type: in.Type, Title: in.Title, Description: in.Description, AcceptanceCriteria: in.AcceptanceCriteria,
			Payload: payload, Priority: in.Priority, MaxAttempts: in.MaxAttempts, ParentID: in.ParentID,
			DependsOn: in.DependsOn, DedupeKey: in.DedupeKey,
		}, actorOf(ctx))
		return nil, createdTask{Task: t, Created: created}, err
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:         ToolAnswerTask,
		Title:        "Answer task",
		Description:  "Answer the question of a NEEDS_INPUT task; it returns to OPEN with the answer recorded.",
		OutputSchema: outputSchema[store.Task](),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in answerInput) (*mcp.CallToolResult, store.Task, error) {
		if err := auth.Require(ctx, auth.PermUpdate, auth.TaskResource(in.TaskID)); err != nil {
			return nil, store.Task{}, err
		}
		if strings.TrimSpace(in.Text) == "" {
			return nil, store.Task{}, &store.FieldError{Field: "text", Expected: "a non-empty answer"}
		}
		t, err := tasks.Answer(ctx, in.TaskID, actorOf(ctx), in.Text)
		return nil, t, err
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:         ToolCancelTask,
		Title:        "Cancel task",
		Description:  "Cancel a task (terminal). Its executor loses the lease and its WAITING dependants become BLOCKED.",
		Annotations:  &mcp.ToolAnnotations{DestructiveHint: new(true)},
		OutputSchema: outputSchema[store.Task](),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in cancelInput) (*mcp.CallToolResult, store.Task, error) {
		if err := auth.Require(ctx, auth.PermCancel, auth.TaskResource(in.TaskID)); err != nil {
			return nil, store.Task{}, err
		}
		t, err := tasks.Cancel(ctx, in.TaskID, actorOf(ctx), in.Reason)
		return nil, t, err
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolStopTask,
		Title: "Stop task",
		Description: "Hold a task in STOPPED (ADR 0020): no agent claims it, no sweeper touches it and it burns no attempt until start_task releases it. " +
			"For a CLAIMED or RUNNING task the executor's lease is revoked and it is asked to abort; with wait (the default) the call waits up to " +
			"deadline_seconds (default 30) for the executor to confirm. abort.outcome is then abort_confirmed, or abort_unconfirmed when the " +
			"deadline passed first: the executor named in abort.executor may still be running. The task is STOPPED either way. " +
			"OPEN, WAITING, BLOCKED, NEEDS_INPUT, NEEDS_REVIEW and REVIEWING tasks are stopped directly (no abort). " +
			"A terminal or already STOPPED task is a tool error. Needs stop on /tasks/{task_id}, which does not grant start.",
		Annotations:  &mcp.ToolAnnotations{DestructiveHint: new(false), OpenWorldHint: new(false)},
		OutputSchema: outputSchema[ledger.StopResult](),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in stopInput) (*mcp.CallToolResult, ledger.StopResult, error) {
		if err := auth.Require(ctx, auth.PermStop, auth.TaskResource(in.TaskID)); err != nil {
			return nil, ledger.StopResult{}, err
		}
		if strings.TrimSpace(in.Reason) == "" {
			return nil, ledger.StopResult{}, &store.FieldError{Field: "reason", Expected: "a non-empty reason for the stop"}
		}
		d, err := deadline(in.DeadlineSeconds)
		if err != nil {
			return nil, ledger.StopResult{}, err
		}
		res, err := ctl.Stop(ctx, in.TaskID, actorOf(ctx), in.Reason, d, in.Wait == nil || *in.Wait)
		return nil, res, err
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolStartTask,
		Title: "Start task",
		Description: "Release a STOPPED task: it becomes OPEN, or WAITING when a dependency is not COMPLETED at this moment (BLOCKED when one " +
			"failed or was cancelled). restarts is incremented, attempts is not. The next agent enters it from the top, with the task as it " +
			"now stands; nothing an aborted attempt recorded counts as current. A task that is not STOPPED is a tool error. " +
			"Needs start on /tasks/{task_id}.",
		Annotations:  &mcp.ToolAnnotations{OpenWorldHint: new(false)},
		OutputSchema: outputSchema[store.Task](),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in startInput) (*mcp.CallToolResult, store.Task, error) {
		if err := auth.Require(ctx, auth.PermStart, auth.TaskResource(in.TaskID)); err != nil {
			return nil, store.Task{}, err
		}
		t, err := ctl.Start(ctx, in.TaskID, actorOf(ctx), in.Reason)
		return nil, t, err
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolUpdateTask,
		Title: "Update task",
		Description: "Edit a task as one operation. Material fields (description, acceptance_criteria, payload, add_depends_on, " +
			"remove_depends_on, add_children, cancel_children) bump revision; title, priority and metadata do not. A STOPPED, OPEN, WAITING " +
			"or BLOCKED task is edited in place (path in_place). A CLAIMED or RUNNING task is never edited under its executor: a material " +
			"edit stops it, applies the edit and starts it again below this call, so nobody observes the middle (path stop_apply_start; " +
			"abort says whether the old executor confirmed within deadline_seconds when wait is set); a non-material one applies live " +
			"(path live). NEEDS_INPUT, NEEDS_REVIEW and REVIEWING tasks take only non-material edits (stop them first); terminal tasks none. " +
			"A dependency that does not exist or would close a cycle is a tool error, and any error changes nothing. " +
			"Needs update on /tasks/{task_id}.",
		Annotations:  &mcp.ToolAnnotations{OpenWorldHint: new(false)},
		OutputSchema: outputSchema[store.UpdateResult](),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in updateInput) (*mcp.CallToolResult, store.UpdateResult, error) {
		if err := auth.Require(ctx, auth.PermUpdate, auth.TaskResource(in.TaskID)); err != nil {
			return nil, store.UpdateResult{}, err
		}
		d, err := deadline(in.DeadlineSeconds)
		if err != nil {
			return nil, store.UpdateResult{}, err
		}
		p, err := in.patch()
		if err != nil {
			return nil, store.UpdateResult{}, err
		}
		res, err := ctl.Update(ctx, in.TaskID, actorOf(ctx), p, d, in.Wait == nil || *in.Wait)
		return nil, res, err
	})
}

// outputSchema derives the output schema of T, with every "payload" and
// "metadata" property (json.RawMessage, which the inference would call a
// byte array) opened up to any JSON value and a JSON object respectively.
func outputSchema[T any]() *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: output schema: %v", err))
	}
	openPayload(s)
	return s
}

func openPayload(s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for name, p := range s.Properties {
		switch name {
		case "payload":
			s.Properties[name] = &jsonschema.Schema{Description: "the task's payload, any JSON value"}
			continue
		case "metadata":
			s.Properties[name] = &jsonschema.Schema{Type: "object", Description: "the task's metadata, a JSON object"}
			continue
		}
		openPayload(p)
	}
	openPayload(s.Items)
}
