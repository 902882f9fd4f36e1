package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/cks-dev/cks/auth"
	"github.com/cks-dev/cks/sweeper"
)

// Sweeper tool names, exactly as the seeds (ADR-015, cks-mcp ADR-009) spell them.
const (
	ToolListAgents  = "list_agents"
	ToolAgentStatus = "agent_status"
	ToolStartAgent  = "start_agent"
	ToolStopAgent   = "stop_agent"
)

// AgentList is the structured result of list_agents.
type AgentList struct {
	Agents []sweeper.Status `json:"agents"`
}

type agentIDInput struct {
	AgentID string `json:"agent_id" jsonschema:"the sweeper id, e.g. lease_reaper; list_agents lists them"`
}

const sweeperNote = " These are the in-process sweepers of this cks server (kind \"sweeper\"), not the standalone agent " +
	"processes that list_processes reports. There is no separate pause or resume: stop then start is the same thing, " +
	"since each sweep pass is one bounded unit of work with nothing to resume."

const asymmetry = " Across nodes sharing one database the effect is asymmetric (ADR-015): a stop is recorded and every " +
	"other node's running loop stops itself at its next tick (sooner when notified); a start is recorded and starts " +
	"this node's loop only — another node picks it up when it restarts or when its own start_agent is called."

// AddSweeperTools registers list_agents, agent_status, start_agent and
// stop_agent over ctl. An unknown agent_id is a tool error naming the known
// ids; a sweeper disabled by configuration cannot be started or stopped.
func AddSweeperTools(srv *mcp.Server, ctl *sweeper.Controller) {
	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolListAgents,
		Title: "List sweepers",
		Description: "List every sweeper with its status: config_enabled, running, interval_s, last_run_at, " +
			"last_result_count, last_run_duration_ms, last_error, run_count and the stored override desired_running " +
			"(null when the config default applies)." + sweeperNote,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, AgentList, error) {
		if err := auth.Require(ctx, auth.PermRead, auth.ResourceSweepers); err != nil {
			return nil, AgentList{}, err
		}
		sts, err := ctl.List(ctx)
		if sts == nil {
			sts = []sweeper.Status{}
		}
		return nil, AgentList{Agents: sts}, err
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:        ToolAgentStatus,
		Title:       "Sweeper status",
		Description: "The status of one sweeper, in the shape of a list_agents row." + sweeperNote,
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in agentIDInput) (*mcp.CallToolResult, sweeper.Status, error) {
		if err := requireOn(ctx, auth.PermRead, auth.ResourceSweepers, in.AgentID); err != nil {
			return nil, sweeper.Status{}, err
		}
		st, err := ctl.Status(ctx, in.AgentID)
		return nil, st, err
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolStartAgent,
		Title: "Start sweeper",
		Description: "Start a sweeper: records desired_running=true (persisting across restarts) and starts it in this " +
			"process. A sweeper disabled by configuration cannot be started." + asymmetry + sweeperNote,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in agentIDInput) (*mcp.CallToolResult, sweeper.Status, error) {
		if err := requireOn(ctx, auth.PermControl, auth.ResourceSweepers, in.AgentID); err != nil {
			return nil, sweeper.Status{}, err
		}
		st, err := ctl.Start(ctx, in.AgentID)
		return nil, st, err
	})
	mcp.AddTool(srv, &mcp.Tool{
		Name:  ToolStopAgent,
		Title: "Stop sweeper",
		Description: "Stop a sweeper: records desired_running=false (persisting across restarts) and stops it in this " +
			"process, waiting for its loop to exit." + asymmetry + sweeperNote,
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: new(false)},
	}, func(ctx context.Context, _ *mcp.CallToolRequest, in agentIDInput) (*mcp.CallToolResult, sweeper.Status, error) {
		if err := requireOn(ctx, auth.PermControl, auth.ResourceSweepers, in.AgentID); err != nil {
			return nil, sweeper.Status{}, err
		}
		st, err := ctl.Stop(ctx, in.AgentID)
		return nil, st, err
	})
}
