package mcpserver

import (
	"context"
	"fmt"
	"maps"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
)

// What tools/list answers: the tools the caller's grants let it call
// (ops.Offered: a worker token that may append to tasks is listed the
// worker's tools, not the operator's), so a model is not handed — and
// does not pay the context for — tools every call of which is refused. A
// client that wants every tool, callable or not, opens its session (or
// sends its session-less requests) with ?tools=all on the endpoint URL
// (/mcp?tools=all; `cks mcp --all-tools`): each tool the caller may not
// call is then marked so in its _meta (CallableMeta: false). A tool left
// out of the list can still be called: it answers the refusal it always
// did.

// ListAllQuery is the query parameter, and value, of the endpoint URL
// that lists every tool: /mcp?tools=all.
const (
	ListAllQuery = "tools"
	ListAllValue = "all"
)

// CallableMeta is the _meta key of a tool listed with ?tools=all that the
// caller may not call (its value false).
const CallableMeta = "cks-dev/callable"

type allToolsKey struct{}

// withAllTools marks ctx as listing every tool when r asked to.
func withAllTools(r *http.Request) *http.Request {
	if r.URL.Query().Get(ListAllQuery) != ListAllValue {
		return r
	}
	return r.WithContext(context.WithValue(r.Context(), allToolsKey{}, true))
}

// listTools is the receiving middleware that answers tools/list with the
// tools the caller may call — or, when its context asks for all, every tool,
// those it may not call marked so.
func listTools(svc *ops.Services) mcp.Middleware {
	return toolsFilter(func(ctx context.Context) (func(*mcp.Tool) *mcp.Tool, error) {
		all, _ := ctx.Value(allToolsKey{}).(bool)
		pinned, err := auth.PinGrants(ctx)
		if err != nil {
			return nil, fmt.Errorf("listing the tools the caller may call: %w", err)
		}
		return func(t *mcp.Tool) *mcp.Tool {
			switch op, ok := ops.Lookup(t.Name); {
			case !ok || ops.Offered(pinned, op):
				return t
			case all:
				marked := *t
				marked.Meta = maps.Clone(t.Meta)
				if marked.Meta == nil {
					marked.Meta = mcp.Meta{}
				}
				marked.Meta[CallableMeta] = false
				return &marked
			}
			return nil
		}, nil
	})
}

// toolsFilter is a receiving middleware that answers tools/list with each
// tool as the function keep returns for the request's context makes it
// (nil: left out).
func toolsFilter(keep func(ctx context.Context) (func(*mcp.Tool) *mcp.Tool, error)) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			list, ok := res.(*mcp.ListToolsResult)
			if err != nil || !ok || method != "tools/list" {
				return res, err
			}
			f, err := keep(ctx)
			if err != nil {
				return nil, err
			}
			out := *list
			out.Tools = nil
			for _, t := range list.Tools {
				if kept := f(t); kept != nil {
					out.Tools = append(out.Tools, kept)
				}
			}
			return &out, nil
		}
	}
}

// links are the resource_link contents of a tool's answer out: the
// cks://tasks/ID of each task it names (the task acted on, the tasks
// claimed, a stopped or updated task and its new children, the task of an
// evidence, decision or abort), the cks://objects/ID of an object.
// Listings (list_tasks, bulk results) name none: their rows are the answer.
func links(out any) []mcp.Content {
	var tasks, objects []int64
	switch v := out.(type) {
	case cks.Task:
		tasks = append(tasks, v.ID)
	case cks.CreatedTask:
		tasks = append(tasks, v.Task.ID)
	case cks.TaskStopResult:
		tasks = append(tasks, v.Task.ID)
	case cks.UpdateResult:
		tasks = append(tasks, v.Task.ID)
		for _, c := range v.Children {
			tasks = append(tasks, c.ID)
		}
	case cks.ClaimedTasks:
		for _, c := range v.Tasks {
			tasks = append(tasks, c.ID)
		}
	case cks.ClaimedTask:
		tasks = append(tasks, v.ID)
	case cks.Evidence:
		tasks = append(tasks, v.TaskID)
	case cks.Decision:
		tasks = append(tasks, v.TaskID)
	case cks.Abort:
		tasks = append(tasks, v.TaskID)
	case cks.Object:
		objects = append(objects, v.ID)
	case cks.ObjectView:
		objects = append(objects, v.ID)
	case cks.Version:
		objects = append(objects, v.ObjectID)
	case cks.VersionList:
		objects = append(objects, v.ObjectID)
	}
	var c []mcp.Content
	for _, id := range tasks {
		if id > 0 {
			c = append(c, &mcp.ResourceLink{URI: fmt.Sprintf("cks://tasks/%d", id), Name: fmt.Sprintf("task %d", id),
				Description: "the task with its events, evidence and aborts (get_task)", MIMEType: "application/json"})
		}
	}
	for _, id := range objects {
		if id > 0 {
			c = append(c, &mcp.ResourceLink{URI: fmt.Sprintf("cks://objects/%d", id), Name: fmt.Sprintf("object %d", id),
				Description: "the knowledge object with its log, edges and heads (get_object)", MIMEType: "application/json"})
		}
	}
	return c
}

// callable reports whether a tool listed with ?tools=all is one the
// caller may call (not marked otherwise).
func callable(t *mcp.Tool) bool {
	v, marked := t.Meta[CallableMeta]
	return !marked || v != false
}

// listCallable is the proxy's receiving middleware that lists the tools the
// hub marked callable only.
var listCallable = toolsFilter(func(context.Context) (func(*mcp.Tool) *mcp.Tool, error) {
	return func(t *mcp.Tool) *mcp.Tool {
		if callable(t) {
			return t
		}
		return nil
	}, nil
})
