// Package mcpserver exposes cks over the Model Context Protocol (official Go
// SDK). It serves the process-liveness tools of ADR-014 §4, list_processes and
// process_status, and the graceful process stop of ADR-016,
// request_process_stop, over stdio (the `cks mcp` command) and over the
// streamable HTTP transport (mounted by the hub at /mcp behind its bearer auth).
//
// The tools read through liveness.Service, so their status rule and row shape
// are the same ones the HTTP API, the studio and the metrics use.
package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/liveness"
)

// Tool names, exactly as the seed (ADR-014 §4) spells them.
const (
	// ToolListProcesses lists every liveness row with its computed status.
	ToolListProcesses = "list_processes"
	// ToolProcessStatus reports the newest-started instance of one process kind.
	ToolProcessStatus = "process_status"
	// ToolRequestProcessStop asks the current alive instance of a kind to
	// finish its current task and exit (ADR-016, cks-mcp ADR-010).
	ToolRequestProcessStop = "request_process_stop"
)

// ProcessList is the structured result of list_processes. The SDK requires
// structured tool output to be a JSON object, so the rows are wrapped.
type ProcessList struct {
	Processes []liveness.Process `json:"processes"`
}

// processStatusInput is the argument object of process_status and
// request_process_stop.
type processStatusInput struct {
	ProcessKind string `json:"process_kind" jsonschema:"the kind of standalone agent process to report on, for example critic or pipeline; the tool description lists the known kinds"`
}

// ttlRule is the liveness rule as the tool descriptions state it.
var ttlRule = fmt.Sprintf(`status is computed when read: "alive" iff now - last_heartbeat_at <= %d × liveness_interval_s, otherwise "stopped"`, liveness.TTLFactor)

