package client

import (
	"context"

	"github.com/cks-dev/cks/ops"
	"github.com/cks-dev/cks/sweeper"
)

// ListSweepers returns the status of every sweeper of the hub.
func (c *Client) ListSweepers(ctx context.Context) ([]sweeper.Status, error) {
	out, err := Do(ctx, c, ops.ListAgents, struct{}{})
	return out.Sweepers, err
}

// SweeperStatus returns one sweeper's status.
func (c *Client) SweeperStatus(ctx context.Context, id string) (sweeper.Status, error) {
	return Do(ctx, c, ops.AgentStatus, ops.SweeperInput{AgentID: id})
}

// StartSweeper records desired_running=true and starts the sweeper on the hub.
func (c *Client) StartSweeper(ctx context.Context, id string) (sweeper.Status, error) {
	return Do(ctx, c, ops.StartAgent, ops.SweeperInput{AgentID: id})
}

// StopSweeper records desired_running=false and stops the sweeper on the hub.
func (c *Client) StopSweeper(ctx context.Context, id string) (sweeper.Status, error) {
	return Do(ctx, c, ops.StopAgent, ops.SweeperInput{AgentID: id})
}
