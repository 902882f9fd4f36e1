// Package mcpserver exposes cks over the Model Context Protocol (official Go
// SDK): over the streamable HTTP transport (mounted by the hub at /mcp behind
// its bearer auth), and over stdio (the `cks mcp` command) as a Proxy of a
// hub's /mcp — or, with --embedded, served from the database itself
// (ServeStdio).
//
// Its tools are the MCP operations of the table (package ops), registered by
// one adapter: a tool's name, description, input and output schemas and
// annotations are the operation's, the caller is authorized through
// auth.Require on the operation's resource before anything else (ops.Call),
// its arguments are then decoded by the same decoder as an HTTP body
// (unknown fields refused, a wrong type named), and
// a failure is a tool error whose text is the message the HTTP API answers
// for the same input. The process tools keep the names of the seeds
// (ADR-014 §4, ADR-016): list_processes, process_status,
// request_process_stop; the sweeper tools those of ADR-015: list_agents,
// agent_status, start_agent, stop_agent.
package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks/internal/base/clock"
	"github.com/cks-dev/cks/internal/config"
	"github.com/cks-dev/cks/internal/ops"
	"github.com/cks-dev/cks/internal/service/auth"
)

// Tool names: the names of the table's MCP operations.
const (
	ToolListProcesses      = "list_processes"
	ToolProcessStatus      = "process_status"
	ToolRequestProcessStop = "request_process_stop"
	ToolReportProcess      = "report_process"
	ToolListTasks          = "list_tasks"
	ToolGetTask            = "get_task"
	ToolCreateTask         = "create_task"
	ToolAnswerTask         = "answer_task"
	ToolCancelTask         = "cancel_task"
	ToolStopTask           = "stop_task"
	ToolStartTask          = "start_task"
	ToolUpdateTask         = "update_task"
	ToolListAgents         = "list_agents"
	ToolAgentStatus        = "agent_status"
	ToolStartAgent         = "start_agent"
	ToolStopAgent          = "stop_agent"
	ToolPauseType          = "pause_type"
	ToolResumeType         = "resume_type"
	ToolListPausedTypes    = "list_paused_types"
	// The concurrency limits' tools (issue 42).
	ToolSetLimit    = "set_limit"
	ToolListLimits  = "list_limits"
	ToolDeleteLimit = "delete_limit"
	// What agents reported spending (issue 43).
	ToolGetUsage = "get_usage"
	// The schedules' tools (issue 42).
	ToolCreateSchedule  = "create_schedule"
	ToolListSchedules   = "list_schedules"
	ToolGetSchedule     = "get_schedule"
	ToolPauseSchedule   = "pause_schedule"
	ToolResumeSchedule  = "resume_schedule"
	ToolTriggerSchedule = "trigger_schedule"
	ToolDeleteSchedule  = "delete_schedule"
	ToolSubmitResearch  = "submit_research"
	ToolGetObject       = "get_object"
	// The worker's tools (the executor and review operations).
	ToolClaimTasks     = "claim_tasks"
	ToolMarkRunning    = "mark_running"
	ToolTouchTask      = "touch_task"
	ToolAddEvidence    = "add_evidence"
	ToolAppendOutput   = "append_output"
	ToolGetOutput      = "get_output"
	ToolRecordDecision = "record_decision"
	ToolReuseWorkspace = "reuse_workspace"
	ToolReportUsage    = "report_usage"
	ToolConfirmAbort   = "confirm_abort"
	ToolCompleteTask   = "complete_task"
	ToolFailTask       = "fail_task"
	ToolRequestInput   = "request_input"
	ToolClaimReview    = "claim_review"
	ToolApproveReview  = "approve_review"
	ToolRejectReview   = "reject_review"
	// The knowledge store's other tools.
	ToolListObjects        = "list_objects"
	ToolListObjectVersions = "list_object_versions"
	ToolWriteObjectVersion = "write_object_version"
)

