package ops

import (
	"context"

	"github.com/cks-dev/cks"
	"github.com/cks-dev/cks/internal/runtime/sweeper"
	"github.com/cks-dev/cks/internal/service/auth"
)

// The sweeper operations (ADR-015, cks-mcp ADR-009): the in-process
// sweepers of this hub, their status and their persistent start/stop.

const sweeperNote = " A sweeper is a background loop of the cks server itself (kind \"sweeper\") that keeps its state " +
	"in order on an interval: lease_reaper reopens tasks whose lease expired, dependency_release opens tasks whose " +
	"dependencies completed, stale_stop_report reports long-held stops, and the knowledge sweepers (fork_detection, " +
	"contradiction, inference_staleness, graph_health) enqueue tasks for the knowledge agents. They are not the " +
	"standalone agent processes that list_processes reports: to stop one of those, use request_process_stop. There is no separate pause or resume: stop then start is the same thing, " +
	"since each sweep pass is one bounded unit of work with nothing to resume. An unknown agent_id is a not_found " +
	"error naming the known ids."

const asymmetry = " Across nodes sharing one database both reach every node, asymmetrically (ADR-015, issue 26): a stop is " +
	"recorded and every other node's running loop stops itself when notified, or at its next tick at the latest; a start " +
	"is recorded, starts this node's loop and every other node's stopped loop when the change notification reaches it " +
	"(a node that misses it starts the loop when it restarts). The passes run on the maintenance leader only."

// ListAgents is list_agents.
var ListAgents = define(cks.OpListAgents, &Op[struct{}, cks.SweeperList]{
	spec: Spec{
		Title:   "List sweepers",
		Summary: "every sweeper with its status",
		Description: "List every sweeper with its status, under \"sweepers\": config_enabled, running, interval_s, last_run_at, " +
			"last_result_count, last_run_duration_ms, last_error, run_count, the stored override desired_running " +
			"(null when the config default applies) and recent_passes, the sweeper's last completed passes newest first " +
			"(at, duration_ms, count, error, hub, details; stored in the database, so they survive a restart and every hub " +
			"on it answers the maintenance leader's)." + sweeperNote,
		Permission: auth.PermRead, Resource: auth.ResourceSweepers,
		Surfaces: HTTP | MCP | CLI, Needs: NeedSweepers, Hints: readOnly,
	},
	call: func(ctx context.Context, s *Services, _ *struct{}) (cks.SweeperList, error) {
		sts, err := s.Sweepers.List(ctx)
		if sts == nil {
			sts = []cks.SweeperStatus{}
		}
		return cks.SweeperList{Sweepers: sts}, err
	},
})

// sweeperOp declares one of the per-sweeper operations, which differ only in
// their words, permission and call.
func sweeperOp(e cks.Endpoint[cks.SweeperInput, cks.SweeperStatus], sp Spec, call func(*sweeper.Controller, context.Context, string) (cks.SweeperStatus, error)) *Op[cks.SweeperInput, cks.SweeperStatus] {
	sp.Resource = auth.ResourceSweepers + "/{agent_id}"
	sp.Surfaces, sp.Needs = HTTP|MCP|CLI, NeedSweepers
	return define(e, &Op[cks.SweeperInput, cks.SweeperStatus]{
		spec: sp,
		call: func(ctx context.Context, s *Services, in *cks.SweeperInput) (cks.SweeperStatus, error) {
			return call(s.Sweepers, ctx, in.AgentID)
		},
	})
}

// AgentStatus is agent_status.
var AgentStatus = sweeperOp(cks.OpAgentStatus, Spec{
	Title:       "Sweeper status",
	Summary:     "the status of one sweeper",
	Description: "The status of one sweeper, in the shape of a list_agents row." + sweeperNote,
	Permission:  auth.PermRead, Hints: readOnly,
}, (*sweeper.Controller).Status)

// StartAgent is start_agent.
var StartAgent = sweeperOp(cks.OpStartAgent, Spec{
	Title:   "Start sweeper",
	Summary: "start a sweeper (persistent)",
	Description: "Start a sweeper: records desired_running=true (persisting across restarts) and starts it in this " +
		"process. A sweeper disabled by configuration cannot be started (disabled_by_config)." + asymmetry + sweeperNote,
	Permission: auth.PermControl, Hints: Hints{Idempotent: true, Destructive: new(false), OpenWorld: new(false)},
}, (*sweeper.Controller).Start)

// StopAgent is stop_agent.
var StopAgent = sweeperOp(cks.OpStopAgent, Spec{
	Title:   "Stop sweeper",
	Summary: "stop a sweeper (persistent)",
	Description: "Stop a sweeper: records desired_running=false (persisting across restarts) and stops it in this " +
		"process, waiting for its loop to exit." + asymmetry + sweeperNote,
	Permission: auth.PermControl, Hints: Hints{Idempotent: true, Destructive: new(false), OpenWorld: new(false)},
}, (*sweeper.Controller).Stop)
