package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
)

// The resources: what a model reads rather than calls. Each is read through
// an operation of the table (ops.Call), so its permission, its checks and
// its answer are that operation's: cks://tasks/{task_id} is get_task,
// cks://objects/{object_id} get_object, cks://objects/{object_id}/versions
// list_object_versions, and the two lists an operator watches —
// cks://inbox (the NEEDS_INPUT tasks, waiting for an answer) and
// cks://stopped (the STOPPED ones, held) — list_tasks of that state.
const (
	ResourceInbox          = "cks://inbox"
	ResourceStopped        = "cks://stopped"
	TemplateTask           = "cks://tasks/{task_id}"
	TemplateObject         = "cks://objects/{object_id}"
	TemplateObjectVersions = "cks://objects/{object_id}/versions"
	TemplateTaskOutput     = "cks://tasks/{task_id}/output"
)

// OutputResourcePage is how many chunks a read of cks://tasks/ID/output
// answers: the first of the task's output kept (get_output pages on).
const OutputResourcePage = 100

// resource is one resource or template: the operation that reads it and
// the arguments a URI gives it (nil: the URI is not one of its).
type resource struct {
	uri, name, title, description string
	template                      bool
	op                            string
	args                          func(uri string) map[string]any
}

// idAfter returns the args {field: N} of a URI prefix+N+suffix, N a
// positive integer.
func idAfter(prefix, suffix, field string) func(string) map[string]any {
	return func(uri string) map[string]any {
		rest, ok := strings.CutPrefix(uri, prefix)
		if !ok {
			return nil
		}
		if rest, ok = strings.CutSuffix(rest, suffix); !ok {
			return nil
		}
		n, err := strconv.ParseInt(rest, 10, 64)
		if err != nil || n <= 0 || strconv.FormatInt(n, 10) != rest {
			return nil
		}
		return map[string]any{field: n}
	}
}

func fixed(uri string, args map[string]any) func(string) map[string]any {
	return func(u string) map[string]any {
		if u != uri {
			return nil
		}
		return args
	}
}

var resources = []resource{
	{uri: ResourceInbox, name: "inbox", title: "Operator inbox", op: ToolListTasks,
		description: "the tasks waiting for a person's answer (NEEDS_INPUT), each with its question: answer one with answer_task",
		args:        fixed(ResourceInbox, map[string]any{"state": []string{string(cks.TaskNeedsInput)}, "limit": 100})},
	{uri: ResourceStopped, name: "stopped", title: "Stopped tasks", op: ToolListTasks,
		description: "the tasks an operator holds in STOPPED: release one with start_task, or cancel_task",
		args:        fixed(ResourceStopped, map[string]any{"state": []string{string(cks.TaskStopped)}, "limit": 100})},
	{uri: TemplateTask, name: "task", title: "Task", template: true, op: ToolGetTask,
		description: "one task with its events, evidence per attempt and aborts (get_task)",
		args:        idAfter("cks://tasks/", "", "task_id")},
	{uri: TemplateTaskOutput, name: "task_output", title: "Task output", template: true, op: ToolGetOutput,
		description: "the live output of a task's attempts: its first chunks kept with the task's state and live (get_output; " +
			"call get_output with after=next_after for the rest). Subscribed, it is updated as chunks are appended and when the " +
			"attempt ends",
		args: func(uri string) map[string]any {
			a := idAfter("cks://tasks/", "/output", "task_id")(uri)
			if a != nil {
				a["limit"] = OutputResourcePage
			}
			return a
		}},
	{uri: TemplateObjectVersions, name: "object_versions", title: "Object versions", template: true, op: ToolListObjectVersions,
		description: "an object's version DAG {versions, heads, forked} (list_object_versions)",
		args:        idAfter("cks://objects/", "/versions", "object_id")},
	{uri: TemplateObject, name: "object", title: "Knowledge object", template: true, op: ToolGetObject,
		description: "a knowledge object with its transition log, edges, heads and linked reasoning (get_object)",
		args:        idAfter("cks://objects/", "", "object_id")},
}