// Instructions are what the server tells a client at initialization: what
// cks is, which tools do what, and the worker protocol in order.
const Instructions = "cks is a control plane for fleets of AI agents: a task ledger (tasks with states, leases and " +
	"revisions), a knowledge store (research questions, claims, syntheses, versioned objects) and the processes and " +
	"sweepers that work them. Operators list, create, stop, start, update, answer and cancel tasks (list_tasks, " +
	"get_task, create_task, …); workers lease and work them. " + ops.WorkerProtocol +
	" The knowledge store: submit_research, then get_object until the question is resolved or needs_input; " +
	"list_objects, list_object_versions and write_object_version (a write from a base that is no longer a head forks the object). " +
	"Schedules create a task from a template at each slot of a cron expression: create_schedule, list_schedules (with " +
	"each one's next five fire times), get_schedule, pause_schedule, resume_schedule, trigger_schedule, delete_schedule. " +
	"Every refusal is a tool error in the words of the HTTP API."

// ServerOptions tune a server NewServerWith makes.
type ServerOptions struct {
	// ProgressEvery is the interval of the notifications/progress a call
	// that waits (an abort confirmation) sends while it waits, when its
	// request carries a progressToken (0: DefaultProgressEvery).
	ProgressEvery time.Duration
	// SubscriptionPass is the least time between two passes over every
	// subscribed resource of one kind (0: DefaultSubscriptionPass).
	SubscriptionPass time.Duration
}

// DefaultProgressEvery is ServerOptions.ProgressEvery's default: well
// under the 60 s a client's request times out after by default
// (CKS_MCP_PROGRESS_INTERVAL's default).
const DefaultProgressEvery = config.DefaultMCPProgressInterval

// serverState is what NewServerWith knows of a server that its HTTP
// endpoint needs (NewHTTP): its services (their principals' revocations)
// and its subscriptions (which lengthen a session's idle timeout).
type serverState struct {
	svc  *ops.Services
	subs *subscriptions
}

// states holds the serverState of each server NewServerWith made.
var states sync.Map // *mcp.Server → *serverState

// stateOf returns srv's serverState, nil for a server NewServerWith did not
// make.
func stateOf(srv *mcp.Server) *serverState {
	st, _ := states.Load(srv)
	s, _ := st.(*serverState)
	return s
}

// NewServer returns an MCP server named "cks" at version serving every MCP
// operation the services svc offer (NewServerWith with default options).
func NewServer(version string, svc *ops.Services) *mcp.Server {
	return NewServerWith(version, svc, ServerOptions{})
}

// NewServerWith returns an MCP server named "cks" at version serving every
// MCP operation the services svc offer.
//
// With an event bus (svc.Bus: a hub's, fed by its one change listener) it
// offers resource subscriptions (subscribe.go) and declares the capability;
// without one (--embedded over stdio) it declares neither. Its tools/list
// answers the tools the caller's grants let it call (listTools).
func NewServerWith(version string, svc *ops.Services, o ServerOptions) *mcp.Server {
	if o.ProgressEvery <= 0 {
		o.ProgressEvery = DefaultProgressEvery
	}
	opts := &mcp.ServerOptions{
		// No logging capability: the server sends no log messages. The tools
		// capability is inferred from the tools added.
		Capabilities: &mcp.ServerCapabilities{},
		Instructions: Instructions,
	}
	var subs *subscriptions
	if svc.Bus != nil {
		subs = newSubscriptions(svc, o.SubscriptionPass)
		opts.SubscribeHandler, opts.UnsubscribeHandler = subs.subscribe, subs.unsubscribe
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "cks", Title: "cks", Version: version}, opts)
	if subs != nil {
		subs.srv = srv
	}
	register(srv, svc, o)
	srv.AddReceivingMiddleware(listTools(svc))
	states.Store(srv, &serverState{svc: svc, subs: subs})
	return srv
}

// Register adds to srv a tool for every MCP operation svc offers, and the
// resources and prompts of those operations (resources.go).
func Register(srv *mcp.Server, svc *ops.Services) {
	register(srv, svc, ServerOptions{ProgressEvery: DefaultProgressEvery})
}

func register(srv *mcp.Server, svc *ops.Services, o ServerOptions) {
	defer addPrompts(srv, svc)
	defer addResources(srv, svc)
	for _, op := range ops.Available(ops.All(), ops.MCP, svc) {
		sp := op.Spec()
		srv.AddTool(&mcp.Tool{
			Name:         sp.Name,
			Title:        sp.Title,
			Description:  sp.Description,
			InputSchema:  op.InputSchema(),
			OutputSchema: op.ToolOutputSchema(), // each record once, under $defs
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: sp.Hints.ReadOnly, IdempotentHint: sp.Hints.Idempotent,
				DestructiveHint: sp.Hints.Destructive, OpenWorldHint: sp.Hints.OpenWorld},
		}, handler(op, svc, o.ProgressEvery))
	}
}