// New returns an MCP server named "cks" at version that serves the
// list_processes, process_status and request_process_stop tools from svc.
func New(svc *liveness.Service, version string) *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "cks", Title: "cks", Version: version}, &mcp.ServerOptions{
		// No logging capability: the server sends no log messages. The tools
		// capability is inferred from the tools added below.
		Capabilities: &mcp.ServerCapabilities{},
	})
	kinds := strings.Join(liveness.KnownKinds(), ", ")
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: new(false)}

	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolListProcesses,
		Title: "List agent processes",
		Description: "List every standalone cks agent process instance that has ever reported a liveness heartbeat " +
			"(one row per OS process instance; a restarted process gets a new row and old rows stay as history), " +
			"newest-started first, under \"processes\". " + ttlRule + ". " +
			"Each row has instance_id, process_kind (" + kinds + "), hostname, pid, liveness_interval_s, started_at, " +
			"last_heartbeat_at, heartbeat_age_s and the best-effort current_task_id/current_task_type. " +
			"Use process_status for the current state of one kind. These are OS processes, not the in-process " +
			"sweepers that list_agents reports.",
		Annotations:  readOnly,
		OutputSchema: listSchema(),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, ProcessList, error) {
		if err := auth.Require(ctx, auth.PermRead, auth.ResourceProcesses); err != nil {
			return nil, ProcessList{}, err
		}
		ps, err := svc.ListProcesses(ctx)
		if err != nil {
			return nil, ProcessList{}, fmt.Errorf("list processes: %w", err)
		}
		return nil, ProcessList{Processes: ps}, nil
	})

	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolProcessStatus,
		Title: "Process status",
		Description: "Report whether a kind of standalone cks agent process is running: the most recently started " +
			"instance of process_kind, in the same row shape as list_processes. " + ttlRule +
			"; \"not_found\" (a normal answer, not an error) means no instance of that kind has ever reported. " +
			"Known kinds: " + kinds + ". Any other kind is a tool error.",
		Annotations:  readOnly,
		OutputSchema: processSchema(liveness.Alive, liveness.Stopped, liveness.NotFound),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in processStatusInput) (*mcp.CallToolResult, liveness.Process, error) {
		if err := requireOn(ctx, auth.PermRead, auth.ResourceProcesses, in.ProcessKind); err != nil {
			return nil, liveness.Process{}, err
		}
		p, err := svc.ProcessStatus(ctx, in.ProcessKind)
		if err != nil {
			// The SDK turns a returned error into an IsError result whose text
			// is err.Error(); an UnknownKindError already names the known kinds.
			if _, unknown := errors.AsType[*liveness.UnknownKindError](err); unknown {
				return nil, liveness.Process{}, err
			}
			return nil, liveness.Process{}, fmt.Errorf("process status of %q: %w", in.ProcessKind, err)
		}
		return nil, p, nil
	})

	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolRequestProcessStop,
		Title: "Request process stop",
		Description: "Ask a standalone cks agent process to stop gracefully: the current alive instance of process_kind " +
			"(the most recently started one, as process_status reports it) is asked to finish its current task, if any, " +
			"claim nothing more, and exit. The request is recorded on the instance's liveness row (desired_state " +
			"\"stop_requested\") and the process sees it within one liveness interval, usually much sooner; the tool " +
			"returns at once and does not wait for the exit. Once the process exits it reads \"stopped\" in " +
			"list_processes and process_status. Returns {\"found\": true, \"instance_id\", \"process_kind\"} for the " +
			"instance asked, or {\"found\": false} (a normal answer, not an error) when the kind has no alive instance: " +
			"never started, or its newest instance already stopped. There is no start: cks cannot launch an agent " +
			"process; restarting one is up to whatever launched it (systemd, a container orchestrator, a shell). " +
			"There is no pause or resume either; a stop is the graceful drain. Known kinds: " + kinds +
			". Any other kind is a tool error.",
		Annotations:  &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false), OpenWorldHint: new(false)},
		OutputSchema: stopSchema(),
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in processStatusInput) (*mcp.CallToolResult, liveness.StopResult, error) {
		if err := requireOn(ctx, auth.PermControl, auth.ResourceProcesses, in.ProcessKind); err != nil {
			return nil, liveness.StopResult{}, err
		}
		// Only kinds: the permission is checked on /processes/{process_kind}.
		if !slices.Contains(liveness.KnownKinds(), in.ProcessKind) {
			return nil, liveness.StopResult{}, &liveness.UnknownKindError{Kind: in.ProcessKind}
		}
		res, err := svc.RequestStop(ctx, in.ProcessKind)
		if err != nil {
			return nil, liveness.StopResult{}, fmt.Errorf("request stop of %q: %w", in.ProcessKind, err)
		}
		return nil, res, nil
	})
	return srv
}

// stopSchema returns the output schema of request_process_stop.
func stopSchema() *jsonschema.Schema {
	s, err := jsonschema.For[liveness.StopResult](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: stop result schema: %v", err))
	}
	for name, doc := range map[string]string{
		"found":        "true when an alive instance was asked to stop; false (not an error) when the kind has no alive instance",
		"instance_id":  "the instance asked to stop (with found false: the kind's newest, already stopped, instance; absent when none ever reported)",
		"process_kind": "the kind of that instance",
	} {
		p, ok := s.Properties[name]
		if !ok {
			panic(fmt.Sprintf("mcpserver: liveness.StopResult has no JSON field %q", name))
		}
		p.Description = doc
	}
	return s
}

// processFieldDocs describes each property of a liveness.Process for clients.
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

// processSchema returns the output schema of one process row, derived from
// liveness.Process, with descriptions and status limited to statuses.
func processSchema(statuses ...liveness.Status) *jsonschema.Schema {
	s, err := jsonschema.For[liveness.Process](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: process schema: %v", err))
	}
	for name, doc := range processFieldDocs {
		p, ok := s.Properties[name]
		if !ok {
			panic(fmt.Sprintf("mcpserver: liveness.Process has no JSON field %q", name))
		}
		p.Description = doc
	}
	status := s.Properties["status"]
	for _, st := range statuses {
		status.Enum = append(status.Enum, string(st))
		if st == liveness.NotFound {
			status.Description += `; "not_found" when no instance of the kind has ever reported`
		}
	}
	return s
}