// addResources adds to srv every resource whose operation svc offers.
func addResources(srv *mcp.Server, svc *ops.Services) {
	byName := map[string]ops.Operation{}
	for _, op := range ops.Available(ops.All(), ops.MCP, svc) {
		byName[op.Spec().Name] = op
	}
	for _, r := range resources {
		op, ok := byName[r.op]
		if !ok {
			continue
		}
		h := readHandler(r, op, svc)
		if r.template {
			srv.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: r.uri, Name: r.name, Title: r.title,
				Description: r.description, MIMEType: "application/json"}, h)
			continue
		}
		srv.AddResource(&mcp.Resource{URI: r.uri, Name: r.name, Title: r.title, Description: r.description,
			MIMEType: "application/json"}, h)
	}
}

// readHandler reads r through op: the answer is the operation's JSON.
func readHandler(r resource, op ops.Operation, svc *ops.Services) mcp.ResourceHandler {
	return func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		uri := req.Params.URI
		args := r.args(uri)
		if args == nil {
			return nil, mcp.ResourceNotFoundError(uri)
		}
		b, err := json.Marshal(args)
		if err != nil {
			return nil, err
		}
		out, err := ops.Call(ctx, svc, op, ops.Request{Args: b})
		if err != nil {
			f := ops.FailureOf(ctx, svc.Logger, "mcp resource "+r.name, err)
			if f.Code == cks.CodeNotFound {
				return nil, mcp.ResourceNotFoundError(uri)
			}
			return nil, errors.New(f.Message)
		}
		text, err := json.Marshal(out)
		if err != nil {
			return nil, fmt.Errorf("mcp resource %s: %w", r.name, err)
		}
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "application/json", Text: string(text)}}}, nil
	}
}

// The prompts: a model's first message for a job cks has tools for.
const (
	PromptWorkNextTask = "work_next_task"
	PromptAnswerInbox  = "answer_inbox"
)

// addPrompts adds the prompts whose tools svc offers.
func addPrompts(srv *mcp.Server, svc *ops.Services) {
	offered := map[string]bool{}
	for _, op := range ops.Available(ops.All(), ops.MCP, svc) {
		offered[op.Spec().Name] = true
	}
	if offered[ToolClaimTasks] {
		srv.AddPrompt(&mcp.Prompt{Name: PromptWorkNextTask, Title: "Work the next task of a type",
			Description: "claim the next OPEN task of a type and work it by the worker protocol, to completion",
			Arguments:   []*mcp.PromptArgument{{Name: "type", Description: "the task type to claim", Required: true}}},
			func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				typ := strings.TrimSpace(req.Params.Arguments["type"])
				if typ == "" {
					// Invalid params (-32602), as the protocol has it for a
					// missing required argument.
					return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams,
						Message: "invalid params: argument \"type\" is required: the task type to claim"}
				}
				return promptText("Work the next task of type "+typ,
					fmt.Sprintf("Claim the next OPEN task of type %q with claim_tasks {\"types\": %q, \"n\": 1, \"lease_s\": 300} "+
						"and work it to the end. %s If claim_tasks returns no task, say so and stop.", typ, typ, ops.WorkerProtocol)), nil
			})
	}
	if offered[ToolAnswerTask] && offered[ToolListTasks] {
		srv.AddPrompt(&mcp.Prompt{Name: PromptAnswerInbox, Title: "Go through the operator inbox",
			Description: "read the tasks waiting for an answer (cks://inbox) and help answer each"},
			func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return promptText("Go through the operator inbox",
					"Read the resource "+ResourceInbox+" (or list_tasks {\"state\": \"NEEDS_INPUT\"}): each task there waits for "+
						"a person's answer to its question. For each, show me its title and question with what get_task tells "+
						"about it, ask me for the answer, and send mine with answer_task {\"task_id\", \"answer\"}. "+
						"Never invent an answer."), nil
			})
	}
}

func promptText(description, text string) *mcp.GetPromptResult {
	return &mcp.GetPromptResult{Description: description,
		Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: text}}}}
}
