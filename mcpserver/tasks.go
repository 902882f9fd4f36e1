package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
)

// mcpActor is recorded as the actor of changes made through MCP tools.
const mcpActor = "mcp"

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

// createdTask is the result of create_task.
type createdTask struct {
	Task    store.Task `json:"task"`
	Created bool       `json:"created"`
}

// AddTaskTools registers the task ledger tools on srv: list_tasks, get_task,
// create_task, answer_task and cancel_task. Bad input and illegal transitions
// come back as tool errors whose text says what was wrong.
func AddTaskTools(srv *mcp.Server, tasks store.Tasks) {
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
			"With a dedupe_key that a live task already has, that task is returned with created=false instead.",
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
		t, created, err := tasks.Enqueue(ctx, store.NewTask{
			Type: in.Type, Title: in.Title, Description: in.Description, AcceptanceCriteria: in.AcceptanceCriteria,
			Payload: payload, Priority: in.Priority, MaxAttempts: in.MaxAttempts, ParentID: in.ParentID,
			DependsOn: in.DependsOn, DedupeKey: in.DedupeKey, CreatedBy: mcpActor,
		})
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
		t, err := tasks.Answer(ctx, in.TaskID, mcpActor, in.Text)
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
		t, err := tasks.Cancel(ctx, in.TaskID, mcpActor, in.Reason)
		return nil, t, err
	})
}

// outputSchema derives the output schema of T, with every "payload" property
// (a json.RawMessage, which the inference would call a byte array) opened up
// to any JSON value.
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
		if name == "payload" {
			s.Properties[name] = &jsonschema.Schema{Description: "the task's payload, any JSON value"}
			continue
		}
		openPayload(p)
	}
	openPayload(s.Items)
}