// listSchema returns the output schema of list_processes.
func listSchema() *jsonschema.Schema {
	s, err := jsonschema.For[ProcessList](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: process list schema: %v", err))
	}
	s.Properties["processes"].Description = "every instance that ever reported, newest-started first"
	s.Properties["processes"].Items = processSchema(liveness.Alive, liveness.Stopped)
	return s
}

// ServeStdio serves srv to one client over stdin/stdout until ctx ends or the
// client disconnects, both of which return nil. Nothing else may write to
// stdout meanwhile. The client is the local operator, who holds admin.
func ServeStdio(ctx context.Context, srv *mcp.Server) error {
	return serve(auth.WithLocalOperator(ctx), srv, &mcp.StdioTransport{})
}

// serve runs srv over t, treating the end of ctx as a normal shutdown.
func serve(ctx context.Context, srv *mcp.Server, t mcp.Transport) error {
	err := srv.Run(ctx, t)
	if ctx.Err() != nil && errors.Is(err, ctx.Err()) {
		return nil
	}
	return err
}

// HTTPHandler returns an http.Handler serving srv over the streamable HTTP
// transport. It runs stateless: every request is served on its own, so no
// session outlives its request and both the session-less (2026-07-28) and the
// initialize-handshake protocol versions work. It does no authentication; the
// caller mounts it behind its own, which must put the principal in the request
// context (auth.WithPrincipal): every tool checks its permission against it
// and refuses, as a tool error, when there is none.
func HTTPHandler(srv *mcp.Server) http.Handler {
	return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{
		Stateless: true,
	})
}

// Access is the permission each tool needs and the resource it is checked
// on. {name} in a resource stands for the tool's argument of that name;
// create_task with a parent_id P needs create on /tasks/P instead of /tasks,
// as POST /v1/tasks does. A caller without it gets a tool error (IsError,
// text "forbidden: … needs PERM on RESOURCE"), not an HTTP or JSON-RPC error.
var Access = map[string]ToolAccess{
	ToolListProcesses:      {auth.PermRead, auth.ResourceProcesses},
	ToolProcessStatus:      {auth.PermRead, auth.ResourceProcesses + "/{process_kind}"},
	ToolRequestProcessStop: {auth.PermControl, auth.ResourceProcesses + "/{process_kind}"},
	ToolListAgents:         {auth.PermRead, auth.ResourceSweepers},
	ToolAgentStatus:        {auth.PermRead, auth.ResourceSweepers + "/{agent_id}"},
	ToolStartAgent:         {auth.PermControl, auth.ResourceSweepers + "/{agent_id}"},
	ToolStopAgent:          {auth.PermControl, auth.ResourceSweepers + "/{agent_id}"},
	ToolListTasks:          {auth.PermRead, auth.ResourceTasks},
	ToolGetTask:            {auth.PermRead, auth.ResourceTasks + "/{task_id}"},
	ToolCreateTask:         {auth.PermCreate, auth.ResourceTasks},
	ToolAnswerTask:         {auth.PermUpdate, auth.ResourceTasks + "/{task_id}"},
	ToolCancelTask:         {auth.PermCancel, auth.ResourceTasks + "/{task_id}"},
	ToolStopTask:           {auth.PermStop, auth.ResourceTasks + "/{task_id}"},
	ToolStartTask:          {auth.PermStart, auth.ResourceTasks + "/{task_id}"},
	ToolUpdateTask:         {auth.PermUpdate, auth.ResourceTasks + "/{task_id}"},
	ToolSubmitResearch:     {auth.PermCreate, auth.ResourceObjects},
	ToolGetObject:          {auth.PermRead, auth.ResourceObjects + "/{object_id}"},
}

// ToolAccess is a permission and the resource template it is needed on.
type ToolAccess struct {
	Permission string
	Resource   string
}

// requireOn checks perm on root/id. An id that is empty or holds a "/" would
// name another node of the tree, so it is refused as bad input.
func requireOn(ctx context.Context, perm, root, id string) error {
	if id == "" || strings.Contains(id, "/") {
		return fmt.Errorf("expected a single id segment under %s, got %q", root, id)
	}
	return auth.Require(ctx, perm, root+"/"+id)
}