// handler is the MCP adapter of an operation. A call that waits (op.Wait:
// a stop or update awaiting an abort confirmation) sends
// notifications/progress every progressEvery while it waits, when the
// request carries a progressToken, so a client's request timeout that
// resets on progress does not fire while the hub is still waiting.
func handler(op ops.Operation, svc *ops.Services, progressEvery time.Duration) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		stop := func() {}
		ready := func(in any) {
			if d := op.Wait(in); d > 0 {
				stop = progress(ctx, svc, req, d, progressEvery)
			}
		}
		// ops.Call checks the caller's permission before it decodes the
		// arguments: a caller without it learns nothing of their rules.
		out, err := ops.Call(ctx, svc, op, ops.Request{Args: req.Params.Arguments, Ready: ready})
		stop()
		if err != nil {
			return toolError(ctx, svc, op, err), nil
		}
		// Compact, with <, > and & as they are: an answer about the size
		// of what was stored (the API answers alike).
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(out); err != nil {
			return nil, err
		}
		b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
		content := append([]mcp.Content{&mcp.TextContent{Text: string(b)}}, links(out)...)
		return &mcp.CallToolResult{StructuredContent: json.RawMessage(b), Content: content}, nil
	}
}

// progress sends notifications/progress for req every `every` until the
// returned stop is called, while a call waits up to wait; nothing without
// a progressToken. Progress counts the seconds waited, Total is wait.
func progress(ctx context.Context, svc *ops.Services, req *mcp.CallToolRequest, wait, every time.Duration) (stop func()) {
	tok := req.Params.GetProgressToken()
	if tok == nil || req.Session == nil {
		return func() {}
	}
	c := svc.Clock
	if c == nil {
		c = clock.System{}
	}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		t := c.NewTicker(every)
		defer t.Stop()
		for n := 1; ; n++ {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C():
			}
			waited := time.Duration(n) * every
			if waited > wait {
				continue // the wait is over: the answer comes next
			}
			err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok,
				Progress: waited.Seconds(), Total: wait.Seconds(),
				Message: fmt.Sprintf("waiting for the executor to confirm the abort: %s of at most %s", waited, wait)})
			if err != nil {
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}

// toolError is err as a tool error (IsError, not a JSON-RPC error): its text
// is the message the HTTP API answers (ops.FailureOf).
func toolError(ctx context.Context, svc *ops.Services, op ops.Operation, err error) *mcp.CallToolResult {
	f := ops.FailureOf(ctx, svc.Logger, "mcp "+op.Spec().Name, err)
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: f.Message}}}
}

// ToolAccess is a permission and the resource template it is needed on.
type ToolAccess struct {
	Permission string
	Resource   string
}

// Access returns the permission each tool needs and the resource it is
// checked on, from the table: {name} in a resource stands for the tool's
// argument of that name; create_task with a parent_id P needs create on
// /tasks/P instead of /tasks, as POST /v1/tasks does. A caller without it
// gets a tool error ("forbidden: … needs PERM on RESOURCE"), not an HTTP or
// JSON-RPC error.
func Access() map[string]ToolAccess {
	out := map[string]ToolAccess{}
	for _, op := range ops.All() {
		if sp := op.Spec(); sp.Surfaces&ops.MCP != 0 {
			out[sp.Name] = ToolAccess{Permission: sp.Permission, Resource: sp.Resource}
		}
	}
	return out
}

// ServeStdio serves srv to one client over stdin/stdout until ctx ends or the
// client disconnects, both of which return nil; a request read before the
// end of stdin is answered first. Nothing else may write to stdout
// meanwhile. The client is the local operator, who holds admin.
func ServeStdio(ctx context.Context, srv *mcp.Server) error {
	return serve(auth.WithLocalOperator(ctx), srv, newStdio())
}

// serve runs srv over t, treating the end of ctx as a normal shutdown.
func serve(ctx context.Context, srv *mcp.Server, t mcp.Transport) error {
	err := srv.Run(ctx, t)
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}
