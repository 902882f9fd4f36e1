package client

import (
	"context"

	"github.com/cks-dev/cks"
)

// ListSweepers returns the status of every sweeper of the hub.
func (c *Client) ListSweepers(ctx context.Context) ([]cks.SweeperStatus, error) {
	out, err := Do(ctx, c, cks.OpListAgents, struct{}{})
	return out.Sweepers, err
}

// SweeperStatus returns one sweeper's status.
func (c *Client) SweeperStatus(ctx context.Context, id string) (cks.SweeperStatus, error) {
	return Do(ctx, c, cks.OpAgentStatus, cks.SweeperInput{AgentID: id})
}

// StartSweeper records desired_running=true and starts the sweeper on the hub.
func (c *Client) StartSweeper(ctx context.Context, id string) (cks.SweeperStatus, error) {
	return Do(ctx, c, cks.OpStartAgent, cks.SweeperInput{AgentID: id})
}

// StopSweeper records desired_running=false and stops the sweeper on the hub.
func (c *Client) StopSweeper(ctx context.Context, id string) (cks.SweeperStatus, error) {
	return Do(ctx, c, cks.OpStopAgent, cks.SweeperInput{AgentID: id})
}
